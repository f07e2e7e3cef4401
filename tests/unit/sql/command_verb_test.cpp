// sql::command_verb: the verb PostgreSQL puts in a command tag, as a table.
//  - DML: SELECT, INSERT, UPDATE, DELETE, MERGE; VALUES and TABLE are SELECT;
//    SQLite's REPLACE and INSERT OR ... are INSERT; parenthesised SELECT
//  - CREATE/DROP/ALTER <object>, noise skipped (OR REPLACE, TEMP, UNIQUE, VIRTUAL,
//    OR ALTER, NONCLUSTERED, ...), multi-word objects kept (MATERIALIZED VIEW, ...)
//  - transaction control: BEGIN, START TRANSACTION, COMMIT (END), ROLLBACK (ABORT),
//    SAVEPOINT, RELEASE, ... PREPARED
//  - WITH resolves to its main statement, past the CTE bodies (strings included)
//  - session and maintenance commands; blank text is ""
//  - inserts_one_row: a single-tuple INSERT ... VALUES and nothing else

#include <gtest/gtest.h>

#include "sql/lexer.hpp"

namespace wirepool::sql {
namespace {

struct VerbCase {
  std::string_view stmt;
  std::string_view verb;
};

void check(Dialect d, const std::vector<VerbCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(d)) + ": " + std::string(c.stmt));
    EXPECT_EQ(command_verb(c.stmt, d), c.verb);
  }
}

const std::vector<VerbCase> kCommon = {
    {"select 1", "SELECT"},
    {"  /* c */ -- d\n SELECT 1", "SELECT"},
    {"(SELECT 1) UNION (SELECT 2)", "SELECT"},
    {"VALUES (1), (2)", "SELECT"},
    {"TABLE t", "SELECT"},
    {"insert into t values (1)", "INSERT"},
    {"INSERT OR REPLACE INTO t VALUES (1)", "INSERT"},
    {"REPLACE INTO t VALUES (1)", "INSERT"},
    {"UPDATE t SET a = 1", "UPDATE"},
    {"DELETE FROM t", "DELETE"},
    {"MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE", "MERGE"},
    {"CREATE TABLE t (a int)", "CREATE TABLE"},
    {"CREATE TEMP TABLE t (a)", "CREATE TABLE"},
    {"create temporary table t (a)", "CREATE TABLE"},
    {"CREATE VIRTUAL TABLE t USING fts5(a)", "CREATE TABLE"},
    {"CREATE TABLE IF NOT EXISTS t (a)", "CREATE TABLE"},
    {"CREATE UNIQUE INDEX i ON t (a)", "CREATE INDEX"},
    {"CREATE INDEX IF NOT EXISTS i ON t (a)", "CREATE INDEX"},
    {"CREATE VIEW v AS SELECT 1", "CREATE VIEW"},
    {"CREATE OR REPLACE VIEW v AS SELECT 1", "CREATE VIEW"},
    {"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", "CREATE TRIGGER"},
    {"CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", "CREATE TRIGGER"},
    {"CREATE SCHEMA s", "CREATE SCHEMA"},
    {"CREATE MATERIALIZED VIEW m AS SELECT 1", "CREATE MATERIALIZED VIEW"},
    {"CREATE OR REPLACE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql",
     "CREATE FUNCTION"},
    {"CREATE FOREIGN DATA WRAPPER w", "CREATE FOREIGN DATA WRAPPER"},
    {"CREATE FOREIGN TABLE f (a int) SERVER s", "CREATE FOREIGN TABLE"},
    {"CREATE UNLOGGED TABLE t (a int)", "CREATE TABLE"},
    {"CREATE CONSTRAINT TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()",
     "CREATE TRIGGER"},
    {"CREATE USER u", "CREATE USER"},
    {"CREATE USER MAPPING FOR u SERVER s", "CREATE USER MAPPING"},
    {"CREATE", "CREATE"},
    {"DROP TABLE IF EXISTS t", "DROP TABLE"},
    {"DROP INDEX i", "DROP INDEX"},
    {"DROP MATERIALIZED VIEW m", "DROP MATERIALIZED VIEW"},
    {"ALTER TABLE t ADD COLUMN b", "ALTER TABLE"},
    {"ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO u", "ALTER DEFAULT PRIVILEGES"},
    {"BEGIN", "BEGIN"},
    {"begin immediate transaction", "BEGIN"},
    {"START TRANSACTION", "START TRANSACTION"},
    {"COMMIT", "COMMIT"},
    {"END", "COMMIT"},
    {"end transaction", "COMMIT"},
    {"ROLLBACK", "ROLLBACK"},
    {"ABORT", "ROLLBACK"},
    {"ROLLBACK TO SAVEPOINT a", "ROLLBACK"},
    {"COMMIT PREPARED 'x'", "COMMIT PREPARED"},
    {"ROLLBACK PREPARED 'x'", "ROLLBACK PREPARED"},
    {"PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"},
    {"PREPARE p AS SELECT 1", "PREPARE"},
    {"SAVEPOINT a", "SAVEPOINT"},
    {"RELEASE SAVEPOINT a", "RELEASE"},
    {"SET search_path = x", "SET"},
    {"SHOW TimeZone", "SHOW"},
    {"PRAGMA foreign_keys", "PRAGMA"},
    {"VACUUM", "VACUUM"},
    {"ANALYZE t", "ANALYZE"},
    {"ANALYSE", "ANALYZE"},
    {"EXPLAIN QUERY PLAN SELECT 1", "EXPLAIN"},
    {"TRUNCATE t", "TRUNCATE TABLE"},
    {"LOCK TABLE t", "LOCK TABLE"},
    {"DISCARD ALL", "DISCARD ALL"},
    {"DEALLOCATE ALL", "DEALLOCATE ALL"},
    {"DEALLOCATE p1", "DEALLOCATE"},
    {"LISTEN c", "LISTEN"},
    {"REFRESH MATERIALIZED VIEW m", "REFRESH MATERIALIZED VIEW"},
    {"WITH x AS (SELECT 1) SELECT * FROM x", "SELECT"},
    {"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) INSERT INTO t "
     "SELECT n FROM c",
     "INSERT"},
    {"WITH a AS (DELETE FROM t RETURNING *), b AS MATERIALIZED (SELECT 1) UPDATE u SET x = 1",
     "UPDATE"},
    {"WITH a AS (SELECT ')' AS p, '(' AS q) DELETE FROM t", "DELETE"},
    {"WITH a AS NOT MATERIALIZED (VALUES (1)) VALUES (2)", "SELECT"},
    {"", ""},
    {"  -- only a comment", ""},
    {";", ""},
    {"; SELECT 1", "SELECT"},
};

