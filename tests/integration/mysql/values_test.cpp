// Values against the live MariaDB, through both protocols (text without
// parameters, binary prepared statements with them):
//  - every kind round-tripped incl. NULLs: TINYINT(1) as Bool, BIGINT and
//    BIGINT UNSIGNED (U64 max), DOUBLE and FLOAT, DECIMAL exact, VARCHAR/TEXT
//    (UTF-8) as Text and BLOB/VARBINARY (charset 63, with NUL and 0xff) as
//    Bytes, DATE / DATETIME(6) / TIMESTAMP(6) as Time with their forms, JSON as
//    text, TIME as text;
//  - a zero date reads as NULL; BIT as U64, ENUM and SET as text, YEAR as I64;
//  - a 100 KB value (the binary protocol's buffer grows on the row that needs it);
//  - a prepared statement reused with new values; $1 $2 $1 binds $1 twice;
//  - affected rows (UPDATE counts matched rows) and last insert id;
//  - parameter count mismatch answers 08P01 before reaching the server;
//    parameters declared beyond the markers are supplied but unused.

#include "tests/integration/mysql/mysql_fixture.hpp"

namespace wirepool::mysql_it {
namespace {

constexpr int64_t kMicros = 1709210096123456;  // 2024-02-29 12:34:56.123456 UTC
constexpr int64_t kDay = 1709164800000000;     // 2024-02-29

class Values : public MysqlTest {
 protected:
  void make_table(Connection& c) {
    exec(c, "DROP TABLE IF EXISTS " + table());
    exec(c, "CREATE TABLE " + table() +
                " (id INT PRIMARY KEY, b TINYINT(1), i INT, bi BIGINT, u BIGINT UNSIGNED, "
                "f DOUBLE, fl FLOAT, d DECIMAL(20,6), t VARCHAR(100), tx TEXT, bl BLOB, "
                "vb VARBINARY(10), dt DATETIME(6), ts TIMESTAMP(6) NULL, da DATE, j JSON, "
                "tm TIME)");
  }
  std::vector<Param> row_params() {
    std::vector<Param> p;
    p.push_back(P(I(1)));
    p.push_back(P(Value::boolean(true)));
    p.push_back(P(I(-2147483648LL)));
    p.push_back(P(I(INT64_MIN)));
    p.push_back(P(Value::uint64(UINT64_MAX)));
    p.push_back(P(Value::float64(-1.5e300)));
    p.push_back(P(Value::float64(0.1)));
    p.push_back(P(Value::decimal("-12345678901234.000100")));
    p.push_back(P(T("h\xC3\xA9llo \xE2\x9C\x93")));
    p.push_back(P(T(std::string("tab\tquote'back\\slash"))));
    p.push_back(P(Value::bytes(std::string("\x00\xff\x01", 3))));
    p.push_back(P(Value::bytes(std::string("\x00", 1))));
    p.push_back(P(Value::time(kMicros)));
    p.push_back(P(Value::time(kMicros)));
    p.push_back(P(Value::time(kDay)));
    p.push_back(P(T(R"({"a": [1, 2]})")));
    p.push_back(P(T("-838:59:59")));
    return p;
  }
  void check_row(const Table& t, size_t r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const auto& v = t.rows[r];
    ASSERT_EQ(v.size(), 17u);
    EXPECT_EQ(t.columns[1].kind, Kind::Bool);
    EXPECT_EQ(t.columns[4].kind, Kind::U64);
    EXPECT_EQ(t.columns[7].kind, Kind::Decimal);
    EXPECT_EQ(t.columns[7].native.precision, 20);
    EXPECT_EQ(t.columns[7].native.scale, 6);
    EXPECT_EQ(t.columns[10].kind, Kind::Bytes);
    EXPECT_EQ(t.columns[9].kind, Kind::Text);
    EXPECT_EQ(t.columns[12].native.time_form, db::TimeForm::timestamp);
    EXPECT_EQ(t.columns[13].native.time_form, db::TimeForm::timestamptz);
    EXPECT_EQ(t.columns[14].native.time_form, db::TimeForm::date);
    EXPECT_EQ(t.columns[15].kind, Kind::Text);
    ASSERT_EQ(v[1].kind, Kind::Bool);
    EXPECT_TRUE(v[1].b);
    ASSERT_EQ(v[2].kind, Kind::I64);
    EXPECT_EQ(v[2].i64, -2147483648LL);
    EXPECT_EQ(v[3].i64, INT64_MIN);
    ASSERT_EQ(v[4].kind, Kind::U64);
    EXPECT_EQ(v[4].u64, UINT64_MAX);
    ASSERT_EQ(v[5].kind, Kind::F64);
    EXPECT_EQ(v[5].f64, -1.5e300);
    EXPECT_EQ(v[6].f64, 0.1);  // FLOAT widened by its shortest spelling
    ASSERT_EQ(v[7].kind, Kind::Decimal);
    EXPECT_EQ(v[7].str, "-12345678901234.000100");
    ASSERT_EQ(v[8].kind, Kind::Text);
    EXPECT_EQ(v[8].str, "h\xC3\xA9llo \xE2\x9C\x93");
    EXPECT_EQ(v[9].str, "tab\tquote'back\\slash");
    ASSERT_EQ(v[10].kind, Kind::Bytes);
    EXPECT_EQ(v[10].str, std::string("\x00\xff\x01", 3));
    ASSERT_EQ(v[11].kind, Kind::Bytes);
    EXPECT_EQ(v[11].str, std::string("\x00", 1));
    ASSERT_EQ(v[12].kind, Kind::Time);
    EXPECT_EQ(v[12].micros, kMicros);
    ASSERT_EQ(v[13].kind, Kind::Time);
    EXPECT_EQ(v[13].micros, kMicros);
    ASSERT_EQ(v[14].kind, Kind::Time);
    EXPECT_EQ(v[14].micros, kDay);
    ASSERT_EQ(v[15].kind, Kind::Text);
    EXPECT_NE(v[15].str.find("\"a\""), std::string::npos);
    ASSERT_EQ(v[16].kind, Kind::Text);
    EXPECT_EQ(v[16].str, "-838:59:59");
  }
  static std::string placeholders() {
    std::string s = "?";
    for (int i = 1; i < 17; ++i)
      s += ", ?";
    return s;
  }
};

TEST_F(Values, EveryKindRoundTripsThroughBothProtocols) {
  Connection c = open();
  make_table(c);
  exec(c, "INSERT INTO " + table() + " VALUES (" + placeholders() + ")", row_params());
  exec(c, "INSERT INTO " + table() + " (id) VALUES (2)");  // all NULL

  // Text protocol (no parameters).
  auto text = fetch(c, "SELECT * FROM " + table() + " ORDER BY id");
  ASSERT_TRUE(text.ok()) << text.error().message;
  ASSERT_EQ(text->rows.size(), 2u);
  check_row(*text, 0);
  for (size_t i = 1; i < 17; ++i)
    EXPECT_EQ(text->rows[1][i].kind, Kind::Null) << i;

  // Binary protocol (a parameter).
  auto bin = fetch(c, "SELECT * FROM " + table() + " WHERE id >= ? ORDER BY id", {P(I(0))});
  ASSERT_TRUE(bin.ok()) << bin.error().message;
  ASSERT_EQ(bin->rows.size(), 2u);
  check_row(*bin, 0);
  for (size_t i = 1; i < 17; ++i)
    EXPECT_EQ(bin->rows[1][i].kind, Kind::Null) << i;
}

TEST_F(Values, NullParametersAndFalse) {
  Connection c = open();
  make_table(c);
  exec(c, "INSERT INTO " + table() + " (id, b, t, bl) VALUES ($1, $2, $3, $4)",
       {P(I(1)), P(Value::boolean(false)), P(Value::null()), P(Value::null())});
  auto t = fetch(c, "SELECT b, t, bl FROM " + table() + " WHERE id = $1", {P(I(1))});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  ASSERT_EQ(t->rows[0][0].kind, Kind::Bool);
  EXPECT_FALSE(t->rows[0][0].b);
  EXPECT_TRUE(t->rows[0][1].is_null());
  EXPECT_TRUE(t->rows[0][2].is_null());
}

TEST_F(Values, LongValuesThroughBothProtocols) {
  Connection c = open();
  exec(c, "DROP TABLE IF EXISTS " + table());
  exec(c, "CREATE TABLE " + table() + " (id INT PRIMARY KEY, t LONGTEXT, b LONGBLOB)");
  const std::string big(100 * 1024, 'x');
  std::string blob(100 * 1024, '\0');
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<char>(i * 7);
  exec(c, "INSERT INTO " + table() + " VALUES (1, ?, ?), (2, 'short', 'b')",
       {P(T(big)), P(Value::bytes(blob))});
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    auto t = prepared
                 ? fetch(c, "SELECT t, b FROM " + table() + " WHERE id > ? ORDER BY id", {P(I(0))})
                 : fetch(c, "SELECT t, b FROM " + table() + " ORDER BY id");
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_EQ(t->rows.size(), 2u);
    EXPECT_EQ(t->rows[0][0].str, big);
    EXPECT_EQ(t->rows[0][1].str, blob);
    EXPECT_EQ(t->rows[1][0].str, "short");
    EXPECT_EQ(t->rows[1][1].str, "b");
  }
}

TEST_F(Values, PreparedStatementReusedAndRepeatedDollarMarkers) {
  Connection c = open();
  auto st = c.prepare("SELECT $1 + 0, $2, $1 * 2");
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->params().size(), 2u);
  for (int64_t i = 1; i <= 3; ++i) {
    std::vector<Param> p = {P(I(i)), P(T("v" + std::to_string(i)))};
    auto rows = st->query(p);
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    auto t = read_all(rows.value());
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->rows.size(), 1u);
    EXPECT_EQ(t->rows[0][0].i64, i);
    EXPECT_EQ(t->rows[0][1].str, "v" + std::to_string(i));
    EXPECT_EQ(t->rows[0][2].i64, 2 * i);
    ASSERT_TRUE(rows->close().ok());
  }
  ASSERT_TRUE(st->close().ok());
  // A statement without parameters runs through the text protocol.
  auto plain = c.prepare("SELECT 1 + 1");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_EQ(plain->columns().size(), 1u);
  auto r = plain->query();
  ASSERT_TRUE(r.ok());
  auto t = read_all(r.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].i64, 2);
}

