#pragma once
// Shared by the ODBC integration tests: the three ODBC drivers verified here,
// each against its own throwaway database —
//   psqlODBC (`PostgreSQL Unicode`) against the pg fixture (WIREPOOL_PG_INFO),
//   MariaDB Connector/ODBC (`MariaDB Unicode`) against the mariadb fixture
//   (WIREPOOL_MARIADB_INFO), over TCP with the fixture's user and password,
//   SQLite ODBC (`SQLite3`) against a file in a fresh temporary directory —
// and helpers that run statements through the db handles.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "backends/odbc/odbc_driver.hpp"
#include "tests/integration/server_info.hpp"
#include "tests/integration/table.hpp"

namespace wirepool::odbc_it {

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

using it::read_info;  // tests/integration/server_info.hpp

/// One ODBC driver and the database it reaches.
enum class Target { postgresql, mariadb, sqlite };
inline std::string name_of(Target t) {
  switch (t) {
    case Target::postgresql:
      return "psqlODBC";
    case Target::mariadb:
      return "MariaDB";
    case Target::sqlite:
      return "SQLite";
  }
  return "?";
}

inline const std::string& sqlite_dir() {
  static const std::string dir = [] {
    std::string templ = (std::filesystem::temp_directory_path() / "wirepool-odbc-XXXXXX").string();
    const char* made = mkdtemp(templ.data());
    return std::string(made ? made : "/tmp");
  }();
  return dir;
}

/// The OpenOptions for `t`; nullopt-like (empty connection) when its fixture is missing.
inline db::OpenOptions options_for(Target t, std::string extra = "") {
  db::OpenOptions o;
  switch (t) {
    case Target::postgresql: {
      auto info = read_info("WIREPOOL_PG_INFO");
      if (info.empty()) return o;
      // BoolsAsChar=0: psqlODBC then describes boolean as SQL_BIT (docs/odbc.md).
      o.connection = "Driver={PostgreSQL Unicode};Server=" + info["host"] +
                     ";Port=" + info["port"] + ";Database=" + info["database"] +
                     ";Uid=" + info["user"] + ";BoolsAsChar=0";
      o.password = info["password"];
      break;
    }
    case Target::mariadb: {
      auto info = read_info("WIREPOOL_MARIADB_INFO");
      if (info.empty()) return o;
      o.connection = "Driver={MariaDB Unicode};Server=" + info["host"] + ";Port=" + info["port"] +
                     ";Database=" + info["database"] + ";Uid=" + info["user"] +
                     ";Pwd=" + info["password"];
      break;
    }
    case Target::sqlite:
      o.connection = "Driver={SQLite3};Database=" + sqlite_dir() + "/it.db";
      break;
  }
  if (!extra.empty()) o.connection += ";" + extra;
  return o;
}

using it::fetch;  // tests/integration/table.hpp
using it::read_all;
using it::Table;

inline void exec(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto t = fetch(c, sql, std::move(params));
  ASSERT_TRUE(t.ok()) << sql << ": "
                      << (t.ok() ? "" : t.error().sqlstate + " " + t.error().message);
}

inline db::Error error_of(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto t = fetch(c, sql, std::move(params));
  EXPECT_FALSE(t.ok()) << sql << " succeeded";
  return t.ok() ? db::Error{} : t.error();
}

class OdbcTest : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (options_for(GetParam()).connection.empty()) {
      GTEST_SKIP() << name_of(GetParam()) << ": fixture info not set: run through ctest";
    }
    conn = open();
    ASSERT_TRUE(conn.is_open());
  }
  void TearDown() override {
    if (conn.is_open()) (void)conn.close();
  }

  Target target() const { return GetParam(); }
  static const db::Driver& driver() { return *db::find_driver("odbc"); }

  Connection open(std::string extra = "") {
    auto c = driver().open(options_for(GetParam(), std::move(extra)));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().sqlstate + " " + c.error().message);
    if (!c.ok()) return Connection();
    return std::move(c.value());
  }

  /// A table name unique to the running test.
  static std::string table(std::string_view suffix = "") {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    // Test name (at most 30 characters) and target: MariaDB allows 64.
    std::string name = std::string(t->name());
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && slash > 30) name.erase(30, slash - 30);
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return "t_" + name + std::string(suffix);
  }

  Connection conn;
};

inline std::string param_name(const ::testing::TestParamInfo<Target>& info) {
  return name_of(info.param);
}

#define WP_ODBC_TARGETS                                                                            \
  ::testing::Values(::wirepool::odbc_it::Target::postgresql, ::wirepool::odbc_it::Target::mariadb, \
                    ::wirepool::odbc_it::Target::sqlite),                                          \
      ::wirepool::odbc_it::param_name

}  // namespace wirepool::odbc_it
