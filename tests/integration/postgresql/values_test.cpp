// Values through a real PostgreSQL 15, bound as parameters and read back
// (non-native mode: binary results decoded into the contract's kinds):
//  - every kind round-trips in its natural type: NULL, Bool, I64 extremes, U64
//    beyond int64 (numeric), F64 (incl. infinities), Text (non-ASCII, empty is
//    not NULL), Bytes (100 KB of every byte value), Time (microseconds,
//    timestamptz), Decimal
//  - numeric keeps its stored scale: -0.000100 stays -0.000100, 1.50 in
//    numeric(10,2) is "1.50", NaN and Infinity are Text
//  - uuid canonical lower case, jsonb without its version byte, json/xml text
//  - date before 2000 and timestamp without zone; timestamptz at microseconds
//  - int2/int4/oid are I64, float4 is F64; an unknown type is Bytes holding its
//    binary form; 100 KB text
//  - column kinds and native fields (OID, typmod, table OID, column number,
//    size, precision/scale, length, time form)
//  - untyped text parameters take the type the server infers
//  - multi-statement text (simple protocol, text results) decodes the same kinds

#include <cmath>
#include <string>

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

constexpr int64_t kJan2 = 1704153600LL * 1000000;  // 2024-01-02T00:00:00Z

class Values : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
    exec(conn, "DROP TABLE IF EXISTS " + table());
    exec(conn, "CREATE TABLE " + table() +
                   " (id int PRIMARY KEY, i8 bigint, i4 int, i2 smallint, f8 float8, f4 float4,"
                   " t text, vc varchar(20), b bytea, n numeric, d numeric(10,2), f boolean,"
                   " ts timestamptz, tsn timestamp, dt date, u uuid, j jsonb, js json)");
  }

  /// Inserts `v` into column `col` and reads it back.
  Value round_trip(const std::string& col, Value v) {
    exec(conn, "DELETE FROM " + table());
    exec(conn, "INSERT INTO " + table() + " (id, " + col + ") VALUES (1, $1)", {P(std::move(v))});
    return scalar(conn, "SELECT " + col + " FROM " + table() + " WHERE id = 1");
  }

  Connection conn;
};

TEST_F(Values, NullRoundTripsInEveryColumn) {
  for (const char* col : {"i8", "i4", "f8", "t", "b", "n", "d", "f", "ts", "dt", "u", "j"}) {
    SCOPED_TRACE(col);
    EXPECT_EQ(round_trip(col, Value::null()).kind, Kind::Null);
  }
}

TEST_F(Values, IntegersRoundTripIncludingExtremes) {
  for (int64_t x : {int64_t{0}, int64_t{-1}, INT64_MAX, INT64_MIN}) {
    const Value v = round_trip("i8", I(x));
    ASSERT_EQ(v.kind, Kind::I64);
    EXPECT_EQ(v.i64, x);
  }
  const Value small = round_trip("i2", I(-32768));
  ASSERT_EQ(small.kind, Kind::I64);
  EXPECT_EQ(small.i64, -32768);
  const Value four = round_trip("i4", I(INT32_MAX));
  ASSERT_EQ(four.kind, Kind::I64);
  EXPECT_EQ(four.i64, INT32_MAX);
  const Value oid = scalar(conn, "SELECT 4294967295::oid");
  ASSERT_EQ(oid.kind, Kind::I64);
  EXPECT_EQ(oid.i64, 4294967295LL);
}

TEST_F(Values, U64BeyondInt64GoesAsNumeric) {
  const Value v = round_trip("n", Value::uint64(UINT64_MAX));
  ASSERT_EQ(v.kind, Kind::Decimal);
  EXPECT_EQ(v.str, "18446744073709551615");
}

