// Values through a real SQLite file, bound as parameters and read back:
//  - every kind round-trips: NULL, Bool, I64 extremes, U64 (max as exact text),
//    F64, Text (non-ASCII, empty is not NULL), Bytes (100 KB of every byte value,
//    empty is not NULL), Time (microseconds), Decimal at the declared scale
//  - column kinds and native types from declared types; NOT NULL -> nullable false
//  - expression columns take the first row's kind; with no row they are unknown
//  - next_borrowed lends the same values next copies
//  - Bool rule: a BOOL column holding 1/0 or true/false/t/f reads Bool, other values
//    keep their kind; untyped text 't' (a PostgreSQL client) reads back as Bool
//  - Time rule: DATE/TIME columns holding Unix seconds (integer or real) or
//    ISO-8601 text read Time; values that do not fit keep their kind; time_form
//  - Decimal rule: integers and reals as exact text at the declared scale

#include <string>

#include "tests/integration/sqlite/sqlite_fixture.hpp"

namespace wirepool::sqlite_it {
namespace {

constexpr int64_t kJan2 = 1704153600LL * 1000000;  // 2024-01-02T00:00:00Z

class Values : public SqliteTest {
 protected:
  void SetUp() override {
    SqliteTest::SetUp();
    conn = open();
    exec(conn,
         "CREATE TABLE v (id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC, "
         "d DECIMAL(10,2), f BOOLEAN, ts TIMESTAMPTZ, dt DATE, s VARCHAR(20) NOT NULL DEFAULT '')");
  }

  /// Inserts `v` into column `col` and reads it back.
  Value round_trip(const std::string& col, Value v, bool untyped = false) {
    Param p = P(std::move(v));
    p.untyped = untyped;
    exec(conn, "DELETE FROM v");
    exec(conn, "INSERT INTO v (id, " + col + ") VALUES (1, $1)", {p});
    return scalar(conn, "SELECT " + col + " FROM v WHERE id = 1");
  }

