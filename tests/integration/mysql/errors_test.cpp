// Errors from the live MariaDB, mapped by errno (DESIGN.md "Errors"): the
// server's own SQLSTATE is generic (23000, 42000, HY000), the client gets the
// precise one with the server's message, through both protocols:
//  - 23505 (1062), 23503 (1452 and 1451), 23502 (1048), 23514 (MariaDB's 4025);
//  - 42601 (1064), 42P01 (1146), 42703 (1054);
//  - 55P03: a row another connection locked, FOR UPDATE NOWAIT (MariaDB 1205);
//  - a lost connection (the server kills it) is Errc::connection (08006), and
//    alive() and later calls say so, so the pool drops it;
//  - a wrong password is a connection error carrying the server's message.

#include <thread>

#include "tests/integration/mysql/mysql_fixture.hpp"

namespace wirepool::mysql_it {
namespace {

class Errors : public MysqlTest {};

void expect(const db::Error& e, const char* sqlstate, Errc code, int64_t vendor) {
  EXPECT_EQ(e.sqlstate, sqlstate) << e.message;
  EXPECT_EQ(e.code, code) << e.message;
  EXPECT_EQ(e.vendor_code, vendor) << e.message;
  EXPECT_FALSE(e.message.empty());
}

TEST_F(Errors, ConstraintsByErrnoInBothProtocols) {
  Connection c = open();
  const std::string parent = table("_p"), child = table("_c");
  exec(c, "DROP TABLE IF EXISTS " + child);
  exec(c, "DROP TABLE IF EXISTS " + parent);
  exec(c, "CREATE TABLE " + parent + " (id INT PRIMARY KEY) ENGINE=InnoDB");
  exec(c, "CREATE TABLE " + child + " (id INT PRIMARY KEY, p INT NOT NULL, n INT CHECK (n > 0), " +
              "FOREIGN KEY (p) REFERENCES " + parent + " (id)) ENGINE=InnoDB");
  exec(c, "INSERT INTO " + parent + " VALUES (1)");
  exec(c, "INSERT INTO " + child + " VALUES (1, 1, 1)");
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    auto run = [&](const std::string& sql, int64_t v) {
      if (!prepared) {
        std::string text = sql;
        text.replace(text.find('?'), 1, std::to_string(v));
        return error_of(c, text);
      }
      return error_of(c, sql, {P(I(v))});
    };
    db::Error e = run("INSERT INTO " + parent + " VALUES (?)", 1);
    expect(e, "23505", Errc::constraint, 1062);
    EXPECT_NE(e.message.find("Duplicate entry"), std::string::npos) << e.message;
    expect(run("INSERT INTO " + child + " VALUES (?, 99, 1)", 2), "23503", Errc::constraint, 1452);
    expect(run("DELETE FROM " + parent + " WHERE id = ?", 1), "23503", Errc::constraint, 1451);
    expect(run("INSERT INTO " + child + " VALUES (?, NULL, 1)", 3), "23502", Errc::constraint,
           1048);
    expect(run("INSERT INTO " + child + " VALUES (?, 1, -1)", 4), "23514", Errc::constraint, 4025);
  }
}

TEST_F(Errors, SyntaxUnknownTableUnknownColumn) {
  Connection c = open();
  expect(error_of(c, "SELEC 1"), "42601", Errc::invalid_query, 1064);
  expect(error_of(c, "SELECT * FROM no_such_table_here"), "42P01", Errc::invalid_query, 1146);
  expect(error_of(c, "SELECT no_such_column FROM (SELECT 1 AS a) x"), "42703", Errc::invalid_query,
         1054);
  // Through a prepared statement (the errors come at prepare).
  expect(error_of(c, "SELECT * FROM no_such_table_here WHERE a = ?", {P(I(1))}), "42P01",
         Errc::invalid_query, 1146);
  auto st = c.prepare("SELEC ?");
  ASSERT_FALSE(st.ok());
  expect(st.error(), "42601", Errc::invalid_query, 1064);
  EXPECT_EQ(scalar(c, "SELECT 1").i64, 1);
}

TEST_F(Errors, RowLockedElsewhereIsBusyWithNowait) {
  Connection a = open();
  Connection b = open();
  exec(a, "DROP TABLE IF EXISTS " + table());
  exec(a, "CREATE TABLE " + table() + " (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
  exec(a, "INSERT INTO " + table() + " VALUES (1, 0)");
  auto tx = a.begin();
  ASSERT_TRUE(tx.ok());
  auto locked = fetch(a, "SELECT * FROM " + table() + " WHERE id = 1 FOR UPDATE");
  ASSERT_TRUE(locked.ok());
  const db::Error e = error_of(b, "SELECT * FROM " + table() + " WHERE id = 1 FOR UPDATE NOWAIT");
  expect(e, "55P03", Errc::busy, 1205);
  ASSERT_TRUE(tx->rollback().ok());
  EXPECT_EQ(fetch(b, "SELECT * FROM " + table() + " WHERE id = 1 FOR UPDATE NOWAIT")->rows.size(),
            1u);
}

TEST_F(Errors, LostConnectionIsConnectionAndNotAlive) {
  Connection victim = open();
  Connection killer = open();
  const Value id = scalar(victim, "SELECT CONNECTION_ID()");
  ASSERT_EQ(id.kind, Kind::I64);
  EXPECT_TRUE(victim.alive());
  exec(killer, "KILL " + std::to_string(id.i64));
  auto r = fetch(victim, "SELECT 1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::connection) << r.error().vendor_code << " " << r.error().message;
  EXPECT_EQ(r.error().sqlstate.substr(0, 2), r.error().sqlstate == "57P01" ? "57" : "08");
  EXPECT_FALSE(victim.alive());
  auto again = fetch(victim, "SELECT 1");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::connection);
}

TEST_F(Errors, IdleConnectionKilledIsNotAliveWithoutARoundTrip) {
  Connection victim = open();
  Connection killer = open();
  const Value id = scalar(victim, "SELECT CONNECTION_ID()");
  exec(killer, "KILL " + std::to_string(id.i64));
  // The server closes the socket; the probe sees it without sending anything.
  bool alive = true;
  for (int i = 0; i < 100 && alive; ++i) {
    alive = victim.alive();
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(alive);
}

TEST_F(Errors, WrongPasswordIsAConnectionErrorWithTheServersMessage) {
  db::OpenOptions o = options();
  o.password = "wrong";
  auto c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().vendor_code, 1045);
  EXPECT_EQ(c.error().sqlstate, "28P01");  // invalid_password
  EXPECT_NE(c.error().message.find("Access denied"), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find("wrong"), std::string::npos);
}

}  // namespace
}  // namespace wirepool::mysql_it
