// Where the session layer sends a statement.
//
// Cases: transaction control (BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK,
// ABORT; not ROLLBACK TO SAVEPOINT, COMMIT PREPARED, ROLLBACK PREPARED) for
// every backend; SET/RESET/SHOW, DISCARD, DEALLOCATE and LISTEN/NOTIFY kept by
// the session for backends without settings, passed through for those with
// them, except DEALLOCATE and DISCARD ALL, which are always the session's; MySQL's SHOW goes to
// MySQL; comments before the statement; the verb for the command tag.
// begins_read_only: BEGIN / START TRANSACTION with READ ONLY among its modes
// (with an isolation level, commas or not, any case, first of several
// statements), or a plain BEGIN followed at once by SET TRANSACTION ... READ
// ONLY; not READ WRITE, a plain BEGIN, SET TRANSACTION READ ONLY alone, a
// later statement's READ ONLY, or SERIALIZABLE (a standby refuses it).
// sets_transaction_read_only / begins_movable: the SET TRANSACTION that moves
// a transaction opened by a plain BEGIN to a standby, and that BEGIN;
// transaction_read_only = on in the forms read exactly (SET [LOCAL | SESSION]
// with = or TO and the values parse_bool reads as true, quoted or not;
// set_config with literal arguments), and the doubtful ones that are not.
// reads_only: SELECT/VALUES/TABLE/WITH queries, several of them, comments and
// literals naming writes; not DML, a data-modifying CTE, FOR UPDATE/SHARE,
// SELECT INTO, nextval/setval/advisory locks/set_config/pg_notify, transaction
// control or SET among the statements, nor text read with backslash quotes.

#include <gtest/gtest.h>

#include "session/statement.hpp"

