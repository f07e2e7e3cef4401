// Native mode (QueryOptions::native): a PostgreSQL client of a PostgreSQL
// backend receives exactly what PostgreSQL sent.
//  - binary requested for every column: int4 stays int4 (4 bytes, OID 23), and
//    pg_format says 1; text requested (or none): PostgreSQL's text, pg_format 0
//  - mixed formats are fetched as text (libpq fetches one format for all) and
//    pg_format says so
//  - every value is Bytes, NULL is Null; columns carry OID, typmod (numeric(10,2)),
//    table OID, column number and type size
//  - native parameters pass through with their OID, bytes and format, for
//    unprepared and prepared statements; malformed ones are the server's error
//    (08P01 at severity ERROR: invalid_query, the session goes on)

#include <string>

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

db::QueryOptions native(std::vector<int16_t> formats = {}) {
  db::QueryOptions o;
  o.native = true;
  o.formats = std::move(formats);
  return o;
}

Param native_param(uint32_t oid, int16_t format, std::optional<std::string> bytes) {
  Param p;
  p.pg_oid = oid;
  p.pg_format = format;
  p.value = bytes ? Value::bytes(*bytes) : Value::null();
  return p;
}

class Native : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
    exec(conn, "DROP TABLE IF EXISTS " + table());
    exec(conn, "CREATE TABLE " + table() + " (id int4, price numeric(10,2), name varchar(8))");
    exec(conn, "INSERT INTO " + table() + " VALUES (7, 12.5, 'abc'), (8, NULL, NULL)");
  }
  Connection conn;
};

TEST_F(Native, BinaryRequestedKeepsInt4AsFourBytes) {
  auto t = fetch(conn, "SELECT 42::int4, 'x'::text", {}, native({1}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].kind, Kind::Bytes);
  EXPECT_EQ(t->rows[0][0].str, std::string("\0\0\0\x2a", 4));
  EXPECT_EQ(t->rows[0][1].str, "x");
  EXPECT_EQ(t->columns[0].native.pg_oid, 23u);
  EXPECT_EQ(t->columns[0].native.pg_typlen, 4);
  EXPECT_EQ(t->columns[0].native.pg_format, 1);
  EXPECT_EQ(t->columns[1].native.pg_format, 1);
}

TEST_F(Native, TextRequestedOrNoneIsPostgresText) {
  for (auto formats : {std::vector<int16_t>{}, std::vector<int16_t>{0}}) {
    auto t = fetch(conn, "SELECT 42::int4, 1.50::numeric, true", {}, native(formats));
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->rows[0][0].str, "42");
    EXPECT_EQ(t->rows[0][1].str, "1.50");
    EXPECT_EQ(t->rows[0][2].str, "t");
    for (const auto& c : t->columns)
      EXPECT_EQ(c.native.pg_format, 0);
  }
}

TEST_F(Native, MixedFormatsAreFetchedAsTextAndSaySo) {
  auto t = fetch(conn, "SELECT 1::int4, 2::int4", {}, native({1, 0}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].str, "1");
  EXPECT_EQ(t->columns[0].native.pg_format, 0);
  EXPECT_EQ(t->columns[1].native.pg_format, 0);
}

TEST_F(Native, ColumnsCarryRowDescriptionFields) {
  auto t = fetch(conn, "SELECT id, price, name FROM " + table() + " ORDER BY id", {}, native({1}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto& c = t->columns;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[1].native.pg_oid, 1700u);
  EXPECT_EQ(c[1].native.pg_typmod, ((10 << 16) | 2) + 4);
  EXPECT_EQ(c[1].native.pg_typlen, -1);
  EXPECT_EQ(c[1].native.pg_column, 2);
  EXPECT_EQ(c[2].native.pg_oid, 1043u);
  EXPECT_EQ(c[2].native.pg_typmod, 8 + 4);
  auto oid = scalar(conn, "SELECT '" + table() + "'::regclass::oid");
  EXPECT_EQ(c[0].native.pg_table_oid, static_cast<uint32_t>(oid.i64));
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0][1].kind, Kind::Bytes);  // numeric's binary form, as sent
  EXPECT_EQ(t->rows[0][1].str.size(), 12u);    // 8-byte header + 2 digits
  EXPECT_EQ(t->rows[1][1].kind, Kind::Null);
  EXPECT_EQ(t->rows[1][2].kind, Kind::Null);
}

TEST_F(Native, NativeParametersPassThrough) {
  auto t = fetch(
      conn, "SELECT $1 + 1, $2::text",
      {native_param(23, 1, std::string("\0\0\0\x29", 4)), native_param(0, 0, std::string("hello"))},
      native({1}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->columns[0].native.pg_oid, 23u);
  EXPECT_EQ(t->rows[0][0].str, std::string("\0\0\0\x2a", 4));
  EXPECT_EQ(t->rows[0][1].str, "hello");
  auto null = fetch(conn, "SELECT $1::int4 IS NULL", {native_param(23, 1, std::nullopt)});
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->rows[0][0].b);
}

TEST_F(Native, MalformedNativeBinaryIsTheServersErrorAndTheSessionGoesOn) {
  auto e = error_of(conn, "SELECT $1::int4", {native_param(23, 1, std::string("\1", 1))});
  EXPECT_EQ(e.sqlstate, "08P01");  // "insufficient data left in message", severity ERROR
  EXPECT_EQ(e.code, Errc::invalid_query);
  EXPECT_TRUE(conn.alive());
  EXPECT_EQ(scalar(conn, "SELECT 1").i64, 1);
}

TEST_F(Native, PreparedStatementsTakeNativeParametersAndFormats) {
  auto st = blocking(
      conn, [&] { return conn.prepare("SELECT price FROM " + table() + " WHERE id = $1"); });
  ASSERT_TRUE(st.ok()) << st.error().message;
  std::vector<Param> params{native_param(23, 0, std::string("7"))};
  auto rows = blocking(conn, [&] { return st->query(params, native({0})); });
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto t = read_all(conn, rows.value());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].str, "12.50");
  EXPECT_EQ(t->columns[0].native.pg_format, 0);
  ASSERT_TRUE(blocking(conn, [&] { return st->close(); }).ok());
}

}  // namespace
}  // namespace wirepool::pg_it
