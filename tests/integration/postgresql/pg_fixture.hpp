#pragma once
// Shared by the PostgreSQL integration tests: the throwaway server that
// tests/fixtures/pgserver.py started (WIREPOOL_PG_INFO names its info.json),
// openers through the driver, and helpers that drive the non-blocking driver
// from a blocking test through db::call_blocking.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "tests/integration/server_info.hpp"

namespace wirepool::pg_it {

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
    static const ServerInfo info(it::read_info("WIREPOOL_PG_INFO"));
    return info;
  }

 private:
  using it::ServerInfo::ServerInfo;
};

/// Calls f() until it stops answering would_block (db::call_blocking).
template <class F>
auto blocking(Connection& c, F f) {
  return db::call_blocking(*c.impl(), f, std::chrono::seconds(60));
}

/// One result of a query, read whole.
struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
  CommandInfo info;
};

/// Reads the current result of `rows` to its end.
inline db::Result<Table> read_all(Connection& c, db::Rows& rows) {
  Table t;
  t.columns.assign(rows.columns().begin(), rows.columns().end());
  std::vector<Value> row(t.columns.size());
  for (;;) {
    auto more = blocking(c, [&] { return rows.next(row); });
    if (!more.ok()) return more.take_error();
    if (!more.value()) break;
    t.rows.push_back(row);
  }
  t.info = rows.command();
  return t;
}

inline db::Result<db::Rows> query(Connection& c, std::string_view sql,
                                  std::vector<Param> params = {},
                                  const db::QueryOptions& options = {}) {
  return blocking(c, [&] { return c.query(sql, params, options); });
}

inline db::Status close_rows(Connection& c, db::Rows& rows) {
  return blocking(c, [&] { return rows.close(); });
}

/// Runs `sql` and reads its first result whole.
inline db::Result<Table> fetch(Connection& c, std::string_view sql, std::vector<Param> params = {},
                               const db::QueryOptions& options = {}) {
  auto rows = query(c, sql, std::move(params), options);
  if (!rows.ok()) return rows.take_error();
  auto t = read_all(c, rows.value());
  auto closed = close_rows(c, rows.value());
  if (t.ok() && !closed.ok()) return closed.take_error();
  return t;
}

/// The single value of a one-row, one-column query.
inline Value scalar(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto t = fetch(c, sql, std::move(params));
  EXPECT_TRUE(t.ok()) << sql << ": " << (t.ok() ? "" : t.error().message);
  if (!t.ok() || t->rows.size() != 1 || t->rows[0].size() != 1) {
    ADD_FAILURE() << sql << ": not a single value";
    return Value::null();
  }
  return t->rows[0][0];
}

/// Runs statements that must succeed.
inline void exec(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto t = fetch(c, sql, std::move(params));
  ASSERT_TRUE(t.ok()) << sql << ": " << (t.ok() ? "" : t.error().message);
}

/// The error a statement answers (it must fail).
inline db::Error error_of(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto t = fetch(c, sql, std::move(params));
  EXPECT_FALSE(t.ok()) << sql << " succeeded";
  return t.ok() ? db::Error{} : t.error();
}

class PgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ServerInfo::get().ok()) {
      GTEST_SKIP() << "WIREPOOL_PG_INFO is not set: run through ctest (fixture pg_server_start)";
    }
  }

  static const ServerInfo& info() { return ServerInfo::get(); }

  /// The `wirepool` role over TCP (SCRAM), plaintext.
  static db::OpenOptions options() {
    db::OpenOptions o;
    o.connection = "host=" + info().str("host") + " port=" + info().str("port") +
                   " user=" + info().str("user") + " dbname=" + info().str("database");
    o.password = info().str("password");
    return o;
  }

  /// The superuser over the Unix socket (trust).
  static db::OpenOptions superuser_options() {
    db::OpenOptions o;
    o.connection = "host=" + info().str("socket_dir") + " port=" + info().str("port") +
                   " user=" + info().str("superuser") + " dbname=" + info().str("database");
    return o;
  }

  static const db::Driver& driver() { return *db::find_driver("postgresql"); }

  static Connection open(const db::OpenOptions& o = options()) {
    auto c = driver().open(o);
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    if (!c.ok()) return Connection();
    return std::move(c.value());
  }

  /// A table name unique to the running test.
  static std::string table(std::string_view suffix = "") {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(t->test_suite_name()) + "_" + t->name();
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return "t_" + name + std::string(suffix);
  }
};

}  // namespace wirepool::pg_it
