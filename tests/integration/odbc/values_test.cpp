// Values through each verified ODBC driver, written as typed parameters and
// read back through block cursors:
//  - every value kind (Bool, I64, U64 on MariaDB, F64, Decimal at its scale,
//    Text with non-ASCII, Bytes with NUL, Time as timestamp and as date) and a
//    NULL of each, bound with a typed NULL (never SQL_C_DEFAULT)
//  - $N markers from PostgreSQL clients rewritten to ?, a repeated $1 bound twice;
//    a wrong parameter count is 08P01
//  - a prepared statement run many times, and beside its own open reader; a
//    prepared DML statement re-run with its own counts and no cursor to close
//  - the connection string: a DSN-less string, the password added as PWD
//    from OpenOptions::password, redact() hiding it; a bad driver name fails
//    as Errc::connection

#include <cmath>

#include "tests/integration/odbc/odbc_fixture.hpp"

namespace wirepool::odbc_it {
namespace {

class Values : public OdbcTest {};

std::string ddl(Target t, const std::string& name) {
  switch (t) {
    case Target::postgresql:
      return "CREATE TABLE " + name +
             " (id int PRIMARY KEY, b boolean, i bigint, f double precision, n numeric(10,2), "
             "s text, v varchar(20), by bytea, ts timestamp, d date, u uuid)";
    case Target::mariadb:
      return "CREATE TABLE " + name +
             " (id int PRIMARY KEY, b boolean, i bigint, f double, n decimal(10,2), s text, "
             "v varchar(20), by_ blob, ts datetime(6), d date, ub bigint unsigned)";
    case Target::sqlite:
      return "CREATE TABLE " + name +
             " (id integer PRIMARY KEY, b boolean, i bigint, f double, n numeric(10,2), s text, "
             "v varchar(20), by_ blob, ts timestamp, d date)";
  }
  return {};
}

// 2024-02-29T13:45:30.123456 and 2024-02-29 as microseconds since the epoch.
constexpr int64_t kTs = 1709214330123456;
constexpr int64_t kDate = 1709164800000000;

TEST_P(Values, EveryKindRoundTripsWithNulls) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, ddl(target(), t));
  const bool pg = target() == Target::postgresql;
  const std::string by = pg ? "by" : "by_";
  const std::string insert = "INSERT INTO " + t + " (id, b, i, f, n, s, v, " + by +
                             ", ts, d) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
  const std::string text = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";  // héllo € 😀
  const std::string bytes("a\0b\xff", 4);
  auto r = fetch(conn, insert,
                 {P(Value::int64(1)), P(Value::boolean(true)), P(Value::int64(-9007199254740993)),
                  P(Value::float64(0.1)), P(Value::decimal("-12.50")), P(Value::text(text)),
                  P(Value::text("short")), P(Value::bytes(bytes)), P(Value::time(kTs)),
                  P(Value::time(kDate))});
  ASSERT_TRUE(r.ok()) << r.error().sqlstate << " " << r.error().message;
  EXPECT_EQ(r->info.verb, "INSERT");
  EXPECT_EQ(r->info.affected, 1);
  std::vector<Param> nulls{P(Value::int64(2))};
  for (int i = 0; i < 9; ++i)
    nulls.push_back(P(Value::null()));
  exec(conn, insert, nulls);