namespace wirepool::server {
namespace {

StatementKind kind(std::string_view stmt, sql::Dialect d = sql::Dialect::sqlite,
                   bool keeps = false) {
  return classify(stmt, d, keeps).kind;
}

TEST(Classify, TransactionControl) {
  EXPECT_EQ(kind("BEGIN"), StatementKind::begin);
  EXPECT_EQ(kind("begin immediate"), StatementKind::begin);
  EXPECT_EQ(kind("START TRANSACTION ISOLATION LEVEL SERIALIZABLE"), StatementKind::begin);
  EXPECT_EQ(kind("COMMIT"), StatementKind::commit);
  EXPECT_EQ(kind("END"), StatementKind::commit);
  EXPECT_EQ(kind("ROLLBACK"), StatementKind::rollback);
  EXPECT_EQ(kind("ABORT"), StatementKind::rollback);
  EXPECT_EQ(kind("/* x */ -- y\n commit work"), StatementKind::commit);
  // Transaction control stays with the contract even for PostgreSQL backends.
  EXPECT_EQ(kind("BEGIN", sql::Dialect::postgres, true), StatementKind::begin);
}

TEST(Classify, SavepointsAndTwoPhaseGoToTheBackend) {
  EXPECT_EQ(kind("ROLLBACK TO SAVEPOINT a"), StatementKind::backend);
  EXPECT_EQ(kind("ROLLBACK TRANSACTION TO a"), StatementKind::backend);
  EXPECT_EQ(kind("COMMIT PREPARED 'x'"), StatementKind::backend);
  EXPECT_EQ(kind("ROLLBACK PREPARED 'x'"), StatementKind::backend);
  EXPECT_EQ(kind("SAVEPOINT a"), StatementKind::backend);
}

TEST(Classify, SessionStatementsForBackendsWithoutSettings) {
  EXPECT_EQ(kind("SET x = 1"), StatementKind::setting);
  EXPECT_EQ(kind("RESET ALL"), StatementKind::setting);
  EXPECT_EQ(kind("SHOW server_version"), StatementKind::setting);
  EXPECT_EQ(kind("DISCARD ALL"), StatementKind::discard);
  EXPECT_EQ(kind("DEALLOCATE ALL"), StatementKind::deallocate);
  EXPECT_EQ(kind("LISTEN ch"), StatementKind::listen);
  EXPECT_EQ(kind("NOTIFY ch"), StatementKind::listen);
}

TEST(Classify, BackendsWithSettingsReceiveThem) {
  for (auto stmt : {"SET x = 1", "SHOW x", "DISCARD PLANS", "LISTEN ch"}) {
    EXPECT_EQ(kind(stmt, sql::Dialect::postgres, true), StatementKind::backend) << stmt;
  }
}

TEST(Classify, StatementNamesAndDiscardAllStayWithTheSession) {
  // The client's statement names are the session's own, for every backend.
  EXPECT_EQ(kind("DEALLOCATE a", sql::Dialect::postgres, true), StatementKind::deallocate);
  EXPECT_EQ(kind("DISCARD ALL", sql::Dialect::postgres, true), StatementKind::discard);
}

TEST(Classify, MysqlShowGoesToMysql) {
  EXPECT_EQ(kind("SHOW TABLES", sql::Dialect::mysql), StatementKind::backend);
  EXPECT_EQ(kind("SET x = 1", sql::Dialect::mysql), StatementKind::setting);
}

TEST(Classify, VerbForTags) {
  EXPECT_EQ(classify("insert into t values (1)", sql::Dialect::sqlite, false).verb, "INSERT");
  EXPECT_EQ(classify("START TRANSACTION", sql::Dialect::sqlite, false).verb, "START TRANSACTION");
  EXPECT_EQ(kind("SELECT 1"), StatementKind::backend);
}

TEST(Classify, BlockRulesAreTheOnesPostgreSQLApplies) {
  auto rule = [](std::string_view stmt) {
    auto c = classify(stmt, sql::Dialect::postgres, true);
    return std::make_pair(c.block, std::string(c.block_name));
  };
  using R = BlockRule;
  EXPECT_EQ(rule("SAVEPOINT a"), std::make_pair(R::require, std::string("SAVEPOINT")));
  EXPECT_EQ(rule("release savepoint a"),
            std::make_pair(R::require, std::string("RELEASE SAVEPOINT")));
  EXPECT_EQ(rule("ROLLBACK TO a").first, R::require);
  EXPECT_EQ(rule("rollback work to savepoint a").second, "ROLLBACK TO SAVEPOINT");
  EXPECT_EQ(rule("LOCK TABLE t").second, "LOCK TABLE");
  EXPECT_EQ(rule("DECLARE c CURSOR FOR SELECT 1").second, "DECLARE CURSOR");
  EXPECT_EQ(rule("DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT 1").first, R::any);
  EXPECT_EQ(rule("SET LOCAL work_mem = '1MB'").first, R::warn);
  EXPECT_EQ(rule("SET TRANSACTION READ ONLY").second, "SET TRANSACTION");
  EXPECT_EQ(rule("SET work_mem = '1MB'").first, R::any);
  for (auto s :
       {"VACUUM t", "CREATE DATABASE d", "DROP DATABASE d", "ALTER SYSTEM SET x = 1",
        "CREATE INDEX CONCURRENTLY i ON t (a)", "create unique index concurrently i on t (a)",
        "DROP INDEX CONCURRENTLY i", "REINDEX TABLE CONCURRENTLY t", "REINDEX DATABASE d",
        "COMMIT PREPARED 'x'", "CREATE TABLESPACE s LOCATION '/x'", "CLUSTER"}) {
    EXPECT_EQ(rule(s).first, R::prevent) << s;
  }
  for (auto s : {"SELECT 1", "INSERT INTO t VALUES (1)", "CREATE INDEX i ON t (a)", "CLUSTER t",
                 "ROLLBACK", "COMMIT"}) {
    EXPECT_EQ(rule(s).first, R::any) << s;
  }
  // Other dialects have no such rules here.
  EXPECT_EQ(classify("SAVEPOINT a", sql::Dialect::sqlite, false).block, R::any);
}

TEST(Statement, BeginsReadOnly) {
  EXPECT_TRUE(begins_read_only("BEGIN READ ONLY"));
  EXPECT_TRUE(begins_read_only("begin transaction read only;"));
  EXPECT_TRUE(begins_read_only("START TRANSACTION READ ONLY"));
  EXPECT_TRUE(begins_read_only("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"));
  EXPECT_FALSE(begins_read_only("BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"));
  EXPECT_FALSE(begins_read_only("START TRANSACTION READ ONLY, ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_TRUE(begins_read_only("  /* c */ BEGIN READ ONLY; SELECT 1; COMMIT"));
  EXPECT_FALSE(begins_read_only("BEGIN"));
  EXPECT_FALSE(begins_read_only("BEGIN READ WRITE"));
  // Comments are not modes.
  EXPECT_FALSE(begins_read_only("BEGIN /* READ ONLY */"));
  EXPECT_FALSE(begins_read_only("BEGIN -- READ ONLY\n"));
  EXPECT_TRUE(begins_read_only("BEGIN /* x */ READ /* y */ ONLY"));
  EXPECT_FALSE(begins_read_only("BEGIN ISOLATION LEVEL READ COMMITTED"));
  EXPECT_FALSE(begins_read_only("BEGIN ISOLATION LEVEL REPEATABLE READ"));
  EXPECT_FALSE(begins_read_only("START TRANSACTION"));
  EXPECT_FALSE(begins_read_only("SET TRANSACTION READ ONLY"));
  EXPECT_FALSE(begins_read_only("SELECT 'READ ONLY'"));
  EXPECT_FALSE(begins_read_only(""));
  // A plain BEGIN and SET TRANSACTION ... READ ONLY in one Query.
  EXPECT_TRUE(begins_read_only("BEGIN; SET TRANSACTION READ ONLY"));
  EXPECT_TRUE(begins_read_only("start transaction; set transaction read only; select 1"));
  EXPECT_TRUE(begins_read_only(
      "BEGIN; SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1"));
  EXPECT_TRUE(
      begins_read_only("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL TRANSACTION READ ONLY"));
  EXPECT_FALSE(begins_read_only("BEGIN; SELECT 1; SET TRANSACTION READ ONLY"));
  EXPECT_FALSE(begins_read_only("BEGIN; SET TRANSACTION READ WRITE"));
  EXPECT_FALSE(begins_read_only("BEGIN; SET TRANSACTION /* READ ONLY */ READ WRITE"));
  EXPECT_FALSE(begins_read_only("BEGIN; SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"));
  // A standby refuses SERIALIZABLE: such a transaction keeps the primary.
  EXPECT_FALSE(begins_read_only("BEGIN ISOLATION LEVEL SERIALIZABLE; SET TRANSACTION READ ONLY"));
  EXPECT_FALSE(begins_read_only("BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY"));
}

TEST(Statement, SetTransactionReadOnlyMovesOnlyAPlainBegin) {
  EXPECT_TRUE(sets_transaction_read_only("SET TRANSACTION READ ONLY"));
  EXPECT_TRUE(
      sets_transaction_read_only("set transaction isolation level repeatable read read only"));
  EXPECT_TRUE(sets_transaction_read_only("SET LOCAL TRANSACTION READ ONLY, DEFERRABLE"));
  EXPECT_TRUE(sets_transaction_read_only("SET SESSION TRANSACTION READ ONLY"));
  EXPECT_FALSE(sets_transaction_read_only("SET TRANSACTION READ WRITE"));
  EXPECT_FALSE(sets_transaction_read_only("SET TRANSACTION SNAPSHOT '00000003-1'"));
  EXPECT_FALSE(sets_transaction_read_only("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"));
  EXPECT_FALSE(
      sets_transaction_read_only("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY"));
  EXPECT_FALSE(sets_transaction_read_only("SELECT 'SET TRANSACTION READ ONLY'"));
  EXPECT_TRUE(begins_movable("BEGIN"));
  EXPECT_TRUE(begins_movable("start transaction;"));
  EXPECT_TRUE(begins_movable("BEGIN ISOLATION LEVEL REPEATABLE READ"));
  EXPECT_TRUE(begins_movable("BEGIN READ WRITE"));
  EXPECT_FALSE(begins_movable("BEGIN READ ONLY"));  // routed at BEGIN already
  EXPECT_FALSE(begins_movable("BEGIN ISOLATION LEVEL SERIALIZABLE"));
  EXPECT_FALSE(begins_movable("BEGIN; SELECT 1"));
  EXPECT_FALSE(begins_movable("SELECT 1"));
  EXPECT_FALSE(begins_movable(""));
}

TEST(Statement, TransactionReadOnlyOnIsSetTransactionReadOnly) {
  for (const char* stmt : {
           "SET transaction_read_only = on",
           "SET LOCAL transaction_read_only TO on",
           "set session transaction_read_only to TRUE",
           "SET transaction_read_only = 1",
           "SET transaction_read_only = 'on'",
           "SET transaction_read_only = E'yes';",
           "SET transaction_read_only = $$t$$",
           "SET transaction_read_only = y",
           "SET /* c */ transaction_read_only -- c\n = on",
           "SELECT set_config('transaction_read_only', 'on', true)",
           "select SET_CONFIG('Transaction_Read_Only','true',false);",
       }) {
    EXPECT_TRUE(sets_transaction_read_only(stmt)) << stmt;
  }
  for (const char* stmt : {
           "SET transaction_read_only = off",
           "SET transaction_read_only = DEFAULT",
           "SET transaction_read_only = o",  // ambiguous: PostgreSQL refuses it
           "SET transaction_read_only = 'on '",
           "SET transaction_read_only = 10",
           "SET transaction_read_only = -1",
           "SET transaction_read_only",
           "SET transaction_read_only = on, off",
           "SET \"transaction_read_only\" = on",  // a quoted name: not read here
           "SET transaction_read_write = on",
           "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
           "RESET transaction_read_only",
           "SELECT set_config('transaction_read_only', 'off', true)",
           "SELECT set_config('transaction_read_only', 'on', true), 1",
           "SELECT set_config('transaction_read_only', $1, true)",
           "SELECT set_config('transaction_isolation', 'on', true)",
           "SELECT 'SET transaction_read_only = on'",
       }) {
    EXPECT_FALSE(sets_transaction_read_only(stmt)) << stmt;
  }
  // BEGIN then the setting in one Query: routed at BEGIN, as SET TRANSACTION is.
  EXPECT_TRUE(begins_read_only("BEGIN; SET transaction_read_only = on; SELECT 1"));
}

TEST(Statement, ReadsOnly) {
  EXPECT_TRUE(reads_only("SELECT pg_is_in_recovery()"));
  EXPECT_TRUE(reads_only("select 1; values (2); table t"));
  EXPECT_TRUE(reads_only("/* insert */ SELECT 'update', \"delete\" FROM t -- into\n"));
  EXPECT_TRUE(reads_only("WITH a AS (SELECT 1) SELECT * FROM a"));
  EXPECT_TRUE(reads_only("SELECT f()"));  // the standby answers for f
  EXPECT_FALSE(reads_only(""));
  EXPECT_FALSE(reads_only("INSERT INTO t VALUES (1)"));
  EXPECT_FALSE(reads_only("SELECT 1; UPDATE t SET a = 1"));
  EXPECT_FALSE(reads_only("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"));
  EXPECT_FALSE(reads_only("SELECT * FROM t FOR UPDATE"));
  EXPECT_FALSE(reads_only("SELECT * FROM t FOR NO KEY UPDATE"));
  EXPECT_FALSE(reads_only("SELECT * FROM t FOR SHARE"));
  EXPECT_FALSE(reads_only("SELECT * INTO t2 FROM t"));
  EXPECT_FALSE(reads_only("SELECT nextval('s')"));
  EXPECT_FALSE(reads_only("SELECT pg_catalog.SETVAL('s', 1)"));
  EXPECT_FALSE(reads_only("SELECT pg_advisory_lock(1)"));
  EXPECT_FALSE(reads_only("SELECT pg_try_advisory_xact_lock(1)"));
  EXPECT_FALSE(reads_only("SELECT set_config('a.b', 'c', false)"));
  EXPECT_FALSE(reads_only("SELECT pg_notify('c', 'x')"));
  EXPECT_FALSE(reads_only("BEGIN; SELECT 1; COMMIT"));
  EXPECT_FALSE(reads_only("SET search_path = a; SELECT 1"));
  EXPECT_FALSE(reads_only("SHOW search_path"));
  EXPECT_FALSE(reads_only("SELECT 'a\\'; DELETE FROM t; --'", true));
}

}  // namespace
}  // namespace wirepool::server
