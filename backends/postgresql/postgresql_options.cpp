#include "backends/postgresql/postgresql_options.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace wirepool::postgresql {

namespace {

/// Conninfo keys that would set TLS outside the entry's tls block.
constexpr std::string_view kTlsKeys[] = {
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslcrldir",
    "requiressl",
    "sslpassword",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
};

bool is_tls_key(std::string_view key) {
  return std::find(std::begin(kTlsKeys), std::end(kTlsKeys), key) != std::end(kTlsKeys);
}

bool is_secret_key(std::string_view key) {
  return key == "password" || key == "sslpassword";
}

/// The keys `conninfo` sets (PQconninfoParse), or the parse error.
struct Parsed {
  std::set<std::string> keys;
  std::string channel_binding;  ///< its value when the conninfo sets it
  std::string error;
  bool ok = false;
};

Parsed parse_conninfo(const std::string& conninfo) {
  Parsed out;
  const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  if (!uri && conninfo.find('=') == std::string::npos) {
    // A bare database name, as PQconnectdbParams(expand_dbname = 1) reads it.
    if (!conninfo.empty()) out.keys.insert("dbname");
    out.ok = true;
    return out;
  }
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (opts == nullptr) {
    out.error = err ? err : "out of memory";
    while (!out.error.empty() && (out.error.back() == '\n' || out.error.back() == ' ')) {
      out.error.pop_back();
    }
    if (err) PQfreemem(err);
    return out;
  }
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    out.keys.insert(o->keyword);
    if (std::string_view(o->keyword) == "channel_binding") out.channel_binding = o->val;
  }
  PQconninfoFree(opts);
  out.ok = true;
  return out;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

/// A value as libpq's key=value grammar reads it back: quoted when it holds
/// a space, a quote or a backslash, or is empty.
std::string quote_value(std::string_view v) {
  if (!v.empty() && v.find_first_of(" \t\n\r\f\v'\\") == std::string_view::npos) {
    return std::string(v);
  }
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

}  // namespace

std::string normalize_pin(std::string_view pin) {
  std::string out;
  out.reserve(pin.size());
  for (char c : pin) {
    if (c == ':') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o) {
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& [key, value] : o.options) {
    problems.emplace_back(key,
                          "unknown option \"" + key + "\": the postgresql driver takes no options");
  }
  const Parsed parsed = parse_conninfo(o.connection);
  if (!parsed.ok) {
    problems.emplace_back("connection", "invalid libpq connection string: " + parsed.error);
  } else {
    for (const auto& key : parsed.keys) {
      if (is_tls_key(key)) {
        problems.emplace_back("connection",
                              "connection sets " + key +
                                  ": TLS to the backend comes from the database entry's tls block");
      }
    }
  }
  if (parsed.ok && parsed.keys.count("channel_binding") != 0 && !o.tls_ca.empty() &&
      parsed.channel_binding != "require" && parsed.channel_binding != "prefer") {
    problems.emplace_back("connection",
                          "channel_binding=" + parsed.channel_binding +
                              ": with TLS to the backend it is require (the default) or prefer");
  }
  for (const auto& pin : o.tls_pins) {
    const std::string p = normalize_pin(pin);
    if (p.size() != 64 || !is_hex(p)) {
      problems.emplace_back("tls.pin_sha256",
                            "pin \"" + pin + "\" is not a SHA-256 (64 hex digits, colons allowed)");
    }
  }
  if (!o.tls_pins.empty() && o.tls_ca.empty()) {
    problems.emplace_back("tls.pin_sha256", "pins need tls.ca: there is no TLS without a CA");
  }
  return problems;
}

ConnectParams connect_params(const db::OpenOptions& o) {
  const Parsed parsed = parse_conninfo(o.connection);
  auto set = [&](std::string_view key) { return parsed.keys.count(std::string(key)) != 0; };
  ConnectParams p;
  auto add = [&](std::string key, std::string value) {
    p.pairs.emplace_back(std::move(key), std::move(value));
  };
  // The conninfo first: later keywords override what it sets.
  add("dbname", o.connection);
  if (!o.user.empty()) add("user", o.user);
  if (!o.password.empty()) add("password", o.password);
  // A vanished server is noticed in about a minute: 30 s idle, then 3 probes 10 s apart.
  if (!set("keepalives")) add("keepalives", "1");
  if (!set("keepalives_idle")) add("keepalives_idle", "30");
  if (!set("keepalives_interval")) add("keepalives_interval", "10");
  if (!set("keepalives_count")) add("keepalives_count", "3");
  if (!set("connect_timeout")) add("connect_timeout", "10");
  // The contract's Text is UTF-8.
  if (!set("client_encoding")) add("client_encoding", "UTF8");
  // One host of several (the host monitor's choice): it replaces the
  // conninfo's lists. hostaddr is set too for an address, so that a conninfo
  // hostaddr list does not pair with this one host.
  if (!o.host.empty()) {
    add("host", o.host);
    const bool address = o.host.find_first_not_of("0123456789.") == std::string::npos ||
                         o.host.find(':') != std::string::npos;
    if (address || set("hostaddr")) add("hostaddr", address ? o.host : std::string());
    if (o.port > 0) add("port", std::to_string(o.port));
  }
  if (o.read_write) add("target_session_attrs", "read-write");
  if (o.tls_ca.empty()) {
    add("sslmode", "disable");
  } else {
    add("sslmode", "verify-full");
    add("sslrootcert", o.tls_ca);
    add("ssl_min_protocol_version", "TLSv1.3");
    // GSSAPI encryption would be tried before TLS when a Kerberos ticket exists.
    add("gssencmode", "disable");
    // SCRAM-SHA-256-PLUS only (libpq refuses any other method before it sends
    // a thing), unless the conninfo says channel_binding=prefer.
    if (!set("channel_binding")) add("channel_binding", "require");
  }
  for (const auto& [k, v] : p.pairs) {
    p.keywords.push_back(k.c_str());
    p.values.push_back(v.c_str());
  }
  p.keywords.push_back(nullptr);
  p.values.push_back(nullptr);
  return p;
}

std::vector<db::HostPort> conninfo_host_list(std::string_view s) {
  const std::string conninfo(s);
  const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  if (!uri && conninfo.find('=') == std::string::npos) return {};  // a database name
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (opts == nullptr) return {};
  std::string hosts, addrs, ports;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view key = o->keyword;
    if (key == "host") hosts = o->val;
    if (key == "hostaddr") addrs = o->val;
    if (key == "port") ports = o->val;
  }
  PQconninfoFree(opts);
  auto split = [](const std::string& v) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
      const size_t comma = v.find(',', start);
      out.push_back(v.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  };
  const auto h = split(hosts.empty() ? addrs : hosts);
  if (h.size() < 2) return {};
  const auto p = split(ports);
  std::vector<db::HostPort> out;
  for (size_t i = 0; i < h.size(); ++i) {
    const std::string& port = p.size() == 1 ? p[0] : (i < p.size() ? p[i] : std::string());
    out.push_back({h[i], port.empty() ? 0 : std::atoi(port.c_str())});
  }
  return out;
}

std::string redact_conninfo(std::string_view s) {
  const std::string conninfo(s);
  const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  if (!uri && conninfo.find('=') == std::string::npos) return conninfo;  // a database name
  // libpq's own parser, so that every form it accepts (spaces around '=',
  // quotes, backslash escapes, any whitespace, URIs with percent-encoding) is
  // read as libpq reads it; the result is written back as key=value pairs.
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (opts == nullptr) return "(a connection string libpq cannot parse)";
  std::string out;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    if (!out.empty()) out.push_back(' ');
    out.append(o->keyword).push_back('=');
    const bool secret = is_secret_key(o->keyword) || (o->dispchar && o->dispchar[0] == '*');
    out.append(secret ? std::string("***") : quote_value(o->val));
  }
  PQconninfoFree(opts);
  return out;
}

}  // namespace wirepool::postgresql