TEST_F(Values, FloatsRoundTripExactly) {
  for (double x : {0.1, -1e300, 5e-324, 1.0 / 3}) {
    const Value v = round_trip("f8", Value::float64(x));
    ASSERT_EQ(v.kind, Kind::F64);
    EXPECT_EQ(v.f64, x);
  }
  const Value inf = round_trip("f8", Value::float64(-HUGE_VAL));
  ASSERT_EQ(inf.kind, Kind::F64);
  EXPECT_EQ(inf.f64, -HUGE_VAL);
  const Value f4 = round_trip("f4", Value::float64(0.5));
  ASSERT_EQ(f4.kind, Kind::F64);
  EXPECT_EQ(f4.f64, 0.5);
}

TEST_F(Values, BoolRoundTrips) {
  for (bool b : {true, false}) {
    const Value v = round_trip("f", Value::boolean(b));
    ASSERT_EQ(v.kind, Kind::Bool);
    EXPECT_EQ(v.b, b);
  }
}

TEST_F(Values, TextRoundTripsNonAsciiAndEmptyIsNotNull) {
  const Value v = round_trip("t", T("grüße, 世界 🎉"));
  ASSERT_EQ(v.kind, Kind::Text);
  EXPECT_EQ(v.str, "grüße, 世界 🎉");
  const Value empty = round_trip("t", T(""));
  ASSERT_EQ(empty.kind, Kind::Text);
  EXPECT_EQ(empty.str, "");
  const Value vc = round_trip("vc", T("short"));
  ASSERT_EQ(vc.kind, Kind::Text);
  EXPECT_EQ(vc.str, "short");
}

TEST_F(Values, HundredKilobytesOfBytesAndText) {
  std::string bytes(100 * 1024, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7 % 256);
  const Value b = round_trip("b", Value::bytes(bytes));
  ASSERT_EQ(b.kind, Kind::Bytes);
  EXPECT_EQ(b.str, bytes);
  const std::string text(100 * 1024, 'x');
  const Value t = round_trip("t", T(text));
  ASSERT_EQ(t.kind, Kind::Text);
  EXPECT_EQ(t.str, text);
  const Value empty = round_trip("b", Value::bytes(""));
  ASSERT_EQ(empty.kind, Kind::Bytes);
  EXPECT_EQ(empty.str, "");
}

TEST_F(Values, TimestamptzRoundTripsToTheMicrosecond) {
  const int64_t t = kJan2 + 3723456789;  // 01:02:03.456789
  const Value v = round_trip("ts", Value::time(t));
  ASSERT_EQ(v.kind, Kind::Time);
  EXPECT_EQ(v.micros, t);
  const Value early = round_trip("ts", Value::time(-86400LL * 1000000 * 365));  // 1969
  ASSERT_EQ(early.kind, Kind::Time);
  EXPECT_EQ(early.micros, -86400LL * 1000000 * 365);
}

TEST_F(Values, DateBefore2000AndTimestampWithoutZone) {
  const Value d = scalar(conn, "SELECT DATE '1969-07-20'");
  ASSERT_EQ(d.kind, Kind::Time);
  EXPECT_EQ(d.micros, -165LL * 86400 * 1000000);
  const Value ts = scalar(conn, "SELECT TIMESTAMP '1999-12-31 23:59:59.5'");
  ASSERT_EQ(ts.kind, Kind::Time);
  EXPECT_EQ(ts.micros, 946684799500000LL);
  const Value inf = scalar(conn, "SELECT 'infinity'::timestamptz");
  ASSERT_EQ(inf.kind, Kind::Time);
  EXPECT_EQ(inf.micros, INT64_MAX);
  // A Time parameter into a date column: the server casts timestamptz -> date (noon UTC:
  // the same day in any zone within 11 hours).
  const Value dt = round_trip("dt", Value::time(kJan2 + 12 * 3600LL * 1000000));
  ASSERT_EQ(dt.kind, Kind::Time);
  EXPECT_EQ(dt.micros, kJan2);
}