TEST_F(Values, AffectedRowsAndLastInsertId) {
  Connection c = open();
  exec(c, "DROP TABLE IF EXISTS " + table());
  exec(c, "CREATE TABLE " + table() + " (id INT AUTO_INCREMENT PRIMARY KEY, v INT)");
  auto ins = c.execute("INSERT INTO " + table() + " (v) VALUES (1), (1), (1)");
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  EXPECT_EQ(ins->affected, 3);
  EXPECT_EQ(ins->last_insert_id, 1);  // MySQL: the first id of a multi-row insert
  EXPECT_EQ(ins->verb, "INSERT");
  auto one = c.execute("INSERT INTO " + table() + " (v) VALUES (?)", std::vector<Param>{P(I(2))});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->last_insert_id, 4);
  // Matched, not only changed, rows (CLIENT_FOUND_ROWS), as PostgreSQL counts.
  auto upd = c.execute("UPDATE " + table() + " SET v = 1 WHERE v = 1");
  ASSERT_TRUE(upd.ok());
  EXPECT_EQ(upd->affected, 3);
  auto del = c.execute("DELETE FROM " + table() + " WHERE v = ?", std::vector<Param>{P(I(2))});
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->affected, 1);
  EXPECT_EQ(del->verb, "DELETE");
}

