// The SQLite driver's pure helpers (no database):
//  - declared types: affinity rules, BOOL and DATE/TIME before them, (p,s) parsing,
//    time_form (exactly DATE -> date; TZ / WITH TIME ZONE -> timestamptz; else timestamp)
//  - ISO-8601 parsing: date, 'T' or space, fraction, Z and offset forms, rejects
//  - the bound Time text, round trip, before 1970
//  - Unix seconds range; boolean text
//  - decimals: integers and doubles as exact text, rounding half away from zero at scale
//  - error mapping: each row of the table, vendor code and message kept
//  - options: unknown keys and bad values, one message per key; target resolution

#include <gtest/gtest.h>

#include <sqlite3.h>

#include "backends/sqlite/sqlite_errors.hpp"
#include "backends/sqlite/sqlite_options.hpp"
#include "backends/sqlite/sqlite_types.hpp"

namespace wirepool::sqlite {
namespace {

TEST(DeclaredType, FollowsSqliteAffinityAfterBoolAndTime) {
  struct Case {
    std::string_view decl;
    Decl expected;
  };
  const Case cases[] = {
      {"", Decl::from_value},
      {"INTEGER", Decl::integer},
      {"bigint", Decl::integer},
      {"INT(11)", Decl::integer},
      {"VARCHAR(20)", Decl::text},
      {"TEXT", Decl::text},
      {"CLOB", Decl::text},
      {"BLOB", Decl::blob},
      {"BYTEA", Decl::blob},
      {"VARBINARY(16)", Decl::blob},
      {"REAL", Decl::real},
      {"DOUBLE PRECISION", Decl::real},
      {"FLOAT", Decl::real},
      {"NUMERIC", Decl::numeric},
      {"DECIMAL(10,2)", Decl::numeric},
      {"BOOLEAN", Decl::boolean},
      {"bool", Decl::boolean},
      {"DATE", Decl::time},
      {"DATETIME", Decl::time},
      {"TIMESTAMP", Decl::time},
      {"timestamptz", Decl::time},
      {"TIMESTAMP WITH TIME ZONE", Decl::time},
      {"TIME", Decl::time},
      {"JSON", Decl::from_value},
      {"UUID", Decl::from_value},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.decl));
    EXPECT_EQ(parse_declared_type(c.decl).decl, c.expected);
  }
}

TEST(DeclaredType, IntegerWidthFollowsTheDeclaredNameButIntegerIs64Bit) {
  const std::pair<std::string_view, int> cases[] = {
      {"SMALLINT", 2}, {"int2", 2}, {"TINYINT", 2},          {"INT", 4},
      {"int(11)", 4},  {"INT4", 4}, {"MEDIUMINT", 4},        {"INTEGER", 0},
      {"BIGINT", 0},   {"INT8", 0}, {"UNSIGNED BIG INT", 0}, {"INT UNSIGNED", 0},
  };
  for (const auto& [decl, bytes] : cases) {
    SCOPED_TRACE(std::string(decl));
    EXPECT_EQ(declared_int_bytes(decl), bytes);
    EXPECT_EQ(parse_declared_type(decl).native.int_bytes, bytes);
  }
  EXPECT_EQ(parse_declared_type("TEXT").native.int_bytes, 0);
}

TEST(DeclaredType, ParsesLengthPrecisionScaleAndKeepsTheName) {
  auto v = parse_declared_type("VARCHAR(20)");
  EXPECT_EQ(v.native.name, "VARCHAR(20)");
  EXPECT_EQ(v.native.length, 20);
  auto d = parse_declared_type("DECIMAL(10, 2)");
  EXPECT_EQ(d.native.precision, 10);
  EXPECT_EQ(d.native.scale, 2);
  auto n = parse_declared_type("NUMERIC(7)");
  EXPECT_EQ(n.native.precision, 7);
  EXPECT_EQ(n.native.scale, 0);
  auto plain = parse_declared_type("NUMERIC");
  EXPECT_EQ(plain.native.precision, -1);
  EXPECT_EQ(plain.native.scale, -1);
  auto bad = parse_declared_type("DECIMAL(x)");
  EXPECT_EQ(bad.native.precision, -1);
  EXPECT_EQ(parse_declared_type("TIMESTAMP(3)").native.precision, 3);
}