TEST_F(Values, NumericKeepsItsStoredScale) {
  const Value v = scalar(conn, "SELECT -0.000100::numeric");
  ASSERT_EQ(v.kind, Kind::Decimal);
  EXPECT_EQ(v.str, "-0.000100");
  const Value d = round_trip("d", Value::decimal("1.5"));
  ASSERT_EQ(d.kind, Kind::Decimal);
  EXPECT_EQ(d.str, "1.50");
  const Value big = round_trip("n", Value::decimal("123456789012345678901234567890.000000001"));
  ASSERT_EQ(big.kind, Kind::Decimal);
  EXPECT_EQ(big.str, "123456789012345678901234567890.000000001");
  const Value zero = scalar(conn, "SELECT 0.00::numeric");
  EXPECT_EQ(zero.str, "0.00");
  const Value ten_k = scalar(conn, "SELECT 10000::numeric");
  EXPECT_EQ(ten_k.str, "10000");
}

TEST_F(Values, NumericNanAndInfinityAreText) {
  const Value nan = scalar(conn, "SELECT 'NaN'::numeric");
  ASSERT_EQ(nan.kind, Kind::Text);
  EXPECT_EQ(nan.str, "NaN");
  const Value inf = scalar(conn, "SELECT '-Infinity'::numeric");
  ASSERT_EQ(inf.kind, Kind::Text);
  EXPECT_EQ(inf.str, "-Infinity");
}

TEST_F(Values, UuidIsCanonicalLowerCaseText) {
  const Value v = round_trip("u", T("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"));
  ASSERT_EQ(v.kind, Kind::Text);
  EXPECT_EQ(v.str, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
}

TEST_F(Values, JsonbIsTextWithoutItsVersionByte) {
  const Value v = round_trip("j", T(R"({"b": [1, 2], "a": "x"})"));
  ASSERT_EQ(v.kind, Kind::Text);
  EXPECT_EQ(v.str, R"({"a": "x", "b": [1, 2]})");  // jsonb's own order
  const Value js = round_trip("js", T(R"({"b":1,  "a":2})"));
  ASSERT_EQ(js.kind, Kind::Text);
  EXPECT_EQ(js.str, R"({"b":1,  "a":2})");  // json keeps the text
  const Value xml = scalar(conn, "SELECT '<a>1</a>'::xml");
  ASSERT_EQ(xml.kind, Kind::Text);
  EXPECT_EQ(xml.str, "<a>1</a>");
}

TEST_F(Values, UnknownTypesAreBytesOfTheirBinaryForm) {
  const Value v = scalar(conn, "SELECT '1 day'::interval");
  ASSERT_EQ(v.kind, Kind::Bytes);
  // interval binary: int64 microseconds, int32 days, int32 months.
  EXPECT_EQ(v.str, std::string("\0\0\0\0\0\0\0\0\0\0\0\1\0\0\0\0", 16));
}

TEST_F(Values, UntypedTextTakesTheInferredType) {
  Param p = P(T("42"));
  p.untyped = true;
  const Value v = scalar(conn, "SELECT $1::int + 1", {p});
  ASSERT_EQ(v.kind, Kind::I64);
  EXPECT_EQ(v.i64, 43);
  exec(conn, "INSERT INTO " + table() + " (id, f, ts) VALUES ($1, $2, $3)",
       {P(T("7")), P(T("t")), P(T("2024-01-02 00:00:00+00"))});
  auto t = fetch(conn, "SELECT f, ts FROM " + table() + " WHERE id = 7");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].kind, Kind::Bool);
  EXPECT_EQ(t->rows[0][1].micros, kJan2);
}

