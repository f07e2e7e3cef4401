#pragma once
// Shared by the TDS driver's integration tests: the wirepool TDS listener that
// tests/fixtures/tdsserver.py started (WIREPOOL_TDS_INFO names its info.json),
// serving SQLite (`app`) and the throwaway PostgreSQL (`pgapp`), and openers
// through the driver. The planted-defect switch (issue 7) is read here:
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

/// info.json: strings and numbers, objects one level deep as "object.key".
class ServerInfo {
 public:
  static const ServerInfo& get() {
    static const ServerInfo info = load();
    return info;
  }
  std::string str(const std::string& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? std::string() : it->second;
  }
  bool ok() const { return !fields_.empty(); }
  bool has_pg() const { return str("has_pg") == "1"; }

 private:
  static ServerInfo load() {
    ServerInfo info;
    // Test-only: a planted defect for this run (see the header comment).
    if (const char* d = std::getenv("WIREPOOL_TDS_PLANTED_DEFECT")) {
      tds::set_planted_defect_for_test(tds::planted_defect_from_name(d));
    }
    std::signal(SIGPIPE, SIG_IGN);
    const char* path = std::getenv("WIREPOOL_TDS_INFO");
    if (path == nullptr) return info;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.find("\"pgapp\"") != std::string::npos) info.fields_["has_pg"] = "1";
    std::string prefix;
    size_t i = 0;
    for (;;) {
      const size_t quote = text.find('"', i);
      const size_t close = text.find('}', i);
      if (!prefix.empty() && close < quote) {
        prefix.clear();
        i = close + 1;
        continue;
      }
      i = quote;
      if (i == std::string::npos) break;
      const size_t kend = text.find('"', i + 1);
      if (kend == std::string::npos) break;
      const std::string key = prefix + text.substr(i + 1, kend - i - 1);
      size_t j = text.find_first_not_of(" \t\n", kend + 1);
      if (j == std::string::npos || text[j] != ':') {
        i = kend + 1;
        continue;
      }
      j = text.find_first_not_of(" \t\n", j + 1);
      if (text[j] == '{') {
        prefix = key + ".";
        i = j + 1;
      } else if (text[j] == '"') {
        const size_t vend = text.find('"', j + 1);
        info.fields_[key] = text.substr(j + 1, vend - j - 1);
        i = vend + 1;
      } else if (text[j] == '[') {
        i = text.find(']', j) + 1;
      } else {
        const size_t vend = text.find_first_of(",}\n", j);
        info.fields_[key] = text.substr(j, vend - j);
        i = vend;
      }
    }
    return info;
  }
  std::map<std::string, std::string> fields_;
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

/// One result, read whole.
struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
  CommandInfo info;
};

inline db::Result<Table> read_all(db::Rows& rows) {
  Table t;
  t.columns.assign(rows.columns().begin(), rows.columns().end());
  std::vector<Value> row(t.columns.size());
  for (;;) {
    auto more = rows.next(row);
    if (!more.ok()) return more.take_error();
    if (!more.value()) break;
    t.rows.push_back(row);
  }
  t.info = rows.command();
  return t;
}

/// Runs `sql` and reads its first result whole.
inline db::Result<Table> fetch(Connection& c, std::string_view sql,
                               std::vector<Param> params = {}) {
  auto r = c.query(sql, params);
  if (!r.ok()) return r.take_error();
  auto t = read_all(r.value());
  (void)r.value().close();
  return t;
}

#define TDS_FIXTURE_OR_SKIP()                                                  \
  do {                                                                         \
    if (!::wirepool::tds_it::ServerInfo::get().ok())                           \
      GTEST_SKIP() << "no TDS fixture (WIREPOOL_TDS_INFO): run through ctest"; \
  } while (0)

}  // namespace wirepool::tds_it
