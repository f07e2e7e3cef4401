// sql::rewrite_pg_sql for a MariaDB backend (sql/rewrite_mysql.hpp,
// docs/catalog.md) and sql::reads_pg_catalog:
//  - casts MariaDB can express: CAST(x AS SIGNED / DECIMAL(p,s) / DOUBLE /
//    CHAR(n) / DATE / DATETIME(6)); boolean literals to TRUE / FALSE; casts
//    that change no value dropped; the rest (bytea, interval, arrays) left
//  - version(), current_database(), current_schema, current_user,
//    session_user, now(), current_timestamp, pg_backend_pid(), ILIKE, E'' and
//    $$ strings as MariaDB literals
//  - never inside '...', "...", `...`, -- and # and /* */ comments
//  - catalog queries are left as written (the catalog takes them); a pg_ word
//    in a string or a rewritten function is no catalog query
//  - the plain path: nothing changes for statements without PostgreSQL syntax

#include <gtest/gtest.h>

#include "sql/rewrite_mysql.hpp"

namespace wirepool::sql {
namespace {

std::string rw(std::string_view text) {
  auto r = rewrite_pg_sql(text, Dialect::mysql, {"alice"});
  return r ? *r : std::string(text);
}

TEST(RewritePgSqlForMysql, CastsMariaDbCanExpress) {
  EXPECT_EQ(rw("SELECT 1::int4"), "SELECT CAST(1 AS SIGNED)");
  EXPECT_EQ(rw("SELECT '2'::int + 1"), "SELECT CAST('2' AS SIGNED) + 1");
  EXPECT_EQ(rw("SELECT $1::bigint"), "SELECT CAST($1 AS SIGNED)");
  EXPECT_EQ(rw("SELECT v::numeric(10,2)"), "SELECT CAST(v AS DECIMAL(10,2))");
  EXPECT_EQ(rw("SELECT v::numeric"), "SELECT v");
  EXPECT_EQ(rw("SELECT x::double precision, y::real"),
            "SELECT CAST(x AS DOUBLE), CAST(y AS FLOAT)");
  EXPECT_EQ(rw("SELECT 'abc'::varchar(2), 'abc'::char, n::text"),
            "SELECT CAST('abc' AS CHAR(2)), CAST('abc' AS CHAR(1)), CAST(n AS CHAR)");
  EXPECT_EQ(rw("SELECT '2024-01-02'::date, '2024-01-02 10:00'::timestamp with time zone"),
            "SELECT CAST('2024-01-02' AS DATE), CAST('2024-01-02 10:00' AS DATETIME(6))");
  EXPECT_EQ(rw("SELECT 't'::boolean, 'off'::bool, b::bool"), "SELECT TRUE, FALSE, b");
  EXPECT_EQ(rw("SELECT t.a::int FROM t"), "SELECT CAST(t.a AS SIGNED) FROM t");
  EXPECT_EQ(rw("SELECT f(a, b)::int"), "SELECT CAST(f(a, b) AS SIGNED)");
  EXPECT_EQ(rw("SELECT (a + b)::int::text"), "SELECT CAST(CAST((a + b) AS SIGNED) AS CHAR)");
  // No MariaDB equivalent: left for MariaDB to refuse.
  EXPECT_EQ(rw("SELECT '\\x01'::bytea"), "SELECT '\\x01'::bytea");
  EXPECT_EQ(rw("SELECT a::int[]"), "SELECT a::int[]");
}

TEST(RewritePgSqlForMysql, SessionFunctionsAndKeywords) {
  EXPECT_EQ(rw("SELECT version()"),
            "SELECT CONCAT('PostgreSQL 15.0 (wirepool, MariaDB ', VERSION(), ')')");
  EXPECT_EQ(rw("SELECT pg_catalog.version()"),
            "SELECT CONCAT('PostgreSQL 15.0 (wirepool, MariaDB ', VERSION(), ')')");
  EXPECT_EQ(rw("SELECT current_database(), current_schema(), current_schema"),
            "SELECT DATABASE(), 'public', 'public'");
  EXPECT_EQ(rw("SELECT current_user, session_user"), "SELECT 'alice', 'alice'");
  EXPECT_EQ(rw("SELECT now(), current_timestamp"), "SELECT NOW(6), CURRENT_TIMESTAMP(6)");
  EXPECT_EQ(rw("SELECT pg_backend_pid()"), "SELECT CONNECTION_ID()");
  EXPECT_EQ(rw("SELECT * FROM t WHERE a ILIKE 'x%'"), "SELECT * FROM t WHERE a LIKE 'x%'");
  EXPECT_EQ(rw("SELECT E'a\\tb''c\\\\'"), "SELECT 'a\tb''c\\\\'");
  EXPECT_EQ(rw("SELECT $$it's$$"), "SELECT 'it''s'");
  EXPECT_EQ(rw("SELECT now()::date"), "SELECT CAST(NOW(6) AS DATE)");
}

TEST(RewritePgSqlForMysql, NeverInsideStringsIdentifiersOrComments) {
  for (std::string_view text : {
           "SELECT 'a::int', \"current_user\", `now()` FROM t",
           "SELECT 1 -- ::int current_user\n",
           "SELECT 1 # version()\n",
           "SELECT 1 /* E'x' ilike */",
           "SELECT 'it''s ::int'",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(rw(text), text);
  }
}

TEST(RewritePgSqlForMysql, CatalogQueriesAreLeftToTheCatalog) {
  EXPECT_TRUE(reads_pg_catalog("SELECT relname FROM pg_catalog.pg_class", Dialect::mysql));
  EXPECT_TRUE(reads_pg_catalog("SELECT oid FROM pg_type WHERE typname = $1", Dialect::mysql));
  EXPECT_TRUE(reads_pg_catalog("SELECT 't'::regclass", Dialect::mysql));
  EXPECT_TRUE(reads_pg_catalog("SELECT format_type(23, NULL)", Dialect::mysql));
  EXPECT_TRUE(reads_pg_catalog("SELECT `pg_class`.oid FROM `pg_class`", Dialect::mysql));
  EXPECT_FALSE(reads_pg_catalog("SELECT 'pg_class' -- pg_type", Dialect::mysql));
  EXPECT_FALSE(reads_pg_catalog("SELECT pg_backend_pid(), pg_catalog.version()", Dialect::mysql));
  EXPECT_FALSE(reads_pg_catalog("SELECT * FROM information_schema.TABLES", Dialect::mysql));
  const std::string q = "SELECT c.oid::int FROM pg_catalog.pg_class c WHERE c.relname ILIKE 'x'";
  EXPECT_FALSE(rewrite_pg_sql(q, Dialect::mysql, {"u"}).has_value());
}

TEST(RewritePgSqlForMysql, PlainStatementsAreNotCopied) {
  for (std::string_view text : {
           "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
           "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
           "INSERT INTO t (a, b) VALUES (?, 'x')",
           "SELECT `a` FROM t WHERE b = \"s\"",
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(rewrite_pg_sql(text, Dialect::mysql, {"u"}).has_value());
  }
}

}  // namespace
}  // namespace wirepool::sql
