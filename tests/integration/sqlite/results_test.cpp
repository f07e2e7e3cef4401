// Results, commands and statements against real SQLite:
//  - multi-statement text: next_result runs the next statement (blank pieces
//    skipped), finishes the current one first (its unread rows and side effects),
//    and stops at the first error
//  - blank text answers a reader with no columns
//  - affected rows: CREATE then INSERT then CREATE INDEX / DELETE nothing (the seed's
//    trap: sqlite3_changes keeps the previous count); trigger changes not counted;
//    last_insert_id for INSERT; verbs from sql::command_verb
//  - prepared statements: reused with new parameters; columns known before
//    execution; two open readers of one statement; closing the statement while
//    its reader is open; a text of several statements cannot be prepared
//  - bad SQL fails at query(), not at the first row

#include "tests/integration/sqlite/sqlite_fixture.hpp"

namespace wirepool::sqlite_it {
namespace {

class Results : public SqliteTest {
 protected:
  void SetUp() override {
    SqliteTest::SetUp();
    conn = open();
  }
  Connection conn;
};

TEST_F(Results, MultiStatementTextAdvancesWithNextResult) {
  auto rows = conn.query(
      "CREATE TABLE t (a INTEGER); ; -- nothing here\n INSERT INTO t VALUES (1), (2); "
      "SELECT a FROM t ORDER BY a; /* trailing */ ;");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto create = read_all(rows.value());
  ASSERT_TRUE(create.ok());
  EXPECT_TRUE(create->columns.empty());
  EXPECT_EQ(create->info.verb, "CREATE TABLE");
  EXPECT_EQ(create->info.affected, -1);

  ASSERT_TRUE(rows->next_result().value());
  auto insert = read_all(rows.value());
  ASSERT_TRUE(insert.ok());
  EXPECT_EQ(insert->info.verb, "INSERT");
  EXPECT_EQ(insert->info.affected, 2);

  ASSERT_TRUE(rows->next_result().value());
  auto select = read_all(rows.value());
  ASSERT_TRUE(select.ok());
  EXPECT_EQ(select->info.verb, "SELECT");
  ASSERT_EQ(select->rows.size(), 2u);
  EXPECT_EQ(select->rows[1][0].i64, 2);

  EXPECT_FALSE(rows->next_result().value());
  EXPECT_FALSE(rows->next_result().value());
  ASSERT_TRUE(rows->close().ok());
}

TEST_F(Results, NextResultFinishesTheCurrentStatementFirst) {
  exec(conn, "CREATE TABLE t (a INTEGER)");
  auto rows = conn.query("INSERT INTO t VALUES (1), (2), (3) RETURNING a; SELECT count(*) FROM t");
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(rows->next(row).value());  // one of three RETURNING rows read
  ASSERT_TRUE(rows->next_result().value());
  ASSERT_TRUE(rows->next(row).value());
  EXPECT_EQ(row[0].i64, 3);
}

TEST_F(Results, NextResultStopsAtTheFirstError) {
  auto rows = conn.query("SELECT 1; SELECT * FROM nope; SELECT 3");
  ASSERT_TRUE(rows.ok());
  auto second = rows->next_result();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().sqlstate, "42P01");
  EXPECT_EQ(second.error().message, "no such table: nope");
  EXPECT_FALSE(rows->next_result().value());
}

TEST_F(Results, BlankTextAnswersNoColumns) {
  for (std::string_view text : {"", "  ", "-- only\n", ";;", "/* x */"}) {
    auto rows = conn.query(text);
    ASSERT_TRUE(rows.ok()) << text;
    EXPECT_TRUE(rows->columns().empty());
    std::vector<Value> row;
    EXPECT_FALSE(rows->next(row).value());
    EXPECT_FALSE(rows->next_result().value());
    EXPECT_EQ(rows->command().verb, "");
  }
}

TEST_F(Results, AffectedRowsAreThisStatementsAfterCreateThenInsert) {
  auto create = conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a)");
  ASSERT_TRUE(create.ok());
  EXPECT_EQ(create->verb, "CREATE TABLE");
  EXPECT_EQ(create->affected, -1);

  auto insert = conn.execute("INSERT INTO t (a) VALUES (1), (2)");
  ASSERT_TRUE(insert.ok());
  EXPECT_EQ(insert->verb, "INSERT");
  EXPECT_EQ(insert->affected, 2);
  EXPECT_EQ(insert->last_insert_id, 2);

