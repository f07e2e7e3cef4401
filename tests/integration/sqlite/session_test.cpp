// Opening, options, transactions and closed handles against real SQLite files:
//  - relative paths resolve against base_dir; file databases run in WAL mode,
//    :memory: does not; capabilities
//  - seed_sql runs when the file is new and never again; a failing seed leaves no
//    file behind; a missing seed file is an open error
//  - bad options, a directory that does not exist and a file that is not a
//    database answer Errc::connection
//  - foreign_keys on by default, off on request
//  - transactions: commit, rollback, tx_state; BEGIN IMMEDIATE by default (a
//    second writer waits), DEFERRED by option or the client's own BEGIN DEFERRED,
//    PostgreSQL modes ignored; why IMMEDIATE: a deferred read-then-write
//    transaction fails with SQLITE_BUSY_SNAPSHOT (40001) under WAL
//  - a failed COMMIT (deferred foreign key) rolls back: error and idle state
//  - reset rolls back an open transaction and runs the reset query
//  - closed handles: the connection, its readers and statements answer closed

#include <sqlite3.h>
#include <fstream>

#include "tests/integration/sqlite/sqlite_fixture.hpp"

namespace wirepool::sqlite_it {
namespace {

using db::TxState;

class Session : public SqliteTest {
 protected:
  void write_file(const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
  }
};

TEST_F(Session, RelativePathsResolveAgainstBaseDirAndFilesRunInWal) {
  Connection c = open("sub.db");
  EXPECT_TRUE(std::filesystem::exists(path("sub.db")));
  EXPECT_EQ(scalar(c, "PRAGMA journal_mode").str, "wal");
  EXPECT_EQ(scalar(c, "PRAGMA foreign_keys").i64, 1);
  EXPECT_EQ(scalar(c, "PRAGMA busy_timeout").i64, 5000);
  const auto caps = c.capabilities();
  EXPECT_EQ(caps.dialect, sql::Dialect::sqlite);
  EXPECT_TRUE(caps.multi_statement);
  EXPECT_TRUE(caps.blocking);
  EXPECT_FALSE(caps.notices);
  EXPECT_FALSE(caps.copy);
  EXPECT_FALSE(c.set_event_sink(nullptr).ok());

  Connection mem = open(":memory:");
  EXPECT_EQ(scalar(mem, "PRAGMA journal_mode").str, "memory");
  Connection uri = open("file:u.db?cache=private");
  EXPECT_TRUE(std::filesystem::exists(path("u.db")));
  EXPECT_EQ(scalar(uri, "PRAGMA journal_mode").str, "wal");
}

TEST_F(Session, OptionsReachTheConnection) {
  Connection c = open("test.db", {{"busy_timeout", "250ms"}, {"foreign_keys", "off"}});
  EXPECT_EQ(scalar(c, "PRAGMA busy_timeout").i64, 250);
  EXPECT_EQ(scalar(c, "PRAGMA foreign_keys").i64, 0);
  exec(c, "CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE k (p REFERENCES p(id))");
  EXPECT_TRUE(c.execute("INSERT INTO k VALUES (42)").ok());
}

TEST_F(Session, SeedSqlRunsOnlyWhenTheFileIsNew) {
  write_file("seed.sql",
             "CREATE TABLE fruit (name TEXT); INSERT INTO fruit VALUES ('apple'), ('pear');");
  {
    Connection c = open("demo.db", {{"seed_sql", "seed.sql"}});
    EXPECT_EQ(scalar(c, "SELECT count(*) FROM fruit").i64, 2);
    exec(c, "INSERT INTO fruit VALUES ('fig')");
  }
  Connection again = open("demo.db", {{"seed_sql", "seed.sql"}});
  EXPECT_EQ(scalar(again, "SELECT count(*) FROM fruit").i64, 3);
  Connection third = open("demo.db", {{"seed_sql", "seed.sql"}});  // alongside: no reseed either
  EXPECT_EQ(scalar(third, "SELECT count(*) FROM fruit").i64, 3);
}

TEST_F(Session, SeedSqlRunsForEveryNewMemoryDatabase) {
  write_file("seed.sql", "CREATE TABLE fruit (name TEXT); INSERT INTO fruit VALUES ('apple');");
  Connection c = open(":memory:", {{"seed_sql", "seed.sql"}});
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM fruit").i64, 1);
}

TEST_F(Session, FailingSeedLeavesNoFileBehind) {
  write_file("bad.sql", "CREATE TABLE a (x); INSERT INTO nope VALUES (1);");
  auto c = driver().open(options("demo.db", {{"seed_sql", "bad.sql"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "42P01");
  EXPECT_EQ(c.error().message, "no such table: nope");
  EXPECT_NE(c.error().detail.find("bad.sql"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path("demo.db")));
  EXPECT_FALSE(std::filesystem::exists(path("demo.db-wal")));

  auto missing = driver().open(options("demo.db", {{"seed_sql", "missing.sql"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Errc::connection);
  EXPECT_FALSE(std::filesystem::exists(path("demo.db")));
}

TEST_F(Session, OpenFailuresAreConnectionErrors) {
  auto bad = driver().open(options("test.db", {{"begin", "sometimes"}, {"nope", "1"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::connection);
  EXPECT_EQ(bad.error().sqlstate, "22023");
  EXPECT_NE(bad.error().message.find("begin"), std::string::npos);
  EXPECT_NE(bad.error().message.find("nope"), std::string::npos);
  EXPECT_EQ(driver().validate(options("test.db", {{"begin", "sometimes"}})).size(), 1u);

  auto no_dir = driver().open(options("no/such/dir/x.db"));
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.error().code, Errc::connection);
  EXPECT_EQ(no_dir.error().sqlstate, "08006");
  EXPECT_EQ(no_dir.error().vendor_code & 0xff, SQLITE_CANTOPEN);

  write_file("junk.db", std::string(4096, 'x'));
  auto junk = driver().open(options("junk.db"));
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code, Errc::connection);
  EXPECT_EQ(junk.error().sqlstate, "XX001");
  EXPECT_EQ(junk.error().message, "file is not a database");
}

TEST_F(Session, PostgresSessionFunctionsAnswer) {
  Connection c = open();
  EXPECT_EQ(scalar(c, "SELECT substr(version(), 1, 16)").str, "PostgreSQL 15.0 ");
  EXPECT_EQ(scalar(c, "SELECT current_database()").str, "main");
  EXPECT_EQ(scalar(c, "SELECT current_schema()").str, "public");
  EXPECT_GT(scalar(c, "SELECT pg_backend_pid()").i64, 0);
}

TEST_F(Session, CommitRollbackAndState) {
  Connection c = open();
  exec(c, "CREATE TABLE t (a)");
  EXPECT_EQ(c.tx_state(), TxState::idle);
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(c.tx_state(), TxState::in_transaction);
  ASSERT_TRUE(tx->execute("INSERT INTO t VALUES (1)").ok());
  ASSERT_TRUE(tx->commit().ok());
  EXPECT_EQ(c.tx_state(), TxState::idle);

  auto tx2 = c.begin();
  ASSERT_TRUE(tx2.ok());
  ASSERT_TRUE(tx2->execute("INSERT INTO t VALUES (2)").ok());
  auto in_tx = tx2->query("SELECT count(*) FROM t");
  ASSERT_TRUE(in_tx.ok());
  auto seen = read_all(in_tx.value());
  EXPECT_EQ(seen->rows[0][0].i64, 2);
  ASSERT_TRUE(in_tx->close().ok());
  ASSERT_TRUE(tx2->rollback().ok());
  EXPECT_EQ(c.tx_state(), TxState::idle);
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM t").i64, 1);

  // A statement that fails inside a transaction rolls back only itself (SQLite).
  auto tx3 = c.begin();
  ASSERT_TRUE(tx3.ok());
  EXPECT_FALSE(tx3->execute("INSERT INTO nope VALUES (1)").ok());
  EXPECT_EQ(c.tx_state(), TxState::in_transaction);
  ASSERT_TRUE(tx3->execute("INSERT INTO t VALUES (3)").ok());
  ASSERT_TRUE(tx3->commit().ok());
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM t").i64, 2);

  // A transaction begun twice: SQLite's own error.
  auto tx4 = c.begin();
  ASSERT_TRUE(tx4.ok());
  auto nested = c.begin();
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().sqlstate, "25001");
  ASSERT_TRUE(tx4->rollback().ok());
}

TEST_F(Session, BeginIsImmediateByDefaultSoASecondWriterWaits) {
  Connection a = open();
  Connection b = open("test.db", {{"busy_timeout", "50ms"}});
  exec(a, "CREATE TABLE t (a)");
  auto tx = a.begin();  // no write yet, but the write lock is taken
  ASSERT_TRUE(tx.ok());
  auto w = b.execute("INSERT INTO t VALUES (1)");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().sqlstate, "55P03");
  ASSERT_TRUE(tx->rollback().ok());

  // PostgreSQL's modes are ignored: still immediate.
  auto pg = a.begin({"BEGIN ISOLATION LEVEL SERIALIZABLE"});
  ASSERT_TRUE(pg.ok());
  EXPECT_FALSE(b.execute("INSERT INTO t VALUES (1)").ok());
  ASSERT_TRUE(pg->rollback().ok());

  // The client's own SQLite form is honoured.
  auto deferred = a.begin({"begin deferred transaction"});
  ASSERT_TRUE(deferred.ok());
  EXPECT_TRUE(b.execute("INSERT INTO t VALUES (1)").ok());
  ASSERT_TRUE(deferred->rollback().ok());
}

TEST_F(Session, DeferredReadThenWriteFailsWithBusySnapshotWhichIsWhyBeginIsImmediate) {
  Connection a = open("test.db", {{"begin", "deferred"}, {"busy_timeout", "50ms"}});
  Connection b = open();
  exec(a, "CREATE TABLE t (a); INSERT INTO t VALUES (1)");
  auto tx = a.begin();
  ASSERT_TRUE(tx.ok());
  auto read = tx->execute("SELECT count(*) FROM t");  // the snapshot starts here
  ASSERT_TRUE(read.ok());
  exec(b, "INSERT INTO t VALUES (2)");  // another writer commits
  auto write = tx->execute("INSERT INTO t VALUES (3)");
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(write.error().code, Errc::busy);
  EXPECT_EQ(write.error().vendor_code, SQLITE_BUSY_SNAPSHOT);
  EXPECT_EQ(write.error().sqlstate, "40001");
  ASSERT_TRUE(tx->rollback().ok());
}

TEST_F(Session, FailedCommitRollsBackAndReportsTheError) {
  Connection c = open();
  exec(c,
       "CREATE TABLE p (id INTEGER PRIMARY KEY);"
       "CREATE TABLE k (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(tx->execute("INSERT INTO k VALUES (42)").ok());  // checked at COMMIT
  auto commit = tx->commit();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.error().code, Errc::constraint);
  EXPECT_EQ(commit.error().sqlstate, "23503");
  EXPECT_EQ(c.tx_state(), TxState::idle);
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM k").i64, 0);
}

TEST_F(Session, ResetRollsBackAndRunsTheResetQuery) {
  Connection c = open();
  exec(c, "CREATE TABLE t (a)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(tx->execute("INSERT INTO t VALUES (1)").ok());
  ASSERT_TRUE(c.reset("").ok());
  EXPECT_EQ(c.tx_state(), TxState::idle);
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM t").i64, 0);
  ASSERT_TRUE(c.reset("CREATE TABLE r (x); INSERT INTO r VALUES (1)").ok());
  EXPECT_EQ(scalar(c, "SELECT count(*) FROM r").i64, 1);
  EXPECT_FALSE(c.reset("nonsense").ok());
}

TEST_F(Session, ClosedConnectionReadersAndStatementsAnswerClosed) {
  Connection c = open();
  exec(c, "CREATE TABLE t (a); INSERT INTO t VALUES (1), (2)");
  auto rows = c.query("SELECT a FROM t");
  ASSERT_TRUE(rows.ok());
  auto st = c.prepare("SELECT a FROM t");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(c.close().ok());
  EXPECT_FALSE(c.is_open());
  EXPECT_FALSE(c.alive());
  EXPECT_EQ(c.close().error().code, Errc::closed);
  EXPECT_EQ(c.query("SELECT 1").error().code, Errc::closed);
  EXPECT_EQ(c.tx_state(), TxState::idle);
  c.cancel();

  std::vector<Value> row(1);
  auto next = rows->next(row);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code, Errc::closed);
  EXPECT_EQ(next.error().sqlstate, "08003");
  EXPECT_FALSE(rows->next_result().ok());
  ASSERT_TRUE(rows->close().ok());
  EXPECT_EQ(rows->close().error().code, Errc::closed);

  auto q = st->query();
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code, Errc::closed);
  ASSERT_TRUE(st->close().ok());
  EXPECT_EQ(st->close().error().code, Errc::closed);
}

}  // namespace
}  // namespace wirepool::sqlite_it
