// Transactions, the busy guard, cancel and multi-statement text against the
// live MariaDB:
//  - commit and rollback, seen from another connection; tx_state from the
//    server's status flags (idle, in_transaction) after every call, also for a
//    transaction the client's own text starts;
//  - a deadlock (1213) rolls the transaction back: 40P01, and COMMIT then
//    answers an error instead of committing nothing;
//  - BEGIN ISOLATION LEVEL SERIALIZABLE reaches the server as SET TRANSACTION
//    before START TRANSACTION; BEGIN READ ONLY refuses a write (25006);
//  - every call while a reader is open answers Busy (55000); closing it
//    frees the connection; reset() rolls back and drops an open reader;
//  - cancel() from another thread: SELECT SLEEP(30) returns within a second
//    (MariaDB ends the SLEEP early, without an error), a lock wait answers
//    57014; cancel when idle is harmless;
//  - reset() leaves a clean session (no transaction, user variables, temporary
//    tables; UTC again) and statements prepared before it still run;
//  - multi-statement text returns each result in turn (rows, affected counts,
//    verbs); an error in a later statement surfaces at next_result(); a
//    prepared statement refuses several commands (42601);
//  - a connection closed with a reader open: the reader and the statements
//    answer Closed afterwards;
//  - a procedure's several results, in turn, through both protocols, and
//    dropped when the reader is closed early.

#include <chrono>
#include <thread>

#include "tests/integration/mysql/mysql_fixture.hpp"

namespace wirepool::mysql_it {
namespace {

class Session : public MysqlTest {};

int64_t count(Connection& c, const std::string& t) {
  return scalar(c, "SELECT COUNT(*) FROM " + t).i64;
}

TEST_F(Session, CommitAndRollbackSeenFromAnotherConnection) {
  Connection a = open();
  Connection b = open();
  exec(a, "DROP TABLE IF EXISTS " + table());
  exec(a, "CREATE TABLE " + table() + " (id INT PRIMARY KEY) ENGINE=InnoDB");
  EXPECT_EQ(a.tx_state(), db::TxState::idle);
  auto tx = a.begin();
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  EXPECT_EQ(a.tx_state(), db::TxState::in_transaction);
  ASSERT_TRUE(
      tx->execute("INSERT INTO " + table() + " VALUES (?)", std::vector<Param>{P(I(1))}).ok());
  EXPECT_EQ(count(b, table()), 0);
  ASSERT_TRUE(tx->commit().ok());
  EXPECT_EQ(a.tx_state(), db::TxState::idle);
  EXPECT_EQ(count(b, table()), 1);

  auto tx2 = a.begin();
  ASSERT_TRUE(tx2.ok());
  ASSERT_TRUE(tx2->execute("INSERT INTO " + table() + " VALUES (2)").ok());
  ASSERT_TRUE(tx2->rollback().ok());
  EXPECT_EQ(count(a, table()), 1);

  // The client's own text: the state comes from the server's flags.
  exec(a, "START TRANSACTION");
  EXPECT_EQ(a.tx_state(), db::TxState::in_transaction);
  exec(a, "INSERT INTO " + table() + " VALUES (3)");
  exec(a, "COMMIT");
  EXPECT_EQ(a.tx_state(), db::TxState::idle);
  EXPECT_EQ(count(b, table()), 2);
}

TEST_F(Session, BeginWithAnIsolationLevelStartsATransaction) {
  Connection a = open();
  db::BeginOptions o;
  o.native_sql = "BEGIN ISOLATION LEVEL SERIALIZABLE";
  // SET TRANSACTION inside an open transaction is refused by the server (1568),
  // so this passes only when the level is set before START TRANSACTION.
  auto tx = a.begin(o);
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  EXPECT_EQ(a.tx_state(), db::TxState::in_transaction);
  ASSERT_TRUE(tx->commit().ok());
  exec(a, "DROP TABLE IF EXISTS " + table());
  exec(a, "CREATE TABLE " + table() + " (id INT) ENGINE=InnoDB");
  o.native_sql = "BEGIN READ ONLY";
  auto ro = a.begin(o);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  const db::Error e = error_of(a, "INSERT INTO " + table() + " VALUES (1)");
  EXPECT_EQ(e.sqlstate, "25006") << e.vendor_code << " " << e.message;
  ASSERT_TRUE(ro->rollback().ok());
}

TEST_F(Session, DeadlockRollsBackAndCommitSaysSo) {
  Connection a = open();
  Connection b = open();
  exec(a, "DROP TABLE IF EXISTS " + table());
  exec(a, "CREATE TABLE " + table() + " (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
  exec(a, "INSERT INTO " + table() + " VALUES (1, 0), (2, 0)");
  auto ta = a.begin();
  auto tb = b.begin();
  ASSERT_TRUE(ta.ok() && tb.ok());
  exec(a, "UPDATE " + table() + " SET v = 1 WHERE id = 1");
  exec(b, "UPDATE " + table() + " SET v = 1 WHERE id = 2");
  // a waits for b's row; b then asks for a's: one of them is the deadlock victim.
  std::optional<db::Error> a_error;
  std::thread waiter([&] {
    auto r = fetch(a, "UPDATE " + table() + " SET v = 2 WHERE id = 2");
    if (!r.ok()) a_error = r.error();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto rb = fetch(b, "UPDATE " + table() + " SET v = 2 WHERE id = 1");
  waiter.join();
  Connection& victim = rb.ok() ? a : b;
  const db::Error e = rb.ok() ? a_error.value_or(db::Error{}) : rb.error();
  EXPECT_EQ(e.sqlstate, "40P01") << e.message;
  EXPECT_EQ(e.vendor_code, 1213);
  EXPECT_EQ(victim.tx_state(), db::TxState::failed);
  db::Transaction& vtx = rb.ok() ? ta.value() : tb.value();
  db::Transaction& wtx = rb.ok() ? tb.value() : ta.value();
  auto st = vtx.commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().sqlstate, "40P01");
  EXPECT_EQ(victim.tx_state(), db::TxState::idle);
  ASSERT_TRUE(wtx.commit().ok());
}

TEST_F(Session, EveryCallWhileAReaderIsOpenIsBusy) {
  Connection c = open();
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    auto rows = prepared ? c.query("SELECT seq FROM seq_1_to_1000 WHERE seq > ?",
                                   std::vector<Param>{P(I(0))})
                         : c.query("SELECT seq FROM seq_1_to_1000");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    std::vector<Value> row(1);
    ASSERT_TRUE(rows->next(row).value());
    auto q = c.query("SELECT 1");
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.error().code, Errc::busy);
    EXPECT_EQ(q.error().sqlstate, "55000");
    EXPECT_EQ(c.prepare("SELECT ?").error().code, Errc::busy);
    EXPECT_EQ(c.begin().error().code, Errc::busy);
    ASSERT_TRUE(rows->close().ok());  // the rest is read and dropped
    EXPECT_EQ(scalar(c, "SELECT 2").i64, 2);
  }
  // reset() drops a reader left open and rolls back.
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  auto rows = c.query("SELECT seq FROM seq_1_to_1000");
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(c.reset("").ok());
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  EXPECT_EQ(scalar(c, "SELECT 3").i64, 3);
}

TEST_F(Session, CancelSleepWithinASecond) {
  Connection c = open();
  c.cancel();  // idle: harmless
  EXPECT_EQ(scalar(c, "SELECT 1").i64, 1);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c.cancel();
  });
  auto r = fetch(c, "SELECT SLEEP(30)");
  canceller.join();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  // MariaDB ends an interrupted SLEEP early and answers 1, not an error.
  if (r.ok()) {
    EXPECT_EQ(r->rows[0][0].i64, 1);
  } else {
    EXPECT_EQ(r.error().sqlstate, "57014");
  }
  EXPECT_EQ(scalar(c, "SELECT 5").i64, 5);
}

