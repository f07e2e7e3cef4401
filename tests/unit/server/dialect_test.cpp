// The lexer a database entry's SQL is split and scanned with before any
// connection has opened: by driver, and for ODBC by the Driver named in the
// connection string (a DSN name stays ansi until a connection reports its DBMS).

#include <gtest/gtest.h>

#include "server/backend_pool.hpp"

namespace wirepool::server {
namespace {

config::Database entry(std::string driver, std::string connection) {
  config::Database d;
  d.driver = std::move(driver);
  d.connection = std::move(connection);
  return d;
}

TEST(DialectForDatabase, OdbcFollowsTheDriverItsConnectionStringNames) {
  EXPECT_EQ(dialect_for_database(entry("sqlite", "x.db")), sql::Dialect::sqlite);
  EXPECT_EQ(dialect_for_database(entry("postgresql", "host=h")), sql::Dialect::postgres);
  EXPECT_EQ(dialect_for_database(entry("odbc", "Driver={PostgreSQL Unicode};Server=h")),
            sql::Dialect::postgres);
  EXPECT_EQ(dialect_for_database(entry("odbc", "DRIVER={MariaDB Unicode};Server=h")),
            sql::Dialect::mysql);
  EXPECT_EQ(dialect_for_database(entry("odbc", "Driver=SQLite3;Database=/tmp/x.db")),
            sql::Dialect::sqlite);
  EXPECT_EQ(dialect_for_database(entry("odbc", "mydsn")), sql::Dialect::ansi);
  EXPECT_EQ(dialect_for_database(entry("odbc", "Driver={FreeTDS};Server=h")), sql::Dialect::ansi);
}

}  // namespace
}  // namespace wirepool::server
