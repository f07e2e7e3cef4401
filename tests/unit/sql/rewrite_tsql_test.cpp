// sql::rewrite_pg_sql for a SQL Server backend (sql/rewrite_tsql.hpp,
// docs/catalog.md#rewrites-sql-server):
//  - casts T-SQL can express: CAST(x AS smallint / int / bigint / decimal(p,s)
//    / real / float / nvarchar(n) / nchar(n) / date / datetime2(6) /
//    datetimeoffset(6) / time(6) / bit / uniqueidentifier); a date/time
//    literal's cast dropped (SQL Server converts the literal where it is
//    used); casts that change no value dropped; the rest (bytea, interval,
//    arrays) left
//  - version(), current_database() -> DB_NAME(), current_schema -> 'public',
//    current_user and session_user, now() and current_timestamp ->
//    SYSDATETIMEOFFSET(), pg_backend_pid() -> @@SPID, true/false -> bit,
//    ILIKE -> LIKE, E'' and $$ strings as T-SQL literals
//  - never inside '...', N'...', "...", [...], -- and /* */ comments; $N
//    markers keep their numbers; a qualified name's part (t.now) is a column
//  - catalog queries are left as written (the catalog takes them); pg_sleep()
//    and other functions on the session are not catalog queries
//  - a string literal with characters beyond ASCII gets the N prefix (psycopg2
//    interpolates parameters into '...'), and so does an E'' or $$ one; not
//    one that has it, nor text in comments or quoted identifiers
//  - the plain path: nothing changes for statements without PostgreSQL syntax

#include <gtest/gtest.h>

#include "sql/rewrite_mysql.hpp"
#include "sql/rewrite_tsql.hpp"