TEST_F(Session, CancelOfALockWaitIs57014) {
  Connection a = open();
  Connection b = open();
  exec(a, "DROP TABLE IF EXISTS " + table());
  exec(a, "CREATE TABLE " + table() + " (id INT PRIMARY KEY) ENGINE=InnoDB");
  exec(a, "INSERT INTO " + table() + " VALUES (1)");
  auto tx = a.begin();
  ASSERT_TRUE(tx.ok());
  exec(a, "SELECT * FROM " + table() + " WHERE id = 1 FOR UPDATE");
  const auto t0 = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    b.cancel();
  });
  auto r = fetch(b, "SELECT * FROM " + table() + " WHERE id = 1 FOR UPDATE");
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "57014");
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_EQ(r.error().vendor_code, 1317);
  ASSERT_TRUE(tx->rollback().ok());
}

TEST_F(Session, MultiStatementTextReturnsEachResultInTurn) {
  Connection c = open();
  exec(c, "DROP TABLE IF EXISTS " + table());
  auto rows = c.query("CREATE TABLE " + table() + " (id INT); INSERT INTO " + table() +
                      " VALUES (1), (2); SELECT id FROM " + table() +
                      " ORDER BY id; SELECT 'x' AS s; UPDATE " + table() + " SET id = id + 10");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_TRUE(rows->columns().empty());
  EXPECT_EQ(rows->command().verb, "CREATE TABLE");
  ASSERT_TRUE(rows->next_result().value());
  EXPECT_EQ(rows->command().verb, "INSERT");
  EXPECT_EQ(rows->command().affected, 2);
  ASSERT_TRUE(rows->next_result().value());
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[1][0].i64, 2);
  EXPECT_EQ(t->info.verb, "SELECT");
  ASSERT_TRUE(rows->next_result().value());
  ASSERT_EQ(rows->columns().size(), 1u);
  EXPECT_EQ(rows->columns()[0].name, "s");
  // Not read: next_result drops it.
  ASSERT_TRUE(rows->next_result().value());
  EXPECT_EQ(rows->command().verb, "UPDATE");
  EXPECT_EQ(rows->command().affected, 2);
  EXPECT_FALSE(rows->next_result().value());
  ASSERT_TRUE(rows->close().ok());
  EXPECT_EQ(scalar(c, "SELECT SUM(id) FROM " + table()).kind, Kind::Decimal);

  // An error in the second statement: the first ran, the error comes next.
  auto bad = c.query("SELECT 1; SELEC 2; SELECT 3");
  ASSERT_TRUE(bad.ok());
  auto first = read_all(bad.value());
  ASSERT_TRUE(first.ok());
  auto next = bad->next_result();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().sqlstate, "42601");
  ASSERT_TRUE(bad->close().ok());
  EXPECT_EQ(scalar(c, "SELECT 4").i64, 4);

  // Closing a reader early drops the results still to come.
  auto early = c.query("SELECT 1; SELECT 2; SELECT 3");
  ASSERT_TRUE(early.ok());
  ASSERT_TRUE(early->close().ok());
  EXPECT_EQ(scalar(c, "SELECT 6").i64, 6);

  auto st = c.prepare("SELECT 1; SELECT 2");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().sqlstate, "42601");
}

