// The ODBC driver's parts that need no driver manager:
//  - UTF-8 <-> UTF-16: BMP, surrogate pairs, ASCII runs of every length beside
//    other characters, malformed UTF-8 refused, a lone surrogate read as U+FFFD
//  - $N -> ? with a repeated $N bound again, ? kept in order, markers inside
//    literals and comments left alone, mixing refused (42601)
//  - connection strings: values read case-insensitively, braces, PWD redacted,
//    a DSN name, the password added once
//  - flavors and dialects from SQL_DBMS_NAME
//  - SQLSTATE mapping: generic states refined by native codes (MariaDB errno,
//    SQLite code + message), psqlODBC's PostgreSQL states kept, cancel and
//    connection classes
//  - type mapping: SQL types -> Kind and bound width; timestamps and GUIDs

#include <gtest/gtest.h>

#include "backends/odbc/odbc_errors.hpp"
#include "backends/odbc/odbc_text.hpp"
#include "backends/odbc/odbc_types.hpp"

namespace wirepool::odbc {
namespace {

TEST(OdbcUtf16, RoundTripsEveryPlane) {
  const std::string s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // a é € 😀
  auto u = to_utf16(s);
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, std::u16string(u"a\u00e9\u20ac\U0001F600"));
  EXPECT_EQ(to_utf8(u->data(), u->size()), s);
}

TEST(OdbcUtf16, AsciiRunsOfAnyLengthBesideOtherCharacters) {
  // The ASCII prefix is copied 16 and then 8 units a time: a non-ASCII
  // character at every position of texts around those block sizes, and
  // appending after a prefix. U+0141's low byte (0x41) is ASCII: only its
  // high byte stops the run; U+1F600 is two surrogates.
  struct Other {
    const char* utf8;
    std::u16string units;
  };
  const Other others[] = {
      {"\xc3\xa9", u"\u00e9"}, {"\xc5\x81", u"\u0141"}, {"\xf0\x9f\x98\x80", u"\U0001F600"}};
  for (const Other& o : others) {
    for (size_t len = 0; len <= 40; ++len) {
      for (size_t at = 0; at <= len; ++at) {
        std::string s;
        std::u16string want;
        for (size_t k = 0; k < len; ++k) {
          if (k == at) {
            s += o.utf8;
            want += o.units;
          } else {
            s += static_cast<char>('a' + k % 26);
            want += static_cast<char16_t>('a' + k % 26);
          }
        }
        auto u = to_utf16(s);
        ASSERT_TRUE(u) << len << " " << at;
        ASSERT_EQ(*u, want) << len << " " << at;
        std::string back = "prefix-";
        append_utf8(u->data(), u->size(), back);
        ASSERT_EQ(back, "prefix-" + s) << len << " " << at;
      }
    }
  }
}

TEST(OdbcUtf16, MalformedUtf8IsRefusedAndLoneSurrogatesReplaced) {
  EXPECT_FALSE(to_utf16("\xc3"));
  EXPECT_FALSE(to_utf16("\xc0\xaf"));          // overlong
  EXPECT_FALSE(to_utf16("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(to_utf16("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  const char16_t lone[] = {u'a', 0xd800, u'b'};
  EXPECT_EQ(to_utf8(lone, 3),
            "a\xef\xbf\xbd"
            "b");
}

TEST(OdbcUtf16, IntoABufferWritesWhatFitsAndSaysWhenItDoesNot) {
  // The form a text parameter is converted with into its bound buffer.
  char16_t buf[8];
  EXPECT_EQ(to_utf16("abc", buf, 8), 3u);
  EXPECT_EQ(std::u16string(buf, 3), u"abc");
  EXPECT_EQ(to_utf16("", buf, 0), 0u);
  EXPECT_EQ(to_utf16("abcdefgh", buf, 8), 8u);  // exactly the room
  EXPECT_EQ(std::u16string(buf, 8), u"abcdefgh");
  EXPECT_EQ(to_utf16("abcdefghi", buf, 8), kNoRoom);
  // Non-ASCII text takes fewer units than bytes: 3 bytes, 1 unit.
  EXPECT_EQ(to_utf16("\xe2\x82\xac\xe2\x82\xac", buf, 2), 2u);  // € €
  EXPECT_EQ(std::u16string(buf, 2), u"\u20ac\u20ac");
  // A surrogate pair needs both units of room.
  EXPECT_EQ(to_utf16("abcdefg\xf0\x9f\x98\x80", buf, 8), kNoRoom);
  EXPECT_EQ(to_utf16("abcdef\xf0\x9f\x98\x80", buf, 8), 8u);
  EXPECT_EQ(std::u16string(buf, 8), u"abcdef\U0001F600");
  EXPECT_EQ(to_utf16("\xc3\xa9x\xc3", buf, 8), kNoRoom);  // malformed
}

TEST(OdbcMarkers, DollarNumbersBecomeQuestionMarksAndRepeatsBindAgain) {
  for (auto d :
       {sql::Dialect::postgres, sql::Dialect::mysql, sql::Dialect::ansi, sql::Dialect::sqlite}) {
    SCOPED_TRACE(std::string(sql::to_string(d)));
    auto r = rewrite_markers("SELECT $2, '$1', $1 /* $3 */, $2", d, nullptr);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->text, "SELECT ?, '$1', ? /* $3 */, ?");
    EXPECT_EQ(r->binds, (std::vector<size_t>{1, 0, 1}));
    EXPECT_EQ(r->needed, 2u);
  }
  auto q = rewrite_markers("SELECT ?, '?', ?", sql::Dialect::mysql, nullptr);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->text, "SELECT ?, '?', ?");
  EXPECT_EQ(q->binds, (std::vector<size_t>{0, 1}));
  db::Error e;
  EXPECT_FALSE(rewrite_markers("SELECT $1, ?", sql::Dialect::ansi, &e));
  EXPECT_EQ(e.sqlstate, "42601");
}

TEST(OdbcConnectionString, ValuesRedactionDsnAndPassword) {
  const std::string c = "Driver={PostgreSQL Unicode};SERVER=h;pwd={a;b}}c};Uid=u";
  EXPECT_EQ(connection_value(c, "server"), "h");
  EXPECT_EQ(connection_value(c, "PWD"), "a;b}c");
  EXPECT_EQ(connection_value(c, "port"), std::nullopt);
  EXPECT_EQ(redact_connection(c), "Driver={PostgreSQL Unicode};SERVER=h;pwd=***;Uid=u");
  EXPECT_EQ(redact_connection("DSN=x;Password=secret"), "DSN=x;Password=***");
  // Every form the parser reads: spaces and tabs around '=', braces with '}}'.
  EXPECT_EQ(redact_connection("DSN=x; PWD = S3cretA ;UID=u"), "DSN=x; PWD = ***;UID=u");
  EXPECT_EQ(redact_connection("DSN=x;PWD={a}}b X};UID=u"), "DSN=x;PWD=***;UID=u");
  EXPECT_EQ(redact_connection("DSN=x;\tPWD\t=\tS3cretB;UID=u"), "DSN=x;\tPWD\t=***;UID=u");
  EXPECT_EQ(redact_connection("DSN=x;PWD={unterminated"), "DSN=x;PWD=***");
  EXPECT_EQ(full_connection_string("mydsn", ""), "DSN=mydsn");
  EXPECT_EQ(full_connection_string("DSN=x;UID=u", "p}w"), "DSN=x;UID=u;PWD={p}}w}");
  EXPECT_EQ(full_connection_string("DSN=x;PWD=a", "other"), "DSN=x;PWD=a");
}

TEST(OdbcConnectionString, PassthroughReplacesEveryLoginKeyAndBracesTheClients) {
  // The string's own login goes, in every spelling and form, wherever it stands.
  EXPECT_EQ(
      full_connection_string("Driver={MariaDB Unicode};Uid=pool;Server=h;PWD={a;b}", "pw", "ann"),
      "Driver={MariaDB Unicode};Server=h;UID={ann};PWD={pw}");
  EXPECT_EQ(full_connection_string("DSN=x; user = pool ;Password=s", "pw", "ann"),
            "DSN=x;UID={ann};PWD={pw}");
  EXPECT_EQ(full_connection_string("mydsn", "pw", "ann"), "DSN=mydsn;UID={ann};PWD={pw}");
  // ';', '=', '{' stay plain inside braces; '}' is doubled: nothing can add a key.
  const std::string c = full_connection_string("DSN=x;UID=u", "a;b}c{d=e", "n};DSN=evil;x={");
  EXPECT_EQ(c, "DSN=x;UID={n}};DSN=evil;x={};PWD={a;b}}c{d=e}");
  EXPECT_EQ(connection_value(c, "uid"), "n};DSN=evil;x={");
  EXPECT_EQ(connection_value(c, "pwd"), "a;b}c{d=e");
  EXPECT_EQ(connection_value(c, "dsn"), "x");
  EXPECT_EQ(redact_connection(c), "DSN=x;UID={n}};DSN=evil;x={};PWD=***");
}

TEST(OdbcFlavor, FromDbmsName) {
  EXPECT_EQ(flavor_of("PostgreSQL"), Flavor::postgresql);
  EXPECT_EQ(flavor_of("MariaDB"), Flavor::mariadb);
  EXPECT_EQ(flavor_of("MySQL"), Flavor::mariadb);
  EXPECT_EQ(flavor_of("SQLite"), Flavor::sqlite);
  EXPECT_EQ(flavor_of("Microsoft SQL Server"), Flavor::generic);
  EXPECT_EQ(dialect_of(Flavor::postgresql), sql::Dialect::postgres);
  EXPECT_EQ(dialect_of(Flavor::mariadb), sql::Dialect::mysql);
  EXPECT_EQ(dialect_of(Flavor::sqlite), sql::Dialect::sqlite);
  EXPECT_EQ(dialect_of(Flavor::generic), sql::Dialect::ansi);
}

Diagnostic diag(std::string state, int64_t native, std::string message) {
  return Diagnostic{std::move(state), native, std::move(message)};
}

TEST(OdbcErrors, GenericStatesAreRefinedByTheNativeCode) {
  struct Case {
    Flavor flavor;
    Diagnostic d;
    db::Errc code;
    const char* sqlstate;
  };
  const Case cases[] = {
      {Flavor::mariadb, diag("23000", 1062, "[ma-3.1.15]Duplicate entry '1' for key 'PRIMARY'"),
       db::Errc::constraint, "23505"},
      {Flavor::mariadb, diag("42000", 1064, "You have an error in your SQL syntax"),
       db::Errc::invalid_query, "42601"},
      {Flavor::mariadb, diag("HY000", 1205, "Lock wait timeout exceeded"), db::Errc::busy, "55P03"},
      {Flavor::mariadb, diag("40001", 1213, "Deadlock found"), db::Errc::busy, "40P01"},
      {Flavor::mariadb, diag("HY000", 2013, "Lost connection"), db::Errc::connection, "08006"},
      {Flavor::mariadb, diag("HY000", 4025, "CONSTRAINT failed"), db::Errc::constraint, "23514"},
      {Flavor::sqlite, diag("HY000", 19, "UNIQUE constraint failed: t.id"), db::Errc::constraint,
       "23505"},
      {Flavor::sqlite, diag("HY000", 19, "NOT NULL constraint failed: t.n"), db::Errc::constraint,
       "23502"},
      {Flavor::sqlite, diag("HY000", 1, "near \"SELEC\": syntax error"), db::Errc::invalid_query,
       "42601"},
      {Flavor::sqlite, diag("HY000", 1, "no such table: x"), db::Errc::invalid_query, "42P01"},
      {Flavor::sqlite, diag("HY000", 5, "database is locked"), db::Errc::busy, "55P03"},
      {Flavor::postgresql, diag("23505", 1, "ERROR: duplicate key value"), db::Errc::constraint,
       "23505"},
      {Flavor::postgresql, diag("42601", 1, "ERROR: syntax error"), db::Errc::invalid_query,
       "42601"},
      {Flavor::postgresql, diag("57014", 1, "ERROR: canceling statement"), db::Errc::busy, "57014"},
      {Flavor::postgresql, diag("HY000", 35, "server closed the connection unexpectedly"),
       db::Errc::connection, "08006"},
      {Flavor::generic, diag("08S01", 0, "Communication link failure"), db::Errc::connection,
       "08006"},
      {Flavor::generic, diag("HY008", 0, "Operation canceled"), db::Errc::busy, "57014"},
      {Flavor::generic, diag("42S02", 0, "no table"), db::Errc::invalid_query, "42P01"},
      {Flavor::generic, diag("HYC00", 0, "Optional feature"), db::Errc::unsupported, "0A000"},
      {Flavor::generic, diag("23000", 0, "integrity"), db::Errc::constraint, "23000"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.d.sqlstate + " " + std::to_string(c.d.native) + " " + c.d.message);
    const db::Error e = map_diagnostic(c.flavor, c.d);
    EXPECT_EQ(e.code, c.code);
    EXPECT_EQ(e.sqlstate, c.sqlstate);
    EXPECT_EQ(e.vendor_code, c.d.native);
  }
}

TEST(OdbcErrors, TheServersOwnTextIsKeptAndTheDriversWrappingRemoved) {
  const db::Error pg = map_diagnostic(
      Flavor::postgresql,
      diag("23505", 1,
           "[unixODBC]ERROR: duplicate key value violates unique constraint \"e1_pkey\"\n"
           "DETAIL: Key (id)=(1) already exists.;\nError while executing the query"));
  EXPECT_EQ(pg.message, "duplicate key value violates unique constraint \"e1_pkey\"");
  EXPECT_EQ(pg.detail, "Key (id)=(1) already exists.");
  const db::Error hint = map_diagnostic(
      Flavor::postgresql, diag("42883", 1,
                               "ERROR: function f() does not exist\nHINT: No function matches.;\n"
                               "Error while executing the query"));
  EXPECT_EQ(hint.message, "function f() does not exist");
  EXPECT_EQ(hint.hint, "No function matches.");
  const db::Error lite =
      map_diagnostic(Flavor::sqlite, diag("HY000", 19, "UNIQUE constraint failed: e1.id (19)"));
  EXPECT_EQ(lite.message, "UNIQUE constraint failed: e1.id");
  EXPECT_EQ(lite.sqlstate, "23505");
}

TEST(OdbcErrors, DriverPrefixesAreStripped) {
  EXPECT_EQ(strip_prefixes("[unixODBC][MariaDB][ODBC 3.1 Driver]Duplicate"), "Duplicate");
  EXPECT_EQ(strip_prefixes("plain [x]"), "plain [x]");
}

TEST(OdbcTypes, SqlTypesMapToKindsAndBoundedWidths) {
  EXPECT_EQ(plan_column(SQL_BIT, 1, 0, false, 2048).kind, db::Kind::Bool);
  EXPECT_EQ(plan_column(SQL_INTEGER, 10, 0, false, 2048).kind, db::Kind::I64);
  EXPECT_EQ(plan_column(SQL_BIGINT, 19, 0, false, 2048).kind, db::Kind::I64);
  EXPECT_EQ(plan_column(SQL_BIGINT, 20, 0, true, 2048).kind, db::Kind::U64);
  EXPECT_EQ(plan_column(SQL_DOUBLE, 15, 0, false, 2048).kind, db::Kind::F64);
  EXPECT_EQ(plan_column(SQL_NUMERIC, 10, 2, false, 2048).kind, db::Kind::Decimal);
  EXPECT_EQ(plan_column(SQL_VARBINARY, 16, 0, false, 2048).kind, db::Kind::Bytes);
  EXPECT_EQ(plan_column(SQL_GUID, 36, 0, false, 2048).kind, db::Kind::Text);
  const auto ts = plan_column(SQL_TYPE_TIMESTAMP, 26, 6, false, 2048);
  EXPECT_EQ(ts.kind, db::Kind::Time);
  EXPECT_EQ(ts.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(plan_column(SQL_TYPE_DATE, 10, 0, false, 2048).time_form, db::TimeForm::date);
  const auto v = plan_column(SQL_WVARCHAR, 20, 0, false, 2048);
  EXPECT_FALSE(v.unbounded);
  EXPECT_EQ(v.width, (20 * 2 + 1) * 2u);  // a non-BMP character takes two units
  const auto text = plan_column(SQL_WLONGVARCHAR, 8190, 0, false, 2048);
  EXPECT_TRUE(text.unbounded);
  EXPECT_EQ(text.width, 2050u);  // bound at long_bytes; longer cells re-read
  EXPECT_TRUE(plan_column(SQL_VARCHAR, 0, 0, false, 2048).unbounded);
  EXPECT_TRUE(plan_column(SQL_LONGVARBINARY, 100, 0, false, 2048).unbounded);
}

TEST(OdbcTypes, TimestampsAndGuids) {
  SQL_TIMESTAMP_STRUCT ts{2024, 2, 29, 13, 45, 30, 123456000};
  EXPECT_EQ(micros_of(ts), 1709214330123456);
  const auto back = timestamp_of(1709214330123456);
  EXPECT_EQ(back.year, 2024);
  EXPECT_EQ(back.day, 29);
  EXPECT_EQ(back.fraction, 123456000u);
  const auto old = timestamp_of(-1);  // 1969-12-31T23:59:59.999999
  EXPECT_EQ(old.year, 1969);
  EXPECT_EQ(old.second, 59);
  EXPECT_EQ(old.fraction, 999999000u);
  SQL_DATE_STRUCT d{1970, 1, 2};
  EXPECT_EQ(micros_of(d), 86400000000);
  SQLGUID g{0xa0eebc99, 0x9c0b, 0x4ef8, {0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}};
  EXPECT_EQ(guid_text(g), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
}

}  // namespace
}  // namespace wirepool::odbc