TEST(DeclaredType, TimeForm) {
  EXPECT_EQ(parse_declared_type("DATE").native.time_form, db::TimeForm::date);
  EXPECT_EQ(parse_declared_type("date").native.time_form, db::TimeForm::date);
  EXPECT_EQ(parse_declared_type("DATETIME").native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(parse_declared_type("TIMESTAMP").native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(parse_declared_type("TIMESTAMP WITHOUT TIME ZONE").native.time_form,
            db::TimeForm::timestamp);
  EXPECT_EQ(parse_declared_type("TIMESTAMPTZ").native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(parse_declared_type("timestamp with time zone").native.time_form,
            db::TimeForm::timestamptz);
}

TEST(DeclaredType, KindOfEachDeclaration) {
  EXPECT_EQ(declared_kind(Decl::from_value), db::Kind::Null);
  EXPECT_EQ(declared_kind(Decl::blob), db::Kind::Bytes);
  EXPECT_EQ(declared_kind(Decl::integer), db::Kind::I64);
  EXPECT_EQ(declared_kind(Decl::real), db::Kind::F64);
  EXPECT_EQ(declared_kind(Decl::text), db::Kind::Text);
  EXPECT_EQ(declared_kind(Decl::numeric), db::Kind::Decimal);
  EXPECT_EQ(declared_kind(Decl::boolean), db::Kind::Bool);
  EXPECT_EQ(declared_kind(Decl::time), db::Kind::Time);
}

constexpr int64_t kJan2 = 1704153600LL * 1000000;  // 2024-01-02T00:00:00Z

TEST(IsoTime, AcceptsTheFormsClientsSend) {
  struct Case {
    std::string_view text;
    int64_t micros;
  };
  const int64_t t = kJan2 + (3 * 3600 + 4 * 60 + 5) * 1000000LL;
  const Case cases[] = {
      {"2024-01-02", kJan2},
      {"2024-01-02 03:04:05", t},
      {"2024-01-02T03:04:05", t},
      {"2024-01-02t03:04:05z", t},
      {"2024-01-02 03:04", t - 5000000},
      {"2024-01-02 03:04:05.5", t + 500000},
      {"2024-01-02 03:04:05.123456", t + 123456},
      {"2024-01-02 03:04:05.1234564", t + 123456},
      {"2024-01-02 03:04:05.9999996", t + 1000000},
      {"2024-01-02 03:04:05Z", t},
      {"2024-01-02 03:04:05+02", t - 7200000000LL},
      {"2024-01-02 03:04:05+02:00", t - 7200000000LL},
      {"2024-01-02 03:04:05+0200", t - 7200000000LL},
      {"2024-01-02 03:04:05-05:30", t + 19800000000LL},
      {"2024-01-02 03:04:05.25 +01", t + 250000 - 3600000000LL},
      {"1969-12-31 23:59:59", -1000000},
      {"2024-02-29", kJan2 + 58LL * 86400 * 1000000},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    const auto got = parse_iso_time(c.text);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, c.micros);
  }
}

TEST(IsoTime, RejectsWhatIsNotATimestamp) {
  for (std::string_view text :
       {"", "2024", "2024-1-02", "2024-13-01", "2023-02-29", "2024-01-32", "2024-01-02 24:00:00",
        "2024-01-02 03:60", "2024-01-02 03:04:05 junk", "2024-01-02 03:04:05+2", "2024-01-02x",
        "2024-01-02 03:04:05.", "12:34:56", "hello", "2024-01-02 03:04:05+16:00"}) {
    SCOPED_TRACE(std::string(text));
    EXPECT_FALSE(parse_iso_time(text).has_value());
  }
}

TEST(IsoTime, BoundTextRoundTrips) {
  EXPECT_EQ(format_iso_time(kJan2), "2024-01-02 00:00:00+00:00");
  EXPECT_EQ(format_iso_time(kJan2 + 123456), "2024-01-02 00:00:00.123456+00:00");
  EXPECT_EQ(format_iso_time(0), "1970-01-01 00:00:00+00:00");
  EXPECT_EQ(format_iso_time(-1), "1969-12-31 23:59:59.999999+00:00");
  for (int64_t v :
       {kJan2, kJan2 + 1, int64_t{-1}, int64_t{-86400000001}, int64_t{253402300799000000}}) {
    EXPECT_EQ(parse_iso_time(format_iso_time(v)), v);
  }
}

TEST(UnixSeconds, YearsOneToNineThousandNineHundredNinetyNine) {
  EXPECT_EQ(unix_seconds_to_micros(int64_t{1704153600}), kJan2);
  EXPECT_EQ(unix_seconds_to_micros(1704153600.25), kJan2 + 250000);
  EXPECT_FALSE(unix_seconds_to_micros(int64_t{253402300800}).has_value());
  EXPECT_FALSE(unix_seconds_to_micros(int64_t{-62135596801}).has_value());
  EXPECT_FALSE(unix_seconds_to_micros(1e300).has_value());
  EXPECT_FALSE(unix_seconds_to_micros(std::numeric_limits<double>::quiet_NaN()).has_value());
}

TEST(BoolText, OneZeroTrueFalseTF) {
  EXPECT_EQ(parse_bool_text("true"), true);
  EXPECT_EQ(parse_bool_text("TRUE"), true);
  EXPECT_EQ(parse_bool_text("t"), true);
  EXPECT_EQ(parse_bool_text("1"), true);
  EXPECT_EQ(parse_bool_text("False"), false);
  EXPECT_EQ(parse_bool_text("f"), false);
  EXPECT_EQ(parse_bool_text("0"), false);
  EXPECT_FALSE(parse_bool_text("yes").has_value());
  EXPECT_FALSE(parse_bool_text("").has_value());
  EXPECT_FALSE(parse_bool_text("2").has_value());
}

TEST(Decimal, IntegersAtScale) {
  EXPECT_EQ(decimal_from_int(3, -1), "3");
  EXPECT_EQ(decimal_from_int(3, 0), "3");
  EXPECT_EQ(decimal_from_int(3, 2), "3.00");
  EXPECT_EQ(decimal_from_int(-42, 1), "-42.0");
  EXPECT_EQ(decimal_from_int(INT64_MIN, -1), "-9223372036854775808");
}

TEST(Decimal, DoublesAsExactTextRoundedHalfAwayFromZero) {
  struct Case {
    double v;
    int scale;
    std::string_view text;
  };
  const Case cases[] = {
      {3.1, 2, "3.10"},
      {3.1, -1, "3.1"},
      {2.675, 2, "2.68"},
      {-2.675, 2, "-2.68"},
      {9.995, 2, "10.00"},
      {0.005, 2, "0.01"},
      {0.004, 2, "0.00"},
      {-0.004, 2, "0.00"},
      {1e20, -1, "100000000000000000000"},
      {1.5e-7, -1, "0.00000015"},
      {-0.0, -1, "0"},
      {0.1, 0, "0"},
      {0.5, 0, "1"},
      {123.456, 1, "123.5"},
      {1e-7, 2, "0.00"},
      {0.0001, -1, "0.0001"},
      {12345.678, 5, "12345.67800"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.v) + " scale " + std::to_string(c.scale));
    EXPECT_EQ(decimal_from_double(c.v, c.scale), std::string(c.text));
  }
  EXPECT_FALSE(decimal_from_double(std::numeric_limits<double>::infinity(), 2).has_value());
  EXPECT_FALSE(decimal_from_double(std::numeric_limits<double>::quiet_NaN(), -1).has_value());
}

TEST(ErrorMap, EachTableRowHasItsSqlstate) {
  struct Case {
    int code;
    std::string_view message;
    db::Errc errc;
    std::string_view sqlstate;
  };
  const Case cases[] = {
      {SQLITE_CONSTRAINT_UNIQUE, "UNIQUE constraint failed: t.a", db::Errc::constraint, "23505"},
      {SQLITE_CONSTRAINT_PRIMARYKEY, "UNIQUE constraint failed: t.id", db::Errc::constraint,
       "23505"},
      {SQLITE_CONSTRAINT_FOREIGNKEY, "FOREIGN KEY constraint failed", db::Errc::constraint,
       "23503"},
      {SQLITE_CONSTRAINT_NOTNULL, "NOT NULL constraint failed: t.a", db::Errc::constraint, "23502"},
      {SQLITE_CONSTRAINT_CHECK, "CHECK constraint failed: a > 0", db::Errc::constraint, "23514"},
      {SQLITE_CONSTRAINT_TRIGGER, "no", db::Errc::constraint, "23000"},
      {SQLITE_ERROR, "near \"SELEC\": syntax error", db::Errc::invalid_query, "42601"},
      {SQLITE_ERROR, "incomplete input", db::Errc::invalid_query, "42601"},
      {SQLITE_ERROR, "no such table: nope", db::Errc::invalid_query, "42P01"},
      {SQLITE_ERROR, "no such column: nope", db::Errc::invalid_query, "42703"},
      {SQLITE_ERROR, "no such function: nope", db::Errc::invalid_query, "42883"},
      {SQLITE_ERROR, "table t already exists", db::Errc::invalid_query, "42P07"},
      {SQLITE_ERROR, "something else", db::Errc::invalid_query, "42000"},
      {SQLITE_BUSY, "database is locked", db::Errc::busy, "55P03"},
      {SQLITE_BUSY_TIMEOUT, "database is locked", db::Errc::busy, "55P03"},
      {SQLITE_LOCKED, "database table is locked", db::Errc::busy, "55P03"},
      {SQLITE_BUSY_SNAPSHOT, "database is locked", db::Errc::busy, "40001"},
      {SQLITE_READONLY, "attempt to write a readonly database", db::Errc::invalid_query, "25006"},
      {SQLITE_FULL, "database or disk is full", db::Errc::invalid_query, "53100"},
      {SQLITE_CORRUPT, "database disk image is malformed", db::Errc::invalid_query, "XX001"},
      {SQLITE_NOTADB, "file is not a database", db::Errc::invalid_query, "XX001"},
      {SQLITE_CANTOPEN, "unable to open database file", db::Errc::connection, "08006"},
      {SQLITE_MISMATCH, "datatype mismatch", db::Errc::invalid_query, "22023"},
      {SQLITE_RANGE, "column index out of range", db::Errc::invalid_query, "42P02"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.code) + " " + std::string(c.message));
    const db::Error e = map_error(c.code, c.message);
    EXPECT_EQ(e.code, c.errc);
    EXPECT_EQ(e.sqlstate, c.sqlstate);
    EXPECT_EQ(e.vendor_code, c.code);
    EXPECT_EQ(e.message, c.message);
  }
}