  auto got = fetch(conn, "SELECT b, i, f, n, s, v, " + by + ", ts, d FROM " + t + " ORDER BY id");
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->rows.size(), 2u);
  const auto& c = got->columns;
  ASSERT_EQ(c.size(), 9u);
  // MariaDB's BOOLEAN is TINYINT(1): MariaDB ODBC describes it as SQL_TINYINT
  // (docs/odbc.md, quirk), so it reads back as I64 1.
  const auto& row = got->rows[0];
  if (target() == Target::mariadb) {
    EXPECT_EQ(c[0].kind, Kind::I64);
    EXPECT_EQ(row[0].i64, 1);
  } else {
    EXPECT_EQ(c[0].kind, Kind::Bool);
    EXPECT_TRUE(row[0].b);
  }
  EXPECT_EQ(c[1].kind, Kind::I64);
  EXPECT_EQ(row[1].i64, -9007199254740993);
  EXPECT_EQ(c[2].kind, Kind::F64);
  EXPECT_DOUBLE_EQ(row[2].f64, 0.1);
  // SQLite ODBC describes NUMERIC(p,s) as SQL_DOUBLE and names it without its
  // scale: read as Decimal by the name, at the scale the table declares
  // (pragma_table_info; docs/odbc.md, quirks).
  EXPECT_EQ(c[3].kind, Kind::Decimal);
  EXPECT_EQ(c[3].native.scale, 2);
  EXPECT_EQ(row[3].str, "-12.50");
  EXPECT_EQ(c[4].kind, Kind::Text);
  EXPECT_EQ(row[4].str, text);
  EXPECT_EQ(c[5].kind, Kind::Text);
  EXPECT_EQ(row[5].str, "short");
  EXPECT_EQ(c[6].kind, Kind::Bytes);
  EXPECT_EQ(row[6].str, bytes);
  EXPECT_EQ(c[7].kind, Kind::Time);
  EXPECT_EQ(c[7].native.time_form, db::TimeForm::timestamp);
  // SQLite ODBC keeps timestamps as text to the millisecond (quirk).
  EXPECT_EQ(row[7].micros, target() == Target::sqlite ? kTs / 1000 * 1000 : kTs);
  EXPECT_EQ(c[8].kind, Kind::Time);
  EXPECT_EQ(c[8].native.time_form, db::TimeForm::date);
  EXPECT_EQ(row[8].micros, kDate);
  for (size_t i = 0; i < 9; ++i) {
    SCOPED_TRACE(c[i].name);
    EXPECT_TRUE(got->rows[1][i].is_null());
  }
}

TEST_P(Values, BackendSpecificKinds) {
  if (target() == Target::postgresql) {
    auto got =
        fetch(conn,
              "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 12345678901234567890::numeric, "
              "true, 2::smallint, TIME '01:02:03', DATE '2024-01-02', "
              "TIMESTAMP '2024-01-02 03:04:05'");
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->rows[0][0].kind, Kind::Text);
    EXPECT_EQ(got->rows[0][0].str, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    EXPECT_EQ(got->rows[0][1].kind, Kind::Decimal);
    EXPECT_EQ(got->rows[0][1].str, "12345678901234567890");
    EXPECT_EQ(got->rows[0][2].kind, Kind::Bool);
    EXPECT_EQ(got->rows[0][3].kind, Kind::I64);
    // psqlODBC answers 0 for the datetime subcode: date, time and timestamp
    // are told apart by their length (docs/odbc.md, quirk).
    EXPECT_EQ(got->columns[4].kind, Kind::Text);
    EXPECT_EQ(got->rows[0][4].str, "01:02:03");
    EXPECT_EQ(got->columns[5].native.time_form, db::TimeForm::date);
    EXPECT_EQ(got->columns[6].native.time_form, db::TimeForm::timestamp);
    EXPECT_EQ(got->rows[0][6].micros, 1704164645000000);
  } else if (target() == Target::mariadb) {
    const std::string t = table();
    exec(conn, "DROP TABLE IF EXISTS " + t);
    exec(conn, "CREATE TABLE " + t + " (ub bigint unsigned, j json)");
    exec(conn, "INSERT INTO " + t + " VALUES (18446744073709551615, '{\"a\": 1}')");
    auto got = fetch(conn, "SELECT ub, j FROM " + t);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->columns[0].kind, Kind::U64);
    EXPECT_EQ(got->rows[0][0].u64, 18446744073709551615ULL);
    EXPECT_EQ(got->rows[0][1].kind, Kind::Text);
    // A U64 parameter beyond INT64_MAX binds as exact digits.
    auto back = fetch(conn, "SELECT ub FROM " + t + " WHERE ub = ?",
                      {P(Value::uint64(18446744073709551615ULL))});
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->rows.size(), 1u);
  } else {
    auto got = fetch(conn, "SELECT 1, 'x', 2.5");
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->rows.size(), 1u);
  }
}

