#pragma once
// Shared by the SQLite integration tests: a fresh temporary directory per test,
// an opener through the driver, and helpers that read whole results.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "tests/integration/table.hpp"

namespace wirepool::sqlite_it {

using db::Column;
using db::CommandInfo;
using db::Connection;
using db::Errc;
using db::Kind;
using db::Param;
using db::Value;

inline Param P(Value v) {
  return Param{"", std::move(v), false};
}
inline Param N(std::string name, Value v) {
  return Param{std::move(name), std::move(v), false};
}
inline Value T(std::string s) {
  return Value::text(std::move(s));
}
inline Value I(int64_t v) {
  return Value::int64(v);
}

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

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wp-sqlite-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  db::OpenOptions options(std::string connection = "test.db",
                          std::map<std::string, std::string> opts = {}) const {
    db::OpenOptions o;
    o.connection = std::move(connection);
    o.base_dir = dir_;
    o.options = std::move(opts);
    return o;
  }

  static const db::Driver& driver() { return *db::find_driver("sqlite"); }

  Connection open(std::string connection = "test.db",
                  std::map<std::string, std::string> opts = {}) {
    auto c = driver().open(options(std::move(connection), std::move(opts)));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message + " / " + c.error().detail);
    if (!c.ok()) return Connection();
    return std::move(c.value());
  }

  /// Runs statements that must succeed.
  static void exec(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
    auto r = c.execute(sql, params);
    ASSERT_TRUE(r.ok()) << sql << ": " << (r.ok() ? "" : r.error().message);
  }

  std::string path(const std::string& name) const {
    return (std::filesystem::path(dir_) / name).string();
  }

  std::string dir_;
};

}  // namespace wirepool::sqlite_it
