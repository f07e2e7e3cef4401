// wirepool: a connection-pooling proxy.
//   wirepool --config FILE          run
//   wirepool --check-config FILE    validate; exit 0, or 1 with file:line:column errors
//   wirepool --fingerprint CERT     sha256 of the certificate and of its public key
//   wirepool --version

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "backends/db.hpp"
#include "config/config.hpp"
#include "server/log.hpp"
#include "server/server.hpp"
#include "tls/tls.hpp"
#include "wirepool_version.hpp"

namespace {

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: wirepool --config FILE        run with this configuration\n"
               "       wirepool --check-config FILE  validate a configuration and exit\n"
               "       wirepool --fingerprint CERT   print a certificate's SHA-256 fingerprints\n"
               "       wirepool --version\n");
}

/// Driver-specific checks for config::load (unknown driver, bad options).
std::vector<std::pair<std::string, std::string>> validate_database(
    const wirepool::config::Database& d) {
  using namespace wirepool;
  const db::Driver* driver = db::find_driver(d.driver);
  if (!driver) {
    std::string names;
    for (auto n : db::driver_names())
      names += (names.empty() ? "" : ", ") + std::string(n);
    return {{"", "driver \"" + d.driver + "\" is not available in this build (available: " + names +
                     ")"}};
  }
  db::OpenOptions o;
  o.connection = d.connection;
  o.options = d.options;
  o.tls_ca = d.tls.ca;
  o.tls_pins = d.tls.pin_sha256;
  auto problems = driver->validate(o);
  if (!d.hosts.empty()) {
    for (const auto& h : server::conninfo_hosts(d.connection)) {
      if (!h.empty()) {
        problems.emplace_back(
            "", "connection names host " + h + ": with a hosts list, the list names the servers");
        break;
      }
    }
  }
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace wirepool;
  // A client that vanishes makes the next write fail with EPIPE, not kill the
  // process: OpenSSL's socket BIO writes with send() without MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  std::string config_path;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--version" || a == "-V") {
      std::printf("wirepool %s\n", kVersion);
      return 0;
    }
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--fingerprint" && i + 1 < argc) {
      return tls::print_fingerprints(argv[i + 1], stdout, stderr);
    }
    if ((a == "--config" || a == "--check-config") && i + 1 < argc) {
      check_only = a == "--check-config";
      config_path = argv[++i];
      continue;
    }
    if (a.rfind("--config=", 0) == 0) {
      config_path = std::string(a.substr(9));
      continue;
    }
    if (a.rfind("--check-config=", 0) == 0) {
      check_only = true;
      config_path = std::string(a.substr(15));
      continue;
    }
    std::fprintf(stderr, "wirepool: unknown argument %s\n", argv[i]);
    usage(stderr);
    return 2;
  }
  if (config_path.empty()) {
    usage(stderr);
    return 2;
  }

  config::Config cfg;
  try {
    cfg = config::load(config_path, &validate_database);
  } catch (const config::ConfigError& e) {
    for (const auto& p : e.problems())
      std::fprintf(stderr, "%s\n", p.to_string().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", config_path.c_str(), e.what());
    return 1;
  }
  if (check_only) {
    std::printf("%s: ok\n", config_path.c_str());
    return 0;
  }

  server::setup_logging(cfg.server.log_level, cfg.server.log_format);
  // What wirepool creates (state_dir, SQLite files, a generated key, the auth
  // secret) is its own only: directories 0700, files 0600.
  ::umask(0077);
  try {
    server::Server srv(std::move(cfg), &validate_database);
    return srv.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wirepool: %s\n", e.what());
    return 1;
  }
}