TEST(CommandVerb, CommonStatementsInEveryDialect) {
  for (Dialect d :
       {Dialect::ansi, Dialect::postgres, Dialect::sqlite, Dialect::mysql, Dialect::tsql}) {
    check(d, kCommon);
  }
}

TEST(CommandVerb, PostgresCursorsAndDollarBodies) {
  check(Dialect::postgres, {
                               {"DECLARE c CURSOR FOR SELECT 1", "DECLARE CURSOR"},
                               {"CLOSE c", "CLOSE CURSOR"},
                               {"CLOSE ALL", "CLOSE CURSOR ALL"},
                               {"WITH a AS (SELECT $$ ) UPDATE $$) DELETE FROM t", "DELETE"},
                               {"/* a /* nested */ still */ SELECT 1", "SELECT"},
                           });
}

TEST(CommandVerb, TsqlAndMysqlForms) {
  check(Dialect::tsql, {
                           {"CREATE OR ALTER PROCEDURE p AS SELECT 1", "CREATE PROCEDURE"},
                           {"CREATE NONCLUSTERED INDEX i ON t (a)", "CREATE INDEX"},
                           {"BEGIN TRAN", "BEGIN"},
                           {"DECLARE @x int", "DECLARE"},
                       });
  check(Dialect::mysql, {
                            {"# c\nSELECT 1", "SELECT"},
                            {"DROP TEMPORARY TABLE t", "DROP TABLE"},
                            {"CREATE FULLTEXT INDEX i ON t (a)", "CREATE INDEX"},
                            {"START TRANSACTION READ ONLY", "START TRANSACTION"},
                        });
}

TEST(InsertsOneRow, OnlyASingleTupleInsertWithNothingAfterIt) {
  for (Dialect d : {Dialect::postgres, Dialect::mysql, Dialect::sqlite, Dialect::ansi}) {
    SCOPED_TRACE(std::string(to_string(d)));
    EXPECT_TRUE(inserts_one_row("INSERT INTO t VALUES (?, ?)", d));
    EXPECT_TRUE(inserts_one_row("insert into s.t (a, b) values ($1, f($2, ')'));", d));
    EXPECT_TRUE(inserts_one_row("INSERT /* c */ INTO t(a) VALUES (1) -- done", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1), (2)", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t SELECT * FROM u", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1) RETURNING id", d));
    EXPECT_FALSE(inserts_one_row("INSERT IGNORE INTO t VALUES (1)", d));
    EXPECT_FALSE(inserts_one_row("INSERT OR REPLACE INTO t VALUES (1)", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t DEFAULT VALUES", d));
    EXPECT_FALSE(inserts_one_row("UPDATE t SET a = 1", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1); DELETE FROM t", d));
    EXPECT_FALSE(inserts_one_row("INSERT INTO t VALUES (1", d));
  }
  EXPECT_TRUE(inserts_one_row("INSERT INTO `my t` VALUES (?)", Dialect::mysql));
  EXPECT_TRUE(inserts_one_row("INSERT INTO \"my t\" VALUES ($1)", Dialect::postgres));
}

}  // namespace
}  // namespace wirepool::sql
