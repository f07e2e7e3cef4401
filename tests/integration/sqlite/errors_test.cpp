// Errors from real SQLite, with DESIGN.md's SQLSTATEs, SQLite's own message and
// its extended result code:
//  - unique and primary key -> 23505; foreign key -> 23503; not null -> 23502;
//    check -> 23514; all Errc::constraint
//  - syntax error and incomplete input -> 42601; no such table -> 42P01;
//    no such column -> 42703; no such function -> 42883
//  - busy: a second connection's write while the first holds a write transaction
//    answers Busy 55P03 after busy_timeout, within a bounded time
//  - cancel from another thread interrupts a long query -> Busy 57014, and the
//    connection stays usable
//  - the connection stays usable after each error

#include <sqlite3.h>
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/integration/sqlite/sqlite_fixture.hpp"

namespace wirepool::sqlite_it {
namespace {

using Clock = std::chrono::steady_clock;

class Errors : public SqliteTest {
 protected:
  void SetUp() override {
    SqliteTest::SetUp();
    conn = open();
    exec(conn,
         "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
         "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id),"
         " code TEXT UNIQUE, name TEXT NOT NULL DEFAULT 'x', qty INTEGER CHECK (qty > 0));"
         "INSERT INTO parent VALUES (1);"
         "INSERT INTO child (id, parent, code, qty) VALUES (1, 1, 'a', 1);");
  }

  void expect(std::string_view sql, Errc code, std::string_view sqlstate, int vendor,
              std::string_view message) {
    SCOPED_TRACE(std::string(sql));
    auto r = conn.execute(sql);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(r.error().sqlstate, sqlstate);
    EXPECT_EQ(r.error().vendor_code, vendor);
    EXPECT_EQ(r.error().message, message);
    EXPECT_EQ(scalar(conn, "SELECT 1").i64, 1);  // still usable
  }

  Connection conn;
};

TEST_F(Errors, ConstraintViolationsMapToTheirSqlstates) {
  expect("INSERT INTO child (id, parent, code, qty) VALUES (2, 1, 'a', 1)", Errc::constraint,
         "23505", SQLITE_CONSTRAINT_UNIQUE, "UNIQUE constraint failed: child.code");
  expect("INSERT INTO child (id, parent, code, qty) VALUES (1, 1, 'b', 1)", Errc::constraint,
         "23505", SQLITE_CONSTRAINT_PRIMARYKEY, "UNIQUE constraint failed: child.id");
  expect("INSERT INTO child (id, parent, code, qty) VALUES (3, 99, 'c', 1)", Errc::constraint,
         "23503", SQLITE_CONSTRAINT_FOREIGNKEY, "FOREIGN KEY constraint failed");
  expect("INSERT INTO child (id, parent, code, name, qty) VALUES (4, 1, 'd', NULL, 1)",
         Errc::constraint, "23502", SQLITE_CONSTRAINT_NOTNULL,
         "NOT NULL constraint failed: child.name");
  expect("INSERT INTO child (id, parent, code, qty) VALUES (5, 1, 'e', 0)", Errc::constraint,
         "23514", SQLITE_CONSTRAINT_CHECK, "CHECK constraint failed: qty > 0");
}

TEST_F(Errors, QueryErrorsMapToTheirSqlstates) {
  expect("SELEC 1", Errc::invalid_query, "42601", SQLITE_ERROR, "near \"SELEC\": syntax error");
  expect("SELECT (1", Errc::invalid_query, "42601", SQLITE_ERROR, "incomplete input");
  expect("SELECT * FROM nope", Errc::invalid_query, "42P01", SQLITE_ERROR, "no such table: nope");
  expect("SELECT nope FROM child", Errc::invalid_query, "42703", SQLITE_ERROR,
         "no such column: nope");
  expect("SELECT nope()", Errc::invalid_query, "42883", SQLITE_ERROR, "no such function: nope");
}

TEST_F(Errors, WriteAgainstAHeldWriteTransactionIsBusyAfterTheTimeout) {
  Connection other = open("test.db", {{"busy_timeout", "100ms"}});
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(tx->execute("INSERT INTO parent VALUES (2)").ok());

  const auto start = Clock::now();
  auto r = other.execute("INSERT INTO parent VALUES (3)");
  const auto elapsed = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_EQ(r.error().sqlstate, "55P03");
  EXPECT_EQ(r.error().vendor_code & 0xff, SQLITE_BUSY);
  EXPECT_EQ(r.error().message, "database is locked");
  EXPECT_GE(elapsed, std::chrono::milliseconds(80));
  EXPECT_LT(elapsed, std::chrono::seconds(3));

  auto begin = other.begin();  // BEGIN IMMEDIATE waits for the same lock
  ASSERT_FALSE(begin.ok());
  EXPECT_EQ(begin.error().sqlstate, "55P03");
  EXPECT_EQ(other.tx_state(), db::TxState::idle);

  // WAL: the reader is not blocked, and sees the committed state.
  EXPECT_EQ(scalar(other, "SELECT count(*) FROM parent").i64, 1);
  ASSERT_TRUE(tx->commit().ok());
  EXPECT_EQ(scalar(other, "SELECT count(*) FROM parent").i64, 2);
  EXPECT_TRUE(other.execute("INSERT INTO parent VALUES (3)").ok());
}

TEST_F(Errors, CancelFromAnotherThreadInterruptsALongQuery) {
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Repeat: an interrupt that lands before the statement starts is forgotten.
    while (!done.load()) {
      conn.cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto start = Clock::now();
  auto r = conn.execute(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
      "SELECT count(*) FROM c");
  done = true;
  canceller.join();
  const auto elapsed = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_EQ(r.error().sqlstate, "57014");
  EXPECT_EQ(r.error().vendor_code, SQLITE_INTERRUPT);
  EXPECT_EQ(r.error().message, "canceling statement due to user request");
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  EXPECT_EQ(scalar(conn, "SELECT 1").i64, 1);
}

TEST_F(Errors, CancelWhenIdleIsHarmless) {
  conn.cancel();
  EXPECT_EQ(scalar(conn, "SELECT 2").i64, 2);
}

}  // namespace
}  // namespace wirepool::sqlite_it
