// Errors from a real PostgreSQL 15, with its SQLSTATE, message, detail and hint:
//  - constraints are Errc::constraint: unique 23505 (with DETAIL), foreign key
//    23503, not null 23502, check 23514
//  - syntax 42601, undefined table 42P01, undefined column 42703, division by
//    zero 22012 are Errc::invalid_query; bad SQL fails at query(), not at a row
//  - a row lock held by one connection: SELECT ... FOR UPDATE NOWAIT from another
//    is Errc::busy 55P03; a deadlock between two is Errc::busy 40P01
//  - pg_sleep(30) cancelled from another thread answers 57014 (busy) within a
//    second, and the connection stays usable
//  - pg_terminate_backend: the victim's next call answers Errc::connection and
//    alive() turns false
//  - an error in the middle of a stream is answered by next(), not hidden
//  - opening: a wrong password is Errc::connection 28P01, an unknown database
//    3D000, an unknown role 28000 (the server's own codes), a port nobody
//    listens on 08001, all Errc::connection; validate() refuses TLS
//    keys in the conninfo, `options` keys and bad pins; redact() hides passwords

#include <chrono>
#include <thread>

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

class Errors : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
    parent = table("_parent");
    child = table("_child");
    exec(conn, "DROP TABLE IF EXISTS " + child + ", " + parent);
    exec(conn, "CREATE TABLE " + parent + " (id int PRIMARY KEY, n int NOT NULL CHECK (n > 0))");
    exec(conn, "CREATE TABLE " + child + " (pid int REFERENCES " + parent + ")");
    exec(conn, "INSERT INTO " + parent + " VALUES (1, 1)");
  }
  Connection conn;
  std::string parent, child;
};

TEST_F(Errors, ConstraintViolationsCarryTheirSqlstate) {
  struct Case {
    std::string sql;
    const char* sqlstate;
  };
  const Case cases[] = {
      {"INSERT INTO " + parent + " VALUES (1, 1)", "23505"},
      {"INSERT INTO " + child + " VALUES (99)", "23503"},
      {"INSERT INTO " + parent + " VALUES (2, NULL)", "23502"},
      {"INSERT INTO " + parent + " VALUES (3, -1)", "23514"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    const db::Error e = error_of(conn, c.sql);
    EXPECT_EQ(e.code, Errc::constraint);
    EXPECT_EQ(e.sqlstate, c.sqlstate);
    EXPECT_FALSE(e.message.empty());
  }
  const db::Error dup = error_of(conn, "INSERT INTO " + parent + " VALUES (1, 1)");
  EXPECT_NE(dup.message.find("duplicate key value violates unique constraint"), std::string::npos);
  EXPECT_EQ(dup.detail, "Key (id)=(1) already exists.");
}

TEST_F(Errors, BadSqlFailsAtQueryWithItsSqlstate) {
  struct Case {
    const char* sql;
    const char* sqlstate;
  };
  const Case cases[] = {
      {"SELEC 1", "42601"},
      {"SELECT * FROM no_such_table_here", "42P01"},
      {"SELECT no_such_column FROM pg_class", "42703"},
      {"SELECT 1/0", "22012"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    auto rows = query(conn, c.sql);
    ASSERT_FALSE(rows.ok());
    EXPECT_EQ(rows.error().code, Errc::invalid_query);
    EXPECT_EQ(rows.error().sqlstate, c.sqlstate);
  }
  const db::Error e = error_of(conn, "SELECT * FROM no_such_table_here");
  EXPECT_EQ(e.message, "relation \"no_such_table_here\" does not exist");
  const db::Error hinted = error_of(conn, "SELECT nosuchfunc(1)");
  EXPECT_EQ(hinted.sqlstate, "42883");
  EXPECT_FALSE(hinted.hint.empty());
  // The connection is fine after each.
  EXPECT_EQ(scalar(conn, "SELECT 1").i64, 1);
}

TEST_F(Errors, AnErrorInTheMiddleOfAStreamIsAnsweredByNext) {
  auto rows = query(conn, "SELECT 10 / (3 - g) FROM generate_series(1, 5) g");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  std::vector<Value> row(1);
  auto first = blocking(conn, [&] { return rows->next(row); });
  ASSERT_TRUE(first.ok() && first.value());
  db::Result<bool> r = true;
  while (r.ok() && r.value())
    r = blocking(conn, [&] { return rows->next(row); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "22012");
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  EXPECT_EQ(scalar(conn, "SELECT 2").i64, 2);
}

TEST_F(Errors, RowLockHeldElsewhereIsBusyLockNotAvailable) {
  Connection other = open();
  auto tx = blocking(conn, [&] { return conn.begin(); });
  ASSERT_TRUE(tx.ok());
  exec(conn, "SELECT * FROM " + parent + " WHERE id = 1 FOR UPDATE");
  const db::Error e =
      error_of(other, "SELECT * FROM " + parent + " WHERE id = 1 FOR UPDATE NOWAIT");
  EXPECT_EQ(e.code, Errc::busy);
  EXPECT_EQ(e.sqlstate, "55P03");
  ASSERT_TRUE(blocking(conn, [&] { return tx->rollback(); }).ok());
  exec(other, "SELECT * FROM " + parent + " WHERE id = 1 FOR UPDATE NOWAIT");
}

TEST_F(Errors, DeadlockIsBusy40P01) {
  // Superuser connections: deadlock_timeout is a superuser setting.
  Connection a = open(superuser_options());
  Connection b = open(superuser_options());
  exec(a, "INSERT INTO " + parent + " VALUES (2, 2)");
  for (Connection* c : {&a, &b}) {
    exec(*c, "SET deadlock_timeout = '100ms'");
    ASSERT_TRUE(blocking(*c, [&] { return c->begin(); }).ok());
  }
  exec(a, "UPDATE " + parent + " SET n = 10 WHERE id = 1");
  exec(b, "UPDATE " + parent + " SET n = 20 WHERE id = 2");
  db::Result<Table> from_a = db::Error{};
  std::thread t([&] { from_a = fetch(a, "UPDATE " + parent + " SET n = 11 WHERE id = 2"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto from_b = fetch(b, "UPDATE " + parent + " SET n = 21 WHERE id = 1");
  t.join();
  // One of the two is chosen as the victim; the other goes on.
  ASSERT_NE(from_a.ok(), from_b.ok());
  const db::Error& victim = from_a.ok() ? from_b.error() : from_a.error();
  EXPECT_EQ(victim.code, Errc::busy);
  EXPECT_EQ(victim.sqlstate, "40P01");
  EXPECT_EQ(victim.message, "deadlock detected");
  for (Connection* c : {&a, &b})
    (void)blocking(*c, [&] { return c->impl()->rollback(); });
}

TEST_F(Errors, CancelFromAnotherThreadStopsASleepWithin1s) {
  const auto t0 = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    conn.cancel();
  });
  auto rows = query(conn, "SELECT pg_sleep(30)");
  canceller.join();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().code, Errc::busy);
  EXPECT_EQ(rows.error().sqlstate, "57014");
  EXPECT_EQ(rows.error().message, "canceling statement due to user request");
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  EXPECT_EQ(scalar(conn, "SELECT 3").i64, 3);
  conn.cancel();  // harmless when idle
  EXPECT_EQ(scalar(conn, "SELECT 4").i64, 4);
}

TEST_F(Errors, TerminatedBackendAnswersConnection) {
  Connection victim = open();
  const Value pid = scalar(victim, "SELECT pg_backend_pid()");
  ASSERT_TRUE(victim.alive());
  const Value done = scalar(conn, "SELECT pg_terminate_backend($1::int)", {P(I(pid.i64))});
  ASSERT_TRUE(done.b);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto rows = query(victim, "SELECT 1");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().code, Errc::connection) << rows.error().message;
  EXPECT_TRUE(rows.error().sqlstate == "57P01" || rows.error().sqlstate == "08006")
      << rows.error().sqlstate;
  EXPECT_FALSE(victim.alive());
  auto again = query(victim, "SELECT 1");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::connection);
}

TEST_F(Errors, WrongPasswordIsAConnectionError) {
  db::OpenOptions o = options();
  o.password = "wrong";
  auto c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "28P01");
  EXPECT_NE(c.error().message.find("password authentication failed"), std::string::npos);
  EXPECT_EQ(c.error().message.find("wrong"), std::string::npos);
}

