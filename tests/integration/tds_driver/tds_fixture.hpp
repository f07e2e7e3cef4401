#pragma once
// Shared by the TDS driver's integration tests: the wirepool TDS listener that
// tests/fixtures/tdsserver.py started (WIREPOOL_TDS_INFO names its info.json),
// serving SQLite (`app`) and the throwaway PostgreSQL (`pgapp`), and openers
// through the driver. In the planted-defect build (integration_tds_defects,
// WIREPOOL_PLANTED_DEFECTS) the switch is read here:
// WIREPOOL_TDS_PLANTED_DEFECT=nbcrow|brackets|select_count.

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "protocol/tds/codec.hpp"
#include "tests/integration/server_info.hpp"
#include "tests/integration/table.hpp"

namespace wirepool::tds_it {

using db::Column;
using db::CommandInfo;
using db::Connection;
using db::Errc;
using db::Kind;
using db::Param;
using db::Value;

inline Param P(Value v) {
  Param p;
  p.value = std::move(v);
  return p;
}
inline Value T(std::string s) {
  return Value::text(std::move(s));
}
inline Value I(int64_t v) {
  return Value::int64(v);
}

/// The fixture server's info.json (tests/integration/server_info.hpp).
class ServerInfo : public it::ServerInfo {
 public:
  static const ServerInfo& get() {
    static const ServerInfo info = load();
    return info;
  }
  /// The fixture serves the PostgreSQL database `pgapp` too.
  bool has_pg() const {
    return (',' + str("databases") + ',').find(",pgapp,") != std::string::npos;
  }

 private:
  using it::ServerInfo::ServerInfo;
  static ServerInfo load() {
#ifdef WIREPOOL_PLANTED_DEFECTS
    // Test-only: a planted defect for this run (see the header comment).
    if (const char* d = std::getenv("WIREPOOL_TDS_PLANTED_DEFECT")) {
      tds::set_planted_defect_for_test(tds::planted_defect_from_name(d));
    }
#endif
    std::signal(SIGPIPE, SIG_IGN);
    return ServerInfo(it::read_info("WIREPOOL_TDS_INFO"));
  }
};

/// OpenOptions for `database` on the fixture, with its CA and pin.
inline db::OpenOptions open_options(const std::string& database = "app") {
  const auto& info = ServerInfo::get();
  db::OpenOptions o;
  o.connection =
      "host=" + info.str("host") + ";port=" + info.str("port") + ";user=alice;database=" + database;
  o.password = info.str("password");
  o.tls_ca = info.str("tls.ca");
  o.tls_pins = {info.str("tls.pin_sha256")};
  return o;
}

inline db::Result<Connection> open(const db::OpenOptions& o) {
  const db::Driver* d = db::find_driver("tds");
  if (d == nullptr) return db::Error::unsupported("no tds driver");
  return d->open(o);
}

using it::fetch;  // tests/integration/table.hpp
using it::read_all;
using it::Table;

#define TDS_FIXTURE_OR_SKIP()                                                  \
  do {                                                                         \
    if (!::wirepool::tds_it::ServerInfo::get().ok())                           \
      GTEST_SKIP() << "no TDS fixture (WIREPOOL_TDS_INFO): run through ctest"; \
  } while (0)

}  // namespace wirepool::tds_it
