// Transactions and the busy guard:
//  - commit makes rows visible to another connection, rollback discards them;
//    tx_state() follows (idle, in_transaction, failed) after every call
//  - COMMIT of a transaction in which a statement failed answers 25P02 (never a
//    false success: PostgreSQL itself answers ROLLBACK), and the rows are gone
//  - begin() sends the client's own PostgreSQL BEGIN form, and a plain BEGIN for
//    another dialect's (BEGIN IMMEDIATE)
//  - any call while a Rows is open answers busy 55000; after close it works
//  - reset() rolls back an open transaction, abandons an open reader, then runs
//    the reset query (DISCARD ALL)

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

class Transactions : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
    exec(conn, "DROP TABLE IF EXISTS " + table());
    exec(conn, "CREATE TABLE " + table() + " (id int PRIMARY KEY)");
  }
  int64_t count(Connection& c) { return scalar(c, "SELECT count(*) FROM " + table()).i64; }
  Connection conn;
};

TEST_F(Transactions, CommitRollbackAndTxState) {
  Connection other = open();
  EXPECT_EQ(conn.tx_state(), db::TxState::idle);
  auto tx = blocking(conn, [&] { return conn.begin(); });
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(conn.tx_state(), db::TxState::in_transaction);
  exec(conn, "INSERT INTO " + table() + " VALUES (1)");
  EXPECT_EQ(conn.tx_state(), db::TxState::in_transaction);
  EXPECT_EQ(count(other), 0);
  ASSERT_TRUE(blocking(conn, [&] { return tx->commit(); }).ok());
  EXPECT_EQ(conn.tx_state(), db::TxState::idle);
  EXPECT_EQ(count(other), 1);

  auto tx2 = blocking(conn, [&] { return conn.begin(); });
  ASSERT_TRUE(tx2.ok());
  exec(conn, "INSERT INTO " + table() + " VALUES (2)");
  ASSERT_TRUE(blocking(conn, [&] { return tx2->rollback(); }).ok());
  EXPECT_EQ(conn.tx_state(), db::TxState::idle);
  EXPECT_EQ(count(conn), 1);
  // A committed handle answers closed without reaching the driver.
  EXPECT_EQ(tx->commit().error().code, Errc::closed);
}

TEST_F(Transactions, CommitOfAFailedTransactionIsAnError) {
  auto tx = blocking(conn, [&] { return conn.begin(); });
  ASSERT_TRUE(tx.ok());
  exec(conn, "INSERT INTO " + table() + " VALUES (1)");
  const db::Error dup = error_of(conn, "INSERT INTO " + table() + " VALUES (1)");
  EXPECT_EQ(dup.sqlstate, "23505");
  EXPECT_EQ(conn.tx_state(), db::TxState::failed);
  const db::Error aborted = error_of(conn, "SELECT 1");
  EXPECT_EQ(aborted.sqlstate, "25P02");
  auto st = blocking(conn, [&] { return tx->commit(); });
  ASSERT_FALSE(st.ok()) << "COMMIT of a failed transaction answered success";
  EXPECT_EQ(st.error().sqlstate, "25P02");
  EXPECT_EQ(st.error().code, Errc::invalid_query);
  EXPECT_NE(st.error().message.find("rolled back"), std::string::npos);
  EXPECT_EQ(conn.tx_state(), db::TxState::idle);
  EXPECT_EQ(count(conn), 0);
}

TEST_F(Transactions, BeginSendsPostgresFormsOnly) {
  db::BeginOptions serializable{"BEGIN ISOLATION LEVEL SERIALIZABLE"};
  auto tx = blocking(conn, [&] { return conn.begin(serializable); });
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  EXPECT_EQ(scalar(conn, "SHOW transaction_isolation").str, "serializable");
  ASSERT_TRUE(blocking(conn, [&] { return tx->rollback(); }).ok());

  db::BeginOptions read_only{"START TRANSACTION READ ONLY"};
  auto ro = blocking(conn, [&] { return conn.begin(read_only); });
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  EXPECT_EQ(scalar(conn, "SHOW transaction_read_only").str, "on");
  ASSERT_TRUE(blocking(conn, [&] { return ro->rollback(); }).ok());

  db::BeginOptions sqlite_form{"BEGIN IMMEDIATE"};
  auto plain = blocking(conn, [&] { return conn.begin(sqlite_form); });
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(conn.tx_state(), db::TxState::in_transaction);
  ASSERT_TRUE(blocking(conn, [&] { return plain->commit(); }).ok());
}

TEST_F(Transactions, AnyCallWhileARowsIsOpenIsBusy) {
  auto rows = query(conn, "SELECT generate_series(1, 10)");
  ASSERT_TRUE(rows.ok());
  auto second = conn.query("SELECT 1");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Errc::busy);
  EXPECT_EQ(second.error().sqlstate, "55000");
  EXPECT_EQ(second.error().message, "another command is already in progress on this connection");
  EXPECT_EQ(conn.prepare("SELECT 1").error().code, Errc::busy);
  EXPECT_EQ(conn.begin().error().code, Errc::busy);
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());  // closed before its end
  EXPECT_EQ(scalar(conn, "SELECT 5").i64, 5);
}

TEST_F(Transactions, ResetRollsBackAbandonsReadersAndRunsTheResetQuery) {
  auto tx = blocking(conn, [&] { return conn.begin(); });
  ASSERT_TRUE(tx.ok());
  exec(conn, "INSERT INTO " + table() + " VALUES (1)");
  exec(conn, "SET application_name = 'changed'");
  auto rows = query(conn, "SELECT generate_series(1, 100000)");
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(blocking(conn, [&] { return conn.reset("DISCARD ALL"); }).ok());
  EXPECT_EQ(conn.tx_state(), db::TxState::idle);
  std::vector<Value> row(1);
  EXPECT_EQ(rows->next(row).error().code, Errc::closed);
  EXPECT_EQ(count(conn), 0);
  EXPECT_EQ(scalar(conn, "SHOW application_name").str, "");  // the server default
}

}  // namespace
}  // namespace wirepool::pg_it