TEST_F(Errors, FailedOpensCarryTheServersSqlstate) {
  db::OpenOptions o = options();
  o.connection += " dbname=no_such_database_here";
  auto c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "3D000") << c.error().message;
  EXPECT_EQ(c.error().message.find("LOCATION"), std::string::npos) << c.error().message;
  o = options();
  o.connection += " user=no_such_role_here";
  c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().sqlstate, "28P01") << c.error().message;  // SCRAM: the role is not told
  o = superuser_options();
  o.connection += " user=no_such_role_here";
  c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().sqlstate, "28000") << c.error().message;  // trust on the socket
  o = options();
  o.connection += " port=1";
  c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "08001") << c.error().message;
}

TEST_F(Errors, ValidateRefusesTlsKeysOptionsAndBadPins) {
  db::OpenOptions o = options();
  o.connection += " sslmode=require";
  o.options["busy_timeout"] = "5s";
  o.tls_pins = {"abc"};
  const auto problems = driver().validate(o);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].first, "busy_timeout");
  EXPECT_EQ(problems[1].first, "connection");
  EXPECT_NE(problems[1].second.find("tls block"), std::string::npos);
  EXPECT_EQ(problems[2].first, "tls.pin_sha256");
  auto c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "22023");
  EXPECT_TRUE(driver().validate(options()).empty());
}

TEST_F(Errors, RedactHidesPasswords) {
  // libpq's parser reads them; they come back as key=value pairs in its order.
  EXPECT_EQ(driver().redact("host=h password=s3cret user=u"), "user=u password=*** host=h");
  EXPECT_EQ(driver().redact("host=h password = 'a b\\' c' user=u"), "user=u password=*** host=h");
  EXPECT_EQ(driver().redact("postgresql://u:s3cret@h:5432/db?sslmode=x&password=p2"),
            "user=u password=*** dbname=db host=h port=5432 sslmode=x");
}

}  // namespace
}  // namespace wirepool::pg_it