TEST(ErrorMap, InterruptAnswersPostgresCancelMessage) {
  const db::Error e = map_error(SQLITE_INTERRUPT, "interrupted");
  EXPECT_EQ(e.code, db::Errc::busy);
  EXPECT_EQ(e.sqlstate, "57014");
  EXPECT_EQ(e.message, "canceling statement due to user request");
  EXPECT_EQ(e.detail, "SQLite: interrupted");
}

TEST(Options, OneMessagePerUnknownKeyOrBadValue) {
  db::OpenOptions o;
  o.connection = "x.db";
  o.options = {{"busy_timeout", "soon"},
               {"begin", "exclusive"},
               {"foreign_keys", "maybe"},
               {"seed_sql", ""},
               {"journal", "wal"}};
  const auto problems = validate_options(o);
  ASSERT_EQ(problems.size(), 5u);
  std::map<std::string, std::string> by_key(problems.begin(), problems.end());
  EXPECT_NE(by_key["busy_timeout"].find("\"soon\""), std::string::npos);
  EXPECT_NE(by_key["begin"].find("immediate"), std::string::npos);
  EXPECT_NE(by_key["foreign_keys"].find("\"maybe\""), std::string::npos);
  EXPECT_NE(by_key["seed_sql"].find("file"), std::string::npos);
  EXPECT_NE(by_key["journal"].find("unknown option \"journal\""), std::string::npos);
}