TEST_F(Session, ProcedureResultsInTurnThroughBothProtocols) {
  Connection c = open();
  const std::string proc = table("_p");
  exec(c, "DROP PROCEDURE IF EXISTS " + proc);
  exec(c, "CREATE PROCEDURE " + proc +
              "(IN n INT) BEGIN SELECT n AS a; SELECT n * 2 AS b, 'x' AS c; END");
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    auto rows = prepared ? c.query("CALL " + proc + "(?)", std::vector<Param>{P(I(21))})
                         : c.query("CALL " + proc + "(21)");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    auto first = read_all(rows.value());
    ASSERT_TRUE(first.ok()) << first.error().message;
    ASSERT_EQ(first->rows.size(), 1u);
    EXPECT_EQ(first->rows[0][0].i64, 21);
    auto more = rows->next_result();
    ASSERT_TRUE(more.ok() && more.value()) << (more.ok() ? "" : more.error().message);
    auto second = read_all(rows.value());
    ASSERT_TRUE(second.ok());
    ASSERT_EQ(second->rows.size(), 1u);
    EXPECT_EQ(second->rows[0][0].i64, 42);
    EXPECT_EQ(second->rows[0][1].str, "x");
    // The procedure's own status: a result without rows, then none.
    for (int i = 0; i < 3; ++i) {
      auto r = rows->next_result();
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (!r.value()) break;
      EXPECT_TRUE(rows->columns().empty());
    }
    ASSERT_TRUE(rows->close().ok());
    EXPECT_EQ(scalar(c, "SELECT 9").i64, 9);
    // Closed early: the later results are dropped and the connection is free.
    auto early = prepared ? c.query("CALL " + proc + "(?)", std::vector<Param>{P(I(1))})
                          : c.query("CALL " + proc + "(1)");
    ASSERT_TRUE(early.ok());
    ASSERT_TRUE(early->close().ok());
    EXPECT_EQ(scalar(c, "SELECT 10").i64, 10);
  }
}

TEST_F(Session, ResetLeavesACleanSessionAndStatementsStillRun) {
  Connection c = open();
  auto st = c.prepare("SELECT ? + 1");
  ASSERT_TRUE(st.ok()) << st.error().message;
  exec(c, "SET @left_behind = 5");
  exec(c, "CREATE TEMPORARY TABLE " + table() + " (a INT)");
  exec(c, "SET time_zone = '+05:00'");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(c.reset("").ok());
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  EXPECT_TRUE(scalar(c, "SELECT @left_behind").is_null());
  EXPECT_EQ(error_of(c, "SELECT * FROM " + table()).sqlstate, "42P01");
  EXPECT_EQ(scalar(c, "SELECT @@session.time_zone").str, "+00:00");
  // The statement prepared before the reset is prepared again, transparently.
  auto rows = st->query(std::vector<Param>{P(I(41))});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].i64, 42);
  ASSERT_TRUE(rows->close().ok());
  EXPECT_TRUE(c.alive());
  // The configured reset_query runs after it.
  ASSERT_TRUE(c.reset("SET @after_reset = 1").ok());
  EXPECT_EQ(scalar(c, "SELECT @after_reset").i64, 1);
}

TEST_F(Session, HandlesThatOutliveTheirConnectionAnswerClosed) {
  Connection c = open();
  auto st = c.prepare("SELECT seq FROM seq_1_to_100000 WHERE seq > ?");
  ASSERT_TRUE(st.ok());
  auto other = c.prepare("SELECT ?");
  ASSERT_TRUE(other.ok());
  auto rows = st->query(std::vector<Param>{P(I(0))});
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(rows->next(row).value());
  ASSERT_TRUE(other->close().ok());  // waits for the wire: the reader holds it
  ASSERT_TRUE(c.close().ok());       // with the reader open
  auto more = rows->next(row);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code, Errc::closed);
  auto again = st->query(std::vector<Param>{P(I(0))});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::closed);
  EXPECT_TRUE(rows->close().ok());
  EXPECT_TRUE(st->close().ok());
}

}  // namespace
}  // namespace wirepool::mysql_it