TEST_F(Values, ParameterCountMismatch) {
  Connection c = open();
  auto e = error_of(c, "SELECT ?, ?", {P(I(1))});
  EXPECT_EQ(e.sqlstate, "08P01");
  e = error_of(c, "SELECT 1", {P(I(1))});
  EXPECT_EQ(e.sqlstate, "08P01");
  e = error_of(c, "SELECT $1, ?", {P(I(1))});
  EXPECT_EQ(e.sqlstate, "42601");
  // The connection is still usable.
  EXPECT_EQ(scalar(c, "SELECT 7").i64, 7);
}

TEST_F(Values, DeclaredParametersBeyondTheMarkersAreSuppliedButUnused) {
  Connection c = open();
  const db::ParamInfo hints[2] = {};
  auto st = c.prepare("SELECT $1 + 1", hints);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->params().size(), 2u);
  auto rows = st->query(std::vector<Param>{P(I(1)), P(T("unused"))});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].i64, 2);
  ASSERT_TRUE(rows->close().ok());
  auto short_of_one = st->query(std::vector<Param>{P(I(1))});
  ASSERT_FALSE(short_of_one.ok());
  EXPECT_EQ(short_of_one.error().sqlstate, "08P01");
}

TEST_F(Values, ZeroDatesBitsEnumsAndSetsInBothProtocols) {
  Connection c = open();
  exec(c, "DROP TABLE IF EXISTS " + table());
  exec(c, "SET SESSION sql_mode = ''");  // lets a zero date in
  exec(c, "CREATE TABLE " + table() +
              " (id INT, d DATE, dt DATETIME, b BIT(10), e ENUM('red', 'green'), "
              "s SET('a', 'b', 'c'), y YEAR)");
  exec(c, "INSERT INTO " + table() +
              " VALUES (1, '0000-00-00', '0000-00-00 00:00:00', b'1000000001', 'green', 'a,c', "
              "2024)");
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    auto t = prepared
                 ? fetch(c, "SELECT d, dt, b, e, s, y FROM " + table() + " WHERE id = ?", {P(I(1))})
                 : fetch(c, "SELECT d, dt, b, e, s, y FROM " + table());
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_EQ(t->rows.size(), 1u);
    const auto& v = t->rows[0];
    EXPECT_EQ(t->columns[0].kind, Kind::Time);
    EXPECT_TRUE(v[0].is_null());  // no Time holds a zero date
    EXPECT_TRUE(v[1].is_null());
    ASSERT_EQ(v[2].kind, Kind::U64);
    EXPECT_EQ(v[2].u64, 513u);
    ASSERT_EQ(v[3].kind, Kind::Text);
    EXPECT_EQ(v[3].str, "green");
    ASSERT_EQ(v[4].kind, Kind::Text);
    EXPECT_EQ(v[4].str, "a,c");
    ASSERT_EQ(v[5].kind, Kind::I64);
    EXPECT_EQ(v[5].i64, 2024);
  }
}

}  // namespace
}  // namespace wirepool::mysql_it