  Connection conn;
};

TEST_F(Values, NullRoundTripsInEveryColumn) {
  for (const char* col : {"i", "r", "t", "b", "n", "d", "f", "ts", "dt"}) {
    SCOPED_TRACE(col);
    EXPECT_EQ(round_trip(col, Value::null()).kind, Kind::Null);
  }
}

TEST_F(Values, IntegersRoundTripIncludingExtremes) {
  for (int64_t x : {int64_t{0}, int64_t{-1}, INT64_MAX, INT64_MIN}) {
    const Value v = round_trip("i", I(x));
    ASSERT_EQ(v.kind, Kind::I64);
    EXPECT_EQ(v.i64, x);
  }
}

TEST_F(Values, U64FitsAsIntegerAndBeyondInt64AsExactText) {
  Value small = round_trip("i", Value::uint64(42));
  ASSERT_EQ(small.kind, Kind::I64);
  EXPECT_EQ(small.i64, 42);
  Value max = round_trip("t", Value::uint64(UINT64_MAX));
  ASSERT_EQ(max.kind, Kind::Text);
  EXPECT_EQ(max.str, "18446744073709551615");
  Value expr = scalar(conn, "SELECT $1", {P(Value::uint64(UINT64_MAX))});
  EXPECT_EQ(expr.str, "18446744073709551615");
}

TEST_F(Values, DoublesRoundTripExactly) {
  for (double x : {3.25, -1e300, 1e-300, 0.1}) {
    const Value v = round_trip("r", Value::float64(x));
    ASSERT_EQ(v.kind, Kind::F64);
    EXPECT_EQ(v.f64, x);
  }
  const Value whole = round_trip("r", I(7));  // REAL affinity keeps it a real
  ASSERT_EQ(whole.kind, Kind::F64);
  EXPECT_EQ(whole.f64, 7.0);
}

TEST_F(Values, TextRoundTripsNonAsciiAndEmptyIsNotNull) {
  const std::string s = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xE6\x97\xA5\xE6\x9C\xAC";
  Value v = round_trip("t", T(s));
  ASSERT_EQ(v.kind, Kind::Text);
  EXPECT_EQ(v.str, s);
  Value empty = round_trip("t", T(""));
  ASSERT_EQ(empty.kind, Kind::Text);
  EXPECT_EQ(empty.str, "");
}

TEST_F(Values, BytesRoundTrip100KbOfEveryByteValueAndEmptyIsNotNull) {
  std::string blob(100 * 1024, '\0');
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<char>(i * 7 % 256);
  Value v = round_trip("b", Value::bytes(blob));
  ASSERT_EQ(v.kind, Kind::Bytes);
  EXPECT_EQ(v.str.size(), blob.size());
  EXPECT_TRUE(v.str == blob);
  Value empty = round_trip("b", Value::bytes(""));
  ASSERT_EQ(empty.kind, Kind::Bytes);
  EXPECT_EQ(empty.str, "");
}

TEST_F(Values, BoolRoundTrips) {
  Value t = round_trip("f", Value::boolean(true));
  ASSERT_EQ(t.kind, Kind::Bool);
  EXPECT_TRUE(t.b);
  Value f = round_trip("f", Value::boolean(false));
  ASSERT_EQ(f.kind, Kind::Bool);
  EXPECT_FALSE(f.b);
}

TEST_F(Values, TimeRoundTripsToTheMicrosecond) {
  for (int64_t micros : {kJan2 + 123456, int64_t{0}, int64_t{-86400000000 * 365}}) {
    const Value v = round_trip("ts", Value::time(micros));
    ASSERT_EQ(v.kind, Kind::Time);
    EXPECT_EQ(v.micros, micros);
  }
  // Bound as ISO text: what an expression column shows.
  EXPECT_EQ(scalar(conn, "SELECT $1", {P(Value::time(kJan2 + 5))}).str,
            "2024-01-02 00:00:00.000005+00:00");
}

TEST_F(Values, DecimalsReadAsExactTextAtTheDeclaredScale) {
  struct Case {
    Value in;
    std::string out;
  };
  const Case cases[] = {
      {Value::decimal("3.1"), "3.10"},
      {Value::decimal("-12.345"), "-12.35"},
      {I(7), "7.00"},
      {Value::float64(0.1), "0.10"},
      {Value::decimal("99999999.99"), "99999999.99"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.out);
    const Value v = round_trip("d", c.in);
    ASSERT_EQ(v.kind, Kind::Decimal);
    EXPECT_EQ(v.str, c.out);
  }
  const Value plain = round_trip("n", Value::decimal("2.5"));
  ASSERT_EQ(plain.kind, Kind::Decimal);
  EXPECT_EQ(plain.str, "2.5");
  const Value whole = round_trip("n", Value::decimal("10"));
  EXPECT_EQ(whole.str, "10");
  const Value word = round_trip("n", T("abc"));  // not a number: stays text
  EXPECT_EQ(word.kind, Kind::Text);
}

TEST_F(Values, ColumnsReportKindsAndNativeTypesFromDeclarations) {
  auto t = fetch(conn, "SELECT id, i, r, t, b, n, d, f, ts, dt, s FROM v");
  ASSERT_TRUE(t.ok());
  const auto& c = t->columns;
  ASSERT_EQ(c.size(), 11u);
  const Kind kinds[] = {Kind::I64,   Kind::I64,     Kind::F64,     Kind::Text,
                        Kind::Bytes, Kind::Decimal, Kind::Decimal, Kind::Bool,
                        Kind::Time,  Kind::Time,    Kind::Text};
  for (size_t i = 0; i < c.size(); ++i) {
    SCOPED_TRACE(c[i].name);
    EXPECT_EQ(c[i].kind, kinds[i]);
  }
  EXPECT_EQ(c[1].name, "i");
  EXPECT_EQ(c[6].native.name, "DECIMAL(10,2)");
  EXPECT_EQ(c[6].native.precision, 10);
  EXPECT_EQ(c[6].native.scale, 2);
  EXPECT_EQ(c[10].native.length, 20);
  EXPECT_EQ(c[8].native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(c[9].native.time_form, db::TimeForm::date);
  EXPECT_TRUE(c[1].nullable);
  EXPECT_FALSE(c[10].nullable);
}

TEST_F(Values, ExpressionColumnsTakeTheFirstRowsKind) {
  auto t = fetch(conn, "SELECT 1, 'a', 2.5, x'00', NULL, count(*) FROM v");
  ASSERT_TRUE(t.ok());
  const Kind kinds[] = {Kind::I64, Kind::Text, Kind::F64, Kind::Bytes, Kind::Null, Kind::I64};
  ASSERT_EQ(t->columns.size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(t->columns[i].kind, kinds[i]) << i;
  auto none = fetch(conn, "SELECT 1 AS one WHERE 0");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->columns[0].kind, Kind::Null);
  EXPECT_EQ(none->columns[0].name, "one");
  EXPECT_TRUE(none->rows.empty());
}

TEST_F(Values, BorrowedRowsLendWhatNextCopies) {
  exec(conn, "INSERT INTO v (id, t, b, d) VALUES (1, 'one', x'0102', 1.5), (2, 'two', x'03', 2)");
  auto rows = conn.query("SELECT t, b, d FROM v ORDER BY id");
  ASSERT_TRUE(rows.ok());
  std::vector<db::ValueView> row(3);
  ASSERT_TRUE(rows->next_borrowed(row).value());
  EXPECT_EQ(row[0].str, "one");
  EXPECT_EQ(row[1].str, std::string("\x01\x02", 2));
  EXPECT_EQ(row[2].kind, Kind::Decimal);
  EXPECT_EQ(row[2].str, "1.50");
  ASSERT_TRUE(rows->next_borrowed(row).value());
  EXPECT_EQ(row[0].str, "two");
  EXPECT_EQ(row[2].str, "2.00");
  EXPECT_FALSE(rows->next_borrowed(row).value());
  ASSERT_TRUE(rows->close().ok());
}

TEST_F(Values, RowWithTooFewSlotsIsAnError) {
  auto rows = conn.query("SELECT 1, 2");
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  auto r = rows->next(row);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_query);
}

TEST_F(Values, BoolColumnsReadOneZeroAndTrueFalseTextAsBool) {
  exec(
      conn,
      "INSERT INTO v (id, f) VALUES (1, 1), (2, 0), (3, 'true'), (4, 'FALSE'), (5, 't'), (6, 'f'), "
      "(7, 2), (8, 'yes'), (9, NULL), (10, '1')");
  auto t = fetch(conn, "SELECT f FROM v ORDER BY id");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 10u);
  const int expect_bool[] = {1, 0, 1, 0, 1, 0, -1, -1, -1, 1};
  for (size_t i = 0; i < 10; ++i) {
    SCOPED_TRACE(i + 1);
    const Value& v = t->rows[i][0];
    if (expect_bool[i] >= 0) {
      ASSERT_EQ(v.kind, Kind::Bool);
      EXPECT_EQ(v.b, expect_bool[i] == 1);
    }
  }
  EXPECT_EQ(t->rows[6][0].kind, Kind::I64);
  EXPECT_EQ(t->rows[7][0].kind, Kind::Text);
  EXPECT_EQ(t->rows[8][0].kind, Kind::Null);
}

TEST_F(Values, UntypedTextFromAPostgresClientReadsBackAsBoolAndTime) {
  const Value b = round_trip("f", T("t"), /*untyped=*/true);
  ASSERT_EQ(b.kind, Kind::Bool);
  EXPECT_TRUE(b.b);
  const Value ts = round_trip("ts", T("2024-01-02 03:04:05.25+02"), /*untyped=*/true);
  ASSERT_EQ(ts.kind, Kind::Time);
  EXPECT_EQ(ts.micros, kJan2 + (3 * 3600 + 4 * 60 + 5 - 7200) * 1000000LL + 250000);
}

TEST_F(Values, TimeColumnsReadUnixSecondsAndIsoTextAsTime) {
  exec(conn,
       "INSERT INTO v (id, ts) VALUES (1, 1704153600), (2, 1704153600.5), (3, '2024-01-02'), "
       "(4, '2024-01-02T00:00:01Z'), (5, '2024-01-02 02:00:00+02:00'), (6, '2024-01-02 "
       "00:00:00.000001'), "
       "(7, '2024-13-01'), (8, 'soon'), (9, 1e15), (10, x'00')");
  auto t = fetch(conn, "SELECT ts FROM v ORDER BY id");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 10u);
  const int64_t expect[] = {kJan2, kJan2 + 500000, kJan2, kJan2 + 1000000, kJan2, kJan2 + 1};
  for (size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(i + 1);
    ASSERT_EQ(t->rows[i][0].kind, Kind::Time);
    EXPECT_EQ(t->rows[i][0].micros, expect[i]);
  }
  EXPECT_EQ(t->rows[6][0].kind, Kind::Text);
  EXPECT_EQ(t->rows[7][0].kind, Kind::Text);
  EXPECT_EQ(t->rows[8][0].kind, Kind::I64);  // NUMERIC affinity made 1e15 an integer: out of range
  EXPECT_EQ(t->rows[9][0].kind, Kind::Bytes);
}

TEST_F(Values, DateColumnsReadMidnightUtcWithDateForm) {
  exec(conn, "INSERT INTO v (id, dt) VALUES (1, '2024-01-02')");
  auto t = fetch(conn, "SELECT dt FROM v");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns[0].native.time_form, db::TimeForm::date);
  ASSERT_EQ(t->rows[0][0].kind, Kind::Time);
  EXPECT_EQ(t->rows[0][0].micros, kJan2);
  exec(conn, "CREATE TABLE w (a DATETIME, b TIMESTAMP WITH TIME ZONE, c TIME)");
  auto w = fetch(conn, "SELECT a, b, c FROM w");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->columns[0].native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(w->columns[1].native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(w->columns[2].kind, Kind::Time);
}

}  // namespace
}  // namespace wirepool::sqlite_it