namespace wirepool::sql {
namespace {

std::string rw(std::string_view text) {
  auto r = rewrite_pg_sql(text, Dialect::tsql, {"alice"});
  return r ? *r : std::string(text);
}

TEST(RewritePgSqlForTsql, CastsTsqlCanExpress) {
  EXPECT_EQ(rw("SELECT 1::int4, 2::int2, 3::int8"),
            "SELECT CAST(1 AS int), CAST(2 AS smallint), CAST(3 AS bigint)");
  EXPECT_EQ(rw("SELECT '2'::integer + 1"), "SELECT CAST('2' AS int) + 1");
  EXPECT_EQ(rw("SELECT $1::bigint"), "SELECT CAST($1 AS bigint)");
  EXPECT_EQ(rw("SELECT v::numeric(10,2), w::decimal"), "SELECT CAST(v AS decimal(10,2)), w");
  EXPECT_EQ(rw("SELECT x::double precision, y::real, z::float8"),
            "SELECT CAST(x AS float), CAST(y AS real), CAST(z AS float)");
  EXPECT_EQ(rw("SELECT 'abc'::varchar(2), 'abc'::char, n::text, m::char(3)"),
            "SELECT CAST('abc' AS nvarchar(2)), CAST('abc' AS nchar(1)), "
            "CAST(n AS nvarchar(max)), CAST(m AS nchar(3))");
  EXPECT_EQ(rw("SELECT u::uuid, j::jsonb"), "SELECT CAST(u AS uniqueidentifier), j");
  EXPECT_EQ(rw("SELECT t.a::int FROM t"), "SELECT CAST(t.a AS int) FROM t");
  EXPECT_EQ(rw("SELECT f(a, b)::int"), "SELECT CAST(f(a, b) AS int)");
  EXPECT_EQ(rw("SELECT (a + b)::int::text"), "SELECT CAST(CAST((a + b) AS int) AS nvarchar(max))");
  // No T-SQL equivalent: left for SQL Server to refuse.
  EXPECT_EQ(rw("SELECT '\\x01'::bytea, '1 day'::interval"),
            "SELECT '\\x01'::bytea, '1 day'::interval");
  EXPECT_EQ(rw("SELECT a::int[]"), "SELECT a::int[]");
}

TEST(RewritePgSqlForTsql, DateTimeLiteralsAreConvertedWhereUsed) {
  // psycopg2 interpolates a date as '2024-01-02'::date (issue #32).
  EXPECT_EQ(rw("INSERT INTO t (d) VALUES ('2024-01-02'::date)"),
            "INSERT INTO t (d) VALUES ('2024-01-02')");
  EXPECT_EQ(rw("SELECT '2024-01-02T10:00:00'::timestamp, '10:00'::time"),
            "SELECT '2024-01-02T10:00:00', '10:00'");
  EXPECT_EQ(rw("SELECT '2024-01-02 10:00+01'::timestamp with time zone"),
            "SELECT '2024-01-02 10:00+01'");
  EXPECT_EQ(rw("SELECT c::date, $1::timestamptz, c::timestamp, c::time"),
            "SELECT CAST(c AS date), CAST($1 AS datetimeoffset(6)), CAST(c AS datetime2(6)), "
            "CAST(c AS time(6))");
  EXPECT_EQ(rw("SELECT now()::date"), "SELECT CAST(SYSDATETIMEOFFSET() AS date)");
}

TEST(RewritePgSqlForTsql, BooleansAreBits) {
  EXPECT_EQ(rw("SELECT true, FALSE"), "SELECT CAST(1 AS bit), CAST(0 AS bit)");
  EXPECT_EQ(rw("UPDATE t SET on_sale = true WHERE id = $1"),
            "UPDATE t SET on_sale = CAST(1 AS bit) WHERE id = $1");
  EXPECT_EQ(rw("SELECT 't'::boolean, 'off'::bool, b::bool"),
            "SELECT CAST(1 AS bit), CAST(0 AS bit), CAST(b AS bit)");
  EXPECT_EQ(rw("SELECT 'maybe'::bool"), "SELECT 'maybe'::bool");  // PostgreSQL's error
  EXPECT_EQ(rw("SELECT t.true FROM t"), "SELECT t.true FROM t");
}

TEST(RewritePgSqlForTsql, SessionFunctionsAndKeywords) {
  EXPECT_EQ(rw("SELECT version()"), "SELECT 'PostgreSQL 15.0 (wirepool, SQL Server)'");
  EXPECT_EQ(rw("select pg_catalog.version()"), "select 'PostgreSQL 15.0 (wirepool, SQL Server)'");
  EXPECT_EQ(rw("SELECT current_database(), current_schema(), current_schema"),
            "SELECT DB_NAME(), 'public', 'public'");
  EXPECT_EQ(rw("SELECT current_user, session_user, current_role"),
            "SELECT 'alice', 'alice', 'alice'");
  EXPECT_EQ(rw("SELECT now(), current_timestamp"),
            "SELECT SYSDATETIMEOFFSET(), SYSDATETIMEOFFSET()");
  EXPECT_EQ(rw("SELECT pg_backend_pid()"), "SELECT @@SPID");
  EXPECT_EQ(rw("SELECT * FROM t WHERE a ILIKE 'x%'"), "SELECT * FROM t WHERE a LIKE 'x%'");
  EXPECT_EQ(rw("SELECT E'a\\tb''c\\\\'"), "SELECT 'a\tb''c\\'");
  EXPECT_EQ(rw("SELECT $$it's$$, $q$x$q$"), "SELECT 'it''s', 'x'");
  EXPECT_EQ(rw("SELECT t.now, t.version() FROM t"), "SELECT t.now, t.version() FROM t");
}

TEST(RewritePgSqlForTsql, NeverInsideStringsIdentifiersOrComments) {
  for (std::string_view text : {
           "SELECT 'a::int', \"current_user\", [now()] FROM t",
           "SELECT N'true ::date' FROM t",
           "SELECT 1 -- ::int current_user true\n",
           "SELECT 1 /* E'x' ilike version() */",
           "SELECT 'it''s ::int'",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(rw(text), text);
  }
}

TEST(RewritePgSqlForTsql, NonAsciiLiteralsAreNational) {
  EXPECT_EQ(rw("INSERT INTO t (s) VALUES ('Grüße', 'plain', '日本')"),
            "INSERT INTO t (s) VALUES (N'Grüße', 'plain', N'日本')");
  EXPECT_EQ(rw("SELECT * FROM t WHERE s = 'é''s'"), "SELECT * FROM t WHERE s = N'é''s'");
  EXPECT_EQ(rw("SELECT E'\\u00e9x', $$ü$$, $$u$$"), "SELECT N'éx', N'ü', 'u'");
  EXPECT_EQ(rw("SELECT 'é'::varchar(3)"), "SELECT CAST(N'é' AS nvarchar(3))");
  for (std::string_view text : {
           "SELECT N'Grüße', n'é' FROM t",
           "SELECT [é] FROM \"tä\" -- 'é'\n",
           "SELECT 1 /* 'ü' */",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(rw(text), text);
  }
}

TEST(RewritePgSqlForTsql, CatalogQueriesAreLeftToTheCatalog) {
  EXPECT_TRUE(reads_pg_catalog("SELECT relname FROM pg_catalog.pg_class", Dialect::tsql));
  EXPECT_TRUE(reads_pg_catalog("SELECT [pg_class].oid FROM [pg_class]", Dialect::tsql));
  EXPECT_TRUE(reads_pg_catalog("SELECT 1::pg_catalog.int8", Dialect::tsql));
  EXPECT_FALSE(reads_pg_catalog("SELECT pg_backend_pid(), pg_catalog.version()", Dialect::tsql));
  // Functions on the session, not the catalog: the backend's to run or refuse.
  EXPECT_FALSE(reads_pg_catalog("SELECT pg_sleep(30)", Dialect::tsql));
  EXPECT_FALSE(
      reads_pg_catalog("SELECT pg_catalog.pg_advisory_lock(1), pg_typeof(1)", Dialect::tsql));
  EXPECT_TRUE(reads_pg_catalog("SELECT pg_get_indexdef(1)", Dialect::tsql));
  EXPECT_FALSE(reads_pg_catalog("SELECT 'pg_class' -- pg_type", Dialect::tsql));
  EXPECT_FALSE(reads_pg_catalog("SELECT * FROM INFORMATION_SCHEMA.COLUMNS", Dialect::tsql));
  const std::string q =
      "SELECT c.oid::int, true FROM pg_catalog.pg_class c WHERE c.relname ILIKE 'x'";
  EXPECT_FALSE(rewrite_pg_sql(q, Dialect::tsql, {"u"}).has_value());
}

TEST(RewritePgSqlForTsql, PlainStatementsAreNotCopied) {
  for (std::string_view text : {
           "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
           "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
           "INSERT INTO t (a, b) VALUES (@p1, N'x')",
           "SELECT [a] FROM t WHERE b = 'true'",
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(rewrite_pg_sql(text, Dialect::tsql, {"u"}).has_value());
  }
}

}  // namespace
}  // namespace wirepool::sql
