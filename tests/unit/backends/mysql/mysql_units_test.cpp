// The MySQL driver's pure parts (no server):
//  - the ? lexer: the seed's line has exactly one marker; backslash escapes in
//    both quote styles, backquoted identifiers, #, "-- " and /* */ comments;
//  - $N -> ? rewriting: order kept, repeated $N bound again, markers inside
//    literals and comments untouched, $N mixed with ? refused, $0 refused;
//  - the type mapping from field metadata: TINYINT(1) Bool, BIGINT UNSIGNED
//    U64, DECIMAL Decimal with precision/scale, DATE/DATETIME/TIMESTAMP Time
//    with their forms, BLOB vs TEXT by charset 63, JSON text, TIME text, BIT;
//  - value conversions: datetime text and MYSQL_TIME <-> micros (before 1970,
//    fractions, zero dates), TIME spelling, BIT bytes, FLOAT widening;
//  - errno -> SQLSTATE: each row of DESIGN.md's table decided by the errno
//    whatever generic SQLSTATE the server sent (the table shared with the ODBC
//    driver, then the driver's own rows: 1049 is not a lost connection);
//    unknown numbers keep a precise SQLSTATE; client errors are Connection;
//  - the connection string: keys, quoting, bad port, unknown and TLS keys,
//    the entry's password overriding, redaction; one host of several (the
//    host monitor's) replacing the connection's host, port and socket.

#include <gtest/gtest.h>

#include <cmath>