TEST_F(Values, ColumnsCarryKindsAndNativeTypes) {
  auto t = fetch(conn, "SELECT id, i8, d, vc, ts, tsn, dt, b, u FROM " + table());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto& c = t->columns;
  ASSERT_EQ(c.size(), 9u);
  EXPECT_EQ(c[0].name, "id");
  EXPECT_EQ(c[0].kind, Kind::I64);
  EXPECT_EQ(c[0].native.pg_oid, 23u);
  EXPECT_EQ(c[0].native.pg_typlen, 4);
  EXPECT_EQ(c[0].native.pg_column, 1);
  EXPECT_NE(c[0].native.pg_table_oid, 0u);
  EXPECT_EQ(c[0].native.name, "int4");
  EXPECT_EQ(c[2].kind, Kind::Decimal);
  EXPECT_EQ(c[2].native.pg_oid, 1700u);
  EXPECT_EQ(c[2].native.pg_typmod, (10 << 16 | 2) + 4);
  EXPECT_EQ(c[2].native.precision, 10);
  EXPECT_EQ(c[2].native.scale, 2);
  EXPECT_EQ(c[3].kind, Kind::Text);
  EXPECT_EQ(c[3].native.length, 20);
  EXPECT_EQ(c[4].native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(c[5].native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(c[6].native.time_form, db::TimeForm::date);
  EXPECT_EQ(c[7].kind, Kind::Bytes);
  EXPECT_EQ(c[8].kind, Kind::Text);
  for (const auto& col : c)
    EXPECT_EQ(col.native.pg_format, 1) << col.name;  // non-native: fetched in binary
}

TEST_F(Values, BorrowedRowsLendTheSameValues) {
  exec(conn, "INSERT INTO " + table() + " (id, t, b, n) VALUES (1, 'abc', '\\x0001', 2.50)");
  auto rows = query(conn, "SELECT t, b, n, id FROM " + table());
  ASSERT_TRUE(rows.ok());
  std::vector<db::ValueView> row(4);
  auto more = blocking(conn, [&] { return rows->next_borrowed(row); });
  ASSERT_TRUE(more.ok() && more.value());
  EXPECT_EQ(row[0].str, "abc");
  EXPECT_EQ(row[1].str, std::string("\0\1", 2));
  EXPECT_EQ(row[2].kind, Kind::Decimal);
  EXPECT_EQ(row[2].str, "2.50");
  EXPECT_EQ(row[3].i64, 1);
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
}

TEST_F(Values, MultiStatementTextDecodesTheSameKinds) {
  auto rows = query(conn,
                    "SELECT 1::int4, true, -0.000100::numeric, DATE '1969-07-20', "
                    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '\\x0102'::bytea, 1.5::float8; "
                    "SELECT 'NaN'::numeric, '1 day'::interval");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto first = read_all(conn, rows.value());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->rows.size(), 1u);
  const auto& r = first->rows[0];
  EXPECT_EQ(first->columns[0].native.pg_format, 0);  // the simple protocol answers text
  EXPECT_EQ(r[0].kind, Kind::I64);
  EXPECT_EQ(r[0].i64, 1);
  EXPECT_EQ(r[1].kind, Kind::Bool);
  EXPECT_EQ(r[2].kind, Kind::Decimal);
  EXPECT_EQ(r[2].str, "-0.000100");
  EXPECT_EQ(r[3].kind, Kind::Time);
  EXPECT_EQ(r[3].micros, -165LL * 86400 * 1000000);
  EXPECT_EQ(r[4].str, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_EQ(r[5].kind, Kind::Bytes);
  EXPECT_EQ(r[5].str, "\x01\x02");
  EXPECT_EQ(r[6].f64, 1.5);
  auto more = blocking(conn, [&] { return rows->next_result(); });
  ASSERT_TRUE(more.ok() && more.value());
  auto second = read_all(conn, rows.value());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->rows[0][0].kind, Kind::Text);
  EXPECT_EQ(second->rows[0][0].str, "NaN");
  EXPECT_EQ(second->rows[0][1].kind, Kind::Bytes);  // its text form here
  EXPECT_EQ(second->rows[0][1].str, "1 day");
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
}

}  // namespace
}  // namespace wirepool::pg_it