TEST_P(Values, NonAsciiLiteralsInStatementTextAndColumnNames) {
  // The bridge seed's double-encoding bug: text in the statement itself (not a
  // parameter) must reach the database as written, through every driver.
  const std::string t = table();
  const std::string word =
      "Gr\xc3\xbc\xc3\x9f"
      "e \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x9a\x80";
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int, s varchar(40))");
  exec(conn, "INSERT INTO " + t + " VALUES (1, '" + word + "')");
  const std::string alias =
      target() == Target::mariadb ? "`prix_\xe2\x82\xac`" : "\"prix_\xe2\x82\xac\"";
  auto got = fetch(conn, "SELECT s AS " + alias + " FROM " + t + " WHERE s = '" + word + "'");
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->rows.size(), 1u);
  EXPECT_EQ(got->rows[0][0].str, word);
  EXPECT_EQ(got->columns[0].name, "prix_\xe2\x82\xac");
  auto by_param = fetch(conn, "SELECT id FROM " + t + " WHERE s = $1", {P(Value::text(word))});
  ASSERT_TRUE(by_param.ok()) << by_param.error().message;
  EXPECT_EQ(by_param->rows.size(), 1u);
}

TEST_P(Values, DollarMarkersAreRewrittenAndRepeatedOnesBoundAgain) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int PRIMARY KEY, v varchar(20))");
  exec(conn, "INSERT INTO " + t + " VALUES (1, 'one'), (2, 'two'), (3, 'x$1')");
  auto got = fetch(conn,
                   "SELECT v FROM " + t +
                       " WHERE (id = $2 OR v = $1) AND (v = $1 OR id < 3) AND v <> '$1' "
                       "ORDER BY id",
                   {P(Value::text("two")), P(Value::int64(1))});
  ASSERT_TRUE(got.ok()) << got.error().sqlstate << " " << got.error().message;
  ASSERT_EQ(got->rows.size(), 2u);
  EXPECT_EQ(got->rows[0][0].str, "one");
  EXPECT_EQ(got->rows[1][0].str, "two");
  const db::Error e = error_of(conn, "SELECT v FROM " + t + " WHERE id = $2", {P(Value::int64(1))});
  EXPECT_EQ(e.sqlstate, "08P01");
}

TEST_P(Values, PreparedStatementRunsManyTimesAndBesideItsOwnReader) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int PRIMARY KEY, v varchar(4000))");
  auto ins = conn.prepare("INSERT INTO " + t + " VALUES ($1, $2)");
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  for (int i = 0; i < 50; ++i) {
    auto info = ins->execute(
        std::vector<Param>{P(Value::int64(i)), P(Value::text("v" + std::to_string(i)))});
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(info->affected, 1);
  }
  // One statement, values whose kind and size change between executions: a
  // NULL after text, a text longer than the parameter buffer's first capacity
  // (it is bound again), an integer where text was (the backends convert).
  const std::string longer(3000, 'x');
  const std::vector<std::pair<int, Value>> mixed = {{100, Value::text("a")},
                                                    {101, Value::null()},
                                                    {102, Value::text(longer)},
                                                    {103, Value::text("b")}};
  for (const auto& [id, v] : mixed) {
    auto info = ins->execute(std::vector<Param>{P(Value::int64(id)), P(v)});
    ASSERT_TRUE(info.ok()) << id << ": " << info.error().message;
  }
  auto back = fetch(conn, "SELECT id, v FROM " + t + " WHERE id >= 100 ORDER BY id");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->rows.size(), 4u);
  EXPECT_EQ(back->rows[0][1].str, "a");
  EXPECT_TRUE(back->rows[1][1].is_null());
  EXPECT_EQ(back->rows[2][1].str, longer);
  EXPECT_EQ(back->rows[3][1].str, "b");
  const auto before = odbc::fetch_stats_for_test(conn);
  auto sel = conn.prepare("SELECT v FROM " + t + " WHERE id = $1");
  ASSERT_TRUE(sel.ok()) << sel.error().message;
  ASSERT_EQ(sel->params().size(), 1u);
  std::vector<Param> p1{P(Value::int64(7))};
  auto first = sel->query(p1);
  ASSERT_TRUE(first.ok()) << first.error().message;
  std::vector<Param> p2{P(Value::int64(8))};
  auto second = sel->query(p2);  // the first reader is still open
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto a = read_all(first.value());
  auto b = read_all(second.value());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->rows.size(), 1u);
  ASSERT_EQ(b->rows.size(), 1u);
  EXPECT_EQ(a->rows[0][0].str, "v7");
  EXPECT_EQ(b->rows[0][0].str, "v8");
  EXPECT_TRUE(first->close().ok());
  EXPECT_TRUE(second->close().ok());
  // Only the overlapping run needed a copy of the statement.
  EXPECT_EQ(odbc::fetch_stats_for_test(conn).statement_copies - before.statement_copies, 1u);
  for (int i = 0; i < 50; i += 7) {
    std::vector<Param> p{P(Value::int64(i))};
    auto rows = sel->query(p);
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    auto r = read_all(rows.value());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->rows.size(), 1u);
    EXPECT_EQ(r->rows[0][0].str, "v" + std::to_string(i));
  }
  EXPECT_EQ(odbc::fetch_stats_for_test(conn).statement_copies - before.statement_copies, 1u);
}