#include "backends/mysql/mysql_errors.hpp"
#include "backends/mysql/mysql_options.hpp"
#include "backends/mysql/mysql_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::mysql {
namespace {

using sql::Dialect;

std::vector<std::string_view> markers_of(std::string_view text) {
  std::vector<std::string_view> out;
  for (const auto& m : sql::find_markers(text, Dialect::mysql))
    out.push_back(text.substr(m.offset, m.length));
  return out;
}

TEST(MysqlLexer, SeedLineHasExactlyOneMarker) {
  const std::string_view text = R"(SELECT CONCAT('?', ? /* ? */, "?") -- ?)";
  const auto q = sql::to_question_markers(text, Dialect::mysql);
  EXPECT_EQ(markers_of(text).size(), 1u);
  EXPECT_EQ(q.slots, std::vector<int>{0});
  EXPECT_EQ(q.required, 1);
  EXPECT_EQ(q.text, text);
}

TEST(MysqlLexer, BackslashEscapesBackquotesAndComments) {
  EXPECT_EQ(markers_of(R"(SELECT 'it\'s ?', ?)").size(), 1u);
  EXPECT_EQ(markers_of(R"(SELECT "say \"?\"", ?)").size(), 1u);
  EXPECT_EQ(markers_of(R"(SELECT 'a\\', ?)").size(), 1u);  // \\ ends at the quote
  EXPECT_EQ(markers_of("SELECT `we?ird``?`, ?").size(), 1u);
  EXPECT_EQ(markers_of("SELECT ? # ?\n, ?").size(), 2u);
  EXPECT_EQ(markers_of("SELECT ? -- ?\n, ?").size(), 2u);
  EXPECT_EQ(markers_of("SELECT 1 --?, ?").size(), 2u);  // "--" without a space is minus minus
  EXPECT_EQ(markers_of("SELECT ? /* ? \n ? */, ?").size(), 2u);
}

TEST(MysqlLexer, DollarMarkersRewrittenInOrderWithRepeats) {
  const auto q = sql::to_question_markers("SELECT $1, $2, $1", Dialect::mysql);
  EXPECT_TRUE(q.error.empty());
  EXPECT_EQ(q.text, "SELECT ?, ?, ?");
  EXPECT_EQ(q.slots, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(q.required, 2);

  const auto r = sql::to_question_markers("SELECT $2 + $10, '$1', `$1`, a$1 # $3", Dialect::mysql);
  EXPECT_EQ(r.text, "SELECT ? + ?, '$1', `$1`, a$1 # $3");
  EXPECT_EQ(r.slots, (std::vector<int>{1, 9}));
  EXPECT_EQ(r.required, 10);
}

TEST(MysqlLexer, MixedOrZeroMarkersRefused) {
  EXPECT_FALSE(sql::to_question_markers("SELECT $1, ?", Dialect::mysql).error.empty());
  EXPECT_FALSE(sql::to_question_markers("SELECT $0", Dialect::mysql).error.empty());
  const auto none = sql::to_question_markers("SELECT 1", Dialect::mysql);
  EXPECT_TRUE(none.error.empty());
  EXPECT_TRUE(none.slots.empty());
  EXPECT_EQ(none.required, 0);
}

// ---- types -------------------------------------------------------------------

TEST(MysqlTypes, IntegersBoolAndUnsigned) {
  auto t = classify("b", MYSQL_TYPE_TINY, 0, 1, 63, 0);
  EXPECT_EQ(t.read, Read::boolean);
  EXPECT_EQ(t.column.kind, db::Kind::Bool);
  EXPECT_EQ(classify("t", MYSQL_TYPE_TINY, 0, 4, 63, 0).column.kind, db::Kind::I64);
  EXPECT_EQ(classify("i", MYSQL_TYPE_LONG, UNSIGNED_FLAG, 10, 63, 0).column.kind, db::Kind::I64);
  t = classify("u", MYSQL_TYPE_LONGLONG, UNSIGNED_FLAG | NOT_NULL_FLAG, 20, 63, 0);
  EXPECT_EQ(t.column.kind, db::Kind::U64);
  EXPECT_EQ(t.column.native.name, "BIGINT UNSIGNED");
  EXPECT_FALSE(t.column.nullable);
  EXPECT_EQ(classify("s", MYSQL_TYPE_LONGLONG, 0, 20, 63, 0).column.kind, db::Kind::I64);
  EXPECT_EQ(classify("y", MYSQL_TYPE_YEAR, 0, 4, 63, 0).column.kind, db::Kind::I64);
  EXPECT_EQ(classify("bit", MYSQL_TYPE_BIT, 0, 8, 63, 0).column.kind, db::Kind::U64);
}

TEST(MysqlTypes, DecimalKeepsPrecisionAndScale) {
  // DECIMAL(10,2): display length 12 (10 digits, point, sign).
  auto t = classify("d", MYSQL_TYPE_NEWDECIMAL, 0, 12, 63, 2);
  EXPECT_EQ(t.column.kind, db::Kind::Decimal);
  EXPECT_EQ(t.column.native.precision, 10);
  EXPECT_EQ(t.column.native.scale, 2);
  t = classify("d", MYSQL_TYPE_NEWDECIMAL, UNSIGNED_FLAG, 5, 63, 0);  // DECIMAL(5,0) UNSIGNED
  EXPECT_EQ(t.column.native.precision, 5);
  EXPECT_EQ(classify("f", MYSQL_TYPE_FLOAT, 0, 12, 63, 31).column.kind, db::Kind::F64);
  EXPECT_EQ(classify("f", MYSQL_TYPE_DOUBLE, 0, 22, 63, 31).column.kind, db::Kind::F64);
}

TEST(MysqlTypes, DatesAreTimeWithTheirForm) {
  auto d = classify("d", MYSQL_TYPE_DATE, 0, 10, 63, 0);
  EXPECT_EQ(d.column.kind, db::Kind::Time);
  EXPECT_EQ(d.column.native.time_form, db::TimeForm::date);
  auto dt = classify("dt", MYSQL_TYPE_DATETIME, 0, 26, 63, 6);
  EXPECT_EQ(dt.column.kind, db::Kind::Time);
  EXPECT_EQ(dt.column.native.time_form, db::TimeForm::timestamp);
  auto ts = classify("ts", MYSQL_TYPE_TIMESTAMP, 0, 19, 63, 0);
  EXPECT_EQ(ts.column.native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(classify("t", MYSQL_TYPE_TIME, 0, 10, 63, 0).column.kind, db::Kind::Text);
}

TEST(MysqlTypes, BlobVersusTextByCharset63) {
  EXPECT_EQ(classify("b", MYSQL_TYPE_BLOB, BLOB_FLAG | BINARY_FLAG, 65535, 63, 0).column.kind,
            db::Kind::Bytes);
  EXPECT_EQ(classify("t", MYSQL_TYPE_BLOB, BLOB_FLAG, 262140, 45, 0).column.kind, db::Kind::Text);
  EXPECT_EQ(classify("t", MYSQL_TYPE_BLOB, BLOB_FLAG, 262140, 45, 0).column.native.name, "TEXT");
  EXPECT_EQ(classify("v", MYSQL_TYPE_VAR_STRING, 0, 80, 45, 0).column.kind, db::Kind::Text);
  auto vb = classify("vb", MYSQL_TYPE_VAR_STRING, BINARY_FLAG, 20, 63, 0);
  EXPECT_EQ(vb.column.kind, db::Kind::Bytes);
  EXPECT_EQ(vb.column.native.name, "VARBINARY");
  EXPECT_EQ(vb.column.native.length, 20);
  EXPECT_EQ(classify("j", MYSQL_TYPE_JSON, 0, 4294967295UL, 45, 0).column.kind, db::Kind::Text);
  EXPECT_EQ(classify("g", MYSQL_TYPE_GEOMETRY, 0, 0, 63, 0).column.kind, db::Kind::Bytes);
  EXPECT_EQ(classify("n", MYSQL_TYPE_NULL, 0, 0, 63, 0).column.kind, db::Kind::Null);
}

TEST(MysqlTypes, DatetimeTextAndMysqlTime) {
  EXPECT_EQ(parse_datetime("1970-01-01"), 0);
  EXPECT_EQ(parse_datetime("1970-01-01 00:00:01"), 1000000);
  EXPECT_EQ(parse_datetime("2024-02-29 12:34:56.5"), 1709210096500000);
  EXPECT_EQ(parse_datetime("1969-12-31 23:59:59.999999"), -1);
  EXPECT_EQ(parse_datetime("0000-00-00 00:00:00"), std::nullopt);
  EXPECT_EQ(parse_datetime("2024-13-01"), std::nullopt);
  EXPECT_EQ(parse_datetime("2024-01-01 1:00:00"), std::nullopt);
  EXPECT_EQ(parse_datetime("2024-01-01 01:00:00.1234567"), std::nullopt);
  for (int64_t micros : {int64_t{0}, int64_t{-1}, int64_t{1709210096500000},
                         int64_t{-62135596800000000} /* 0001-01-01 */,
                         int64_t{253402300799999999} /* 9999-12-31 23:59:59.999999 */}) {
    const MYSQL_TIME t = mysql_time_of(micros);
    EXPECT_EQ(micros_of(t), micros) << micros;
  }
  const MYSQL_TIME t = mysql_time_of(-1);
  EXPECT_EQ(t.year, 1969u);
  EXPECT_EQ(t.second_part, 999999u);
}

TEST(MysqlTypes, TimeBitsAndFloats) {
  MYSQL_TIME t{};
  t.neg = 1;
  t.hour = 838;
  t.minute = 59;
  t.second = 59;
  EXPECT_EQ(format_time_of_day(t), "-838:59:59");
  t = MYSQL_TIME{};
  t.hour = 1;
  t.second_part = 5;
  EXPECT_EQ(format_time_of_day(t), "01:00:00.000005");
  EXPECT_EQ(bits_value(std::string_view("\x01\x02", 2)), 258u);
  EXPECT_EQ(widen_float(0.1f), 0.1);
  EXPECT_EQ(parse_u64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_i64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_i64("1x"), std::nullopt);
  EXPECT_EQ(parse_f64("1e300"), 1e300);
}

// ---- errors ------------------------------------------------------------------

TEST(MysqlErrors, ErrnoDecidesNotTheGenericSqlstate) {
  struct Case {
    unsigned errnum;
    const char* server_sqlstate;
    const char* sqlstate;
    db::Errc code;
  };
  const Case cases[] = {
      {1062, "23000", "23505", db::Errc::constraint},
      {1451, "23000", "23503", db::Errc::constraint},
      {1452, "23000", "23503", db::Errc::constraint},
      {1048, "23000", "23502", db::Errc::constraint},
      {4025, "23000", "23514", db::Errc::constraint},  // MariaDB CHECK
      {3819, "HY000", "23514", db::Errc::constraint},  // MySQL CHECK
      {1064, "42000", "42601", db::Errc::invalid_query},
      {1146, "42S02", "42P01", db::Errc::invalid_query},
      {1054, "42S22", "42703", db::Errc::invalid_query},
      {1205, "HY000", "55P03", db::Errc::busy},
      {3572, "HY000", "55P03", db::Errc::busy},
      {1213, "40001", "40P01", db::Errc::busy},
      {1317, "70100", "57014", db::Errc::busy},
      {2006, "HY000", "08006", db::Errc::connection},
      {2013, "HY000", "08006", db::Errc::connection},
      // CR_NET_PACKET_TOO_LARGE: server.max_value_size, and the connection goes.
      {2020, "HY000", "54000", db::Errc::connection},
  };
  for (const auto& c : cases) {
    const db::Error e = map_error(c.errnum, c.server_sqlstate, "the server's message");
    EXPECT_EQ(e.sqlstate, c.sqlstate) << c.errnum;
    EXPECT_EQ(e.code, c.code) << c.errnum;
    EXPECT_EQ(e.vendor_code, c.errnum);
    EXPECT_EQ(e.message, "the server's message");
  }
}

TEST(MysqlErrors, ClientNumbersAndTheDriversOwnRows) {
  EXPECT_EQ(map_error(1045, "28000", "x").sqlstate, "28P01");  // the shared table
  EXPECT_EQ(map_error(1045, "28000", "x").code, db::Errc::connection);
  // A refused login without a password is a refused login too (auth.mode passthrough).
  EXPECT_EQ(map_error(1698, "28000", "x").sqlstate, "28P01");
  // USE nosuchdb on a live session: not a lost connection.
  EXPECT_EQ(map_error(1049, "42000", "x").code, db::Errc::invalid_query);
  EXPECT_EQ(map_error(1049, "42000", "x").sqlstate, "3D000");
  EXPECT_EQ(map_error(2014, "HY000", "x").code, db::Errc::busy);
  EXPECT_EQ(map_error(2026, "HY000", "x").sqlstate, "08001");
  EXPECT_EQ(map_error(1792, "25006", "x").sqlstate, "25006");
  EXPECT_EQ(map_error(1136, "21S01", "x").sqlstate, "42601");
}

TEST(MysqlErrors, UnknownNumbersKeepAPreciseSqlstateOrTheirClass) {
  EXPECT_EQ(map_error(9999, "22012", "x").sqlstate, "22012");
  EXPECT_EQ(map_error(9999, "23000", "x").code, db::Errc::constraint);
  EXPECT_EQ(map_error(9999, "42000", "x").sqlstate, "42000");
  EXPECT_EQ(map_error(9999, "HY000", "x").sqlstate, "XX000");
  EXPECT_EQ(map_error(2055, "HY000", "x").code, db::Errc::connection);
  EXPECT_EQ(map_error(2099, "HY000", "x").code, db::Errc::connection);
  EXPECT_TRUE(is_connection_lost(2013));
  EXPECT_FALSE(is_connection_lost(1062));
}

// ---- connection string ---------------------------------------------------------

TEST(MysqlOptions, KeyValuePairsInLibpqGrammar) {
  std::vector<std::pair<std::string, std::string>> problems;
  const ConnectInfo i = parse_connection(
      "host=db.internal port=3307 user=app password='it\\'s secret' dbname=shop "
      "connect_timeout=5",
      &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(i.host, "db.internal");
  EXPECT_EQ(i.port, 3307u);
  EXPECT_EQ(i.user, "app");
  EXPECT_EQ(i.password, "it's secret");
  EXPECT_EQ(i.dbname, "shop");
  EXPECT_EQ(i.connect_timeout, 5u);
  const ConnectInfo d = parse_connection("socket=/run/mysqld/mysqld.sock", &problems);
  EXPECT_EQ(d.socket, "/run/mysqld/mysqld.sock");
  EXPECT_EQ(d.host, "127.0.0.1");
  EXPECT_EQ(d.port, 3306u);
}

TEST(MysqlOptions, ProblemsOnePerKey) {
  db::OpenOptions o;
  o.connection = "host=x port=0 sslmode=require bogus=1 connect_timeout=abc";
  o.options["busy_timeout"] = "5s";
  const auto problems = validate_options(o);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_EQ(problems[0].first, "busy_timeout");
  EXPECT_NE(problems[1].second.find("port"), std::string::npos);
  EXPECT_NE(problems[2].second.find("tls block"), std::string::npos);
  EXPECT_NE(problems[3].second.find("bogus"), std::string::npos);
  EXPECT_NE(problems[4].second.find("connect_timeout"), std::string::npos);
  o = db::OpenOptions{};
  o.connection = "host";
  EXPECT_EQ(validate_options(o).size(), 1u);
  o.connection = "password='open";
  EXPECT_EQ(validate_options(o).size(), 1u);
}

TEST(MysqlOptions, EntryPasswordOverridesAndIsRedacted) {
  db::OpenOptions o;
  o.connection = "host=h user=u password=inline";
  o.password = "from_env";
  o.tls_ca = "/ca.pem";
  const ConnectInfo i = connect_info(o);
  EXPECT_EQ(i.password, "from_env");
  EXPECT_EQ(i.tls_ca, "/ca.pem");
  EXPECT_EQ(redact_connection("host=h password=s3cret user=u"), "host=h password=*** user=u");
  EXPECT_EQ(redact_connection("password = 'a b\\' c' dbname=x"), "password = *** dbname=x");
  EXPECT_EQ(redact_connection("host=h password='unterminated"), "***");
  EXPECT_EQ(redact_connection("host=h password = S3cretA"), "host=h password = ***");
  EXPECT_EQ(redact_connection("password= 'S3cret B' host=h"), "password= *** host=h");
  EXPECT_EQ(redact_connection("password=S3cret\\ D host=h"), "password=*** host=h");
  EXPECT_EQ(redact_connection("host=h\tpassword\t=\tS3cretE\tuser=u"),
            "host=h\tpassword\t=\t***\tuser=u");
  EXPECT_EQ(redact_connection("host=h"), "host=h");
}

TEST(MysqlOptions, OneHostOfSeveralReplacesTheConnectionsHostPortAndSocket) {
  db::OpenOptions o;
  o.connection = "host=h port=3307 socket=/run/mysqld.sock user=u";
  ConnectInfo i = connect_info(o);
  EXPECT_EQ(i.socket, "/run/mysqld.sock");
  EXPECT_FALSE(i.read_write);
  o.host = "10.0.0.2";
  o.port = 3310;
  o.read_write = true;
  i = connect_info(o);
  EXPECT_EQ(i.host, "10.0.0.2");
  EXPECT_EQ(i.port, 3310u);
  EXPECT_EQ(i.socket, "");
  EXPECT_TRUE(i.read_write);
  o.port = 0;  // the connection's port
  EXPECT_EQ(connect_info(o).port, 3307u);
}

}  // namespace
}  // namespace wirepool::mysql