  auto index = conn.execute("CREATE INDEX i ON t (a)");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->verb, "CREATE INDEX");
  EXPECT_EQ(index->affected, -1);

  auto none = conn.execute("DELETE FROM t WHERE a = 99");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->verb, "DELETE");
  EXPECT_EQ(none->affected, 0);  // not the INSERT's 2

  auto nothing_inserted = conn.execute("INSERT INTO t (a) SELECT 1 WHERE 0");
  ASSERT_TRUE(nothing_inserted.ok());
  EXPECT_EQ(nothing_inserted->affected, 0);
  EXPECT_EQ(nothing_inserted->last_insert_id, -1);

  auto update = conn.execute("UPDATE t SET a = a + 1");
  ASSERT_TRUE(update.ok());
  EXPECT_EQ(update->verb, "UPDATE");
  EXPECT_EQ(update->affected, 2);

  auto select = conn.execute("SELECT * FROM t");
  ASSERT_TRUE(select.ok());
  EXPECT_EQ(select->verb, "SELECT");
  EXPECT_EQ(select->affected, -1);

  auto replace = conn.execute("REPLACE INTO t (id, a) VALUES (1, 9)");
  ASSERT_TRUE(replace.ok());
  EXPECT_EQ(replace->verb, "INSERT");
  EXPECT_EQ(replace->affected, 1);
}

TEST_F(Results, TriggerChangesAreNotCounted) {
  exec(conn,
       "CREATE TABLE t (a); CREATE TABLE log (x);"
       "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); INSERT INTO log "
       "VALUES (2); END;");
  auto insert = conn.execute("INSERT INTO t VALUES (1)");
  ASSERT_TRUE(insert.ok());
  EXPECT_EQ(insert->affected, 1);
  EXPECT_EQ(scalar(conn, "SELECT count(*) FROM log").i64, 2);
}

TEST_F(Results, BadSqlFailsAtQueryNotAtTheFirstRow) {
  auto rows = conn.query("SELECT * FROM nope");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().sqlstate, "42P01");
  // A runtime error in the first row too: the first step happens in query().
  auto overflow = conn.query("SELECT abs(-9223372036854775808)");
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error().message, "integer overflow");
}

TEST_F(Results, PreparedStatementIsReusedWithNewParameters) {
  exec(conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)");
  auto insert = conn.prepare("INSERT INTO t (name) VALUES ($1)");
  ASSERT_TRUE(insert.ok());
  EXPECT_TRUE(insert->columns().empty());
  for (const char* name : {"a", "b", "c"}) {
    auto info = insert->execute(std::vector<Param>{P(T(name))});
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(info->affected, 1);
  }
  auto select = conn.prepare("SELECT id, name FROM t WHERE id >= $1 ORDER BY id");
  ASSERT_TRUE(select.ok());
  ASSERT_EQ(select->columns().size(), 2u);
  EXPECT_EQ(select->columns()[0].kind, Kind::I64);
  EXPECT_EQ(select->columns()[1].kind, Kind::Text);
  EXPECT_EQ(select->columns()[1].name, "name");
  for (int64_t from : {1, 2, 3}) {
    auto rows = select->query(std::vector<Param>{P(I(from))});
    ASSERT_TRUE(rows.ok());
    auto t = read_all(rows.value());
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->rows.size(), static_cast<size_t>(4 - from));
    EXPECT_EQ(t->rows[0][0].i64, from);
  }
}

TEST_F(Results, TwoOpenReadersOfOneStatement) {
  exec(conn, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (3)");
  auto st = conn.prepare("SELECT a FROM t WHERE a >= $1 ORDER BY a");
  ASSERT_TRUE(st.ok());
  auto r1 = st->query(std::vector<Param>{P(I(1))});
  ASSERT_TRUE(r1.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(r1->next(row).value());
  EXPECT_EQ(row[0].i64, 1);

  auto r2 = st->query(std::vector<Param>{P(I(2))});
  ASSERT_TRUE(r2.ok());
  auto t2 = read_all(r2.value());
  ASSERT_TRUE(t2.ok());
  ASSERT_EQ(t2->rows.size(), 2u);
  EXPECT_EQ(t2->rows[0][0].i64, 2);

  ASSERT_TRUE(r1->next(row).value());
  EXPECT_EQ(row[0].i64, 2);
  ASSERT_TRUE(r1->next(row).value());
  EXPECT_EQ(row[0].i64, 3);
  EXPECT_FALSE(r1->next(row).value());
  ASSERT_TRUE(r1->close().ok());
  ASSERT_TRUE(r2->close().ok());

  // Both finished: the statement runs again.
  auto r3 = st->query(std::vector<Param>{P(I(3))});
  ASSERT_TRUE(r3.ok());
  auto t3 = read_all(r3.value());
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->rows.size(), 1u);
}

TEST_F(Results, ClosingAStatementLeavesItsOpenReaderWorking) {
  exec(conn, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2)");
  auto st = conn.prepare("SELECT a FROM t ORDER BY a");
  ASSERT_TRUE(st.ok());
  auto rows = st->query();
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(st->close().ok());
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows.size(), 2u);
}

TEST_F(Results, SeveralStatementsCannotBePrepared) {
  auto st = conn.prepare("SELECT 1; SELECT 2");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().sqlstate, "42601");
  EXPECT_EQ(st.error().message, "cannot insert multiple commands into a prepared statement");
  auto trailing = conn.prepare("SELECT 1; -- fine\n");
  ASSERT_TRUE(trailing.ok());
  auto blank = conn.prepare("  ");
  ASSERT_TRUE(blank.ok());
  auto rows = blank->query();
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->columns().empty());
}

}  // namespace
}  // namespace wirepool::sqlite_it