TEST_P(Values, PreparedDmlRerunsWithItsOwnCountsAndNoCursorToClose) {
  // A prepared single DML statement skips SQLNumResultCols on re-execution
  // and SQLFreeStmt(SQL_CLOSE) after it (backends/odbc: after_execute): every
  // execution still reports its own count, one that touches no row
  // (SQL_NO_DATA) and one that fails included, and a SELECT after it works.
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int PRIMARY KEY, g int)");
  auto ins = conn.prepare("INSERT INTO " + t + " VALUES ($1, $2)");
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  auto upd = conn.prepare("UPDATE " + t + " SET g = g + 10 WHERE g = $1");
  ASSERT_TRUE(upd.ok()) << upd.error().message;
  const auto before = odbc::fetch_stats_for_test(conn);
  for (int i = 1; i <= 6; ++i) {
    auto info = ins->execute(std::vector<Param>{P(Value::int64(i)), P(Value::int64(i % 3))});
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(info->affected, 1);
  }
  auto dup = ins->execute(std::vector<Param>{P(Value::int64(1)), P(Value::int64(0))});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().sqlstate, "23505");
  auto again = ins->execute(std::vector<Param>{P(Value::int64(7)), P(Value::int64(1))});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->affected, 1);
  const std::vector<std::pair<int, int64_t>> updates = {{1, 3}, {5, 0}, {2, 2}, {1, 0}, {11, 3}};
  for (const auto& [g, want] : updates) {
    auto info = upd->execute(std::vector<Param>{P(Value::int64(g))});
    ASSERT_TRUE(info.ok()) << g << ": " << info.error().message;
    EXPECT_EQ(info->affected, want) << "g = " << g;
  }
  const auto after = odbc::fetch_stats_for_test(conn);
  // Only the reader of the failed execution closed its statement.
  EXPECT_EQ(after.cursor_closes - before.cursor_closes, 1u);
  auto back = fetch(conn, "SELECT g, count(*) FROM " + t + " GROUP BY g ORDER BY g");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->rows.size(), 3u);
  EXPECT_EQ(back->rows[0][0].i64, 0);
  EXPECT_EQ(back->rows[1][0].i64, 12);
  EXPECT_EQ(back->rows[2][0].i64, 21);
  EXPECT_GT(odbc::fetch_stats_for_test(conn).cursor_closes, after.cursor_closes);
}

TEST_P(Values, ConnectionStringPasswordAndRedaction) {
  const db::OpenOptions o = options_for(target());
  const std::string shown = driver().redact(o.connection + ";PWD={se;cret}");
  EXPECT_EQ(shown.find("se;cret"), std::string::npos);
  EXPECT_NE(shown.find("PWD=***"), std::string::npos);
  db::OpenOptions bad = o;
  bad.connection = "Driver={No Such Driver};Server=127.0.0.1";
  auto c = driver().open(bad);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_FALSE(c.error().message.empty());
  const auto info = odbc::driver_info(conn);
  EXPECT_EQ(info.flavor, target() == Target::postgresql ? "postgresql"
                         : target() == Target::mariadb  ? "mariadb"
                                                        : "sqlite");
  EXPECT_FALSE(info.driver_name.empty());
  // Debian's SQLite ODBC has no W entry points (docs/odbc.md, quirk).
  EXPECT_EQ(info.narrow_text, target() == Target::sqlite);
}

INSTANTIATE_TEST_SUITE_P(Odbc, Values, WP_ODBC_TARGETS);

}  // namespace
}  // namespace wirepool::odbc_it
