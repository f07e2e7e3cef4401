#pragma once
// Shared by the MySQL integration tests: the throwaway MariaDB that
// tests/fixtures/mariadbserver.py started (WIREPOOL_MARIADB_INFO names its
// info.json), openers through the driver, and read helpers. The driver is
// blocking: every call returns when the server has answered.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "tests/integration/server_info.hpp"
#include "tests/integration/table.hpp"

namespace wirepool::mysql_it {

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
    static const ServerInfo info(it::read_info("WIREPOOL_MARIADB_INFO"));
    return info;
  }

 private:
  using it::ServerInfo::ServerInfo;
};

using it::fetch;  // tests/integration/table.hpp
using it::read_all;
using it::Table;

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

class MysqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ServerInfo::get().ok()) {
      GTEST_SKIP() << "WIREPOOL_MARIADB_INFO is not set: run through ctest (fixture "
                      "mariadb_server_start)";
    }
  }

  static const ServerInfo& info() { return ServerInfo::get(); }

  /// The `wirepool` user over TCP, plaintext, with the password as the
  /// entry's password_env would pass it.
  static db::OpenOptions options() {
    db::OpenOptions o;
    o.connection = "host=" + info().str("host") + " port=" + info().str("port") +
                   " user=" + info().str("user") + " dbname=" + info().str("database");
    o.password = info().str("password");
    return o;
  }

  static const db::Driver& driver() { return *db::find_driver("mysql"); }

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

}  // namespace wirepool::mysql_it