TEST(Options, DefaultsAndParsedValues) {
  db::OpenOptions o;
  o.connection = "x.db";
  o.base_dir = "/srv/state";
  EXPECT_TRUE(validate_options(o).empty());
  Options d = parse_options(o);
  EXPECT_EQ(d.busy_timeout.count(), 5000);
  EXPECT_TRUE(d.begin_immediate);
  EXPECT_TRUE(d.foreign_keys);
  EXPECT_TRUE(d.seed_sql.empty());
  o.options = {{"busy_timeout", "250ms"},
               {"begin", "DEFERRED"},
               {"foreign_keys", "off"},
               {"seed_sql", "seed/demo.sql"}};
  EXPECT_TRUE(validate_options(o).empty());
  Options p = parse_options(o);
  EXPECT_EQ(p.busy_timeout.count(), 250);
  EXPECT_FALSE(p.begin_immediate);
  EXPECT_FALSE(p.foreign_keys);
  EXPECT_EQ(p.seed_sql, "/srv/state/seed/demo.sql");
}

TEST(Options, EmptyConnectionIsAProblem) {
  db::OpenOptions o;
  const auto problems = validate_options(o);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].first, "connection");
}

TEST(Target, RelativePathsAndUrisResolveAgainstBaseDir) {
  auto rel = resolve_target("demo.db", "/srv/state");
  EXPECT_EQ(rel.open_name, "/srv/state/demo.db");
  EXPECT_EQ(rel.file, "/srv/state/demo.db");
  EXPECT_FALSE(rel.memory);
  EXPECT_EQ(resolve_target("/abs/x.db", "/srv").open_name, "/abs/x.db");
  auto mem = resolve_target(":memory:", "/srv");
  EXPECT_TRUE(mem.memory);
  EXPECT_TRUE(mem.file.empty());
  auto uri = resolve_target("file:data.db?cache=shared", "/srv/a b");
  EXPECT_EQ(uri.open_name, "file:/srv/a b/data.db?cache=shared");
  EXPECT_EQ(uri.file, "/srv/a b/data.db");
  auto escaped = resolve_target("file:d.db", "/srv/50%?");
  EXPECT_EQ(escaped.open_name, "file:/srv/50%25%3F/d.db");
  EXPECT_EQ(escaped.file, "/srv/50%?/d.db");
  auto abs = resolve_target("file:///var/x.db?mode=rw", "/srv");
  EXPECT_EQ(abs.open_name, "file:///var/x.db?mode=rw");
  EXPECT_EQ(abs.file, "/var/x.db");
  EXPECT_TRUE(resolve_target("file::memory:?cache=shared", "/srv").memory);
  EXPECT_TRUE(resolve_target("file:mem1?mode=memory&cache=shared", "/srv").memory);
}

}  // namespace
}  // namespace wirepool::sqlite
