// The PostgreSQL driver's pure parts (no server):
//  - chunked-rows detection: a lookup that finds PQsetChunkedRowsMode (libpq 17+)
//    selects chunks of 256 rows; one that does not falls back to single-row mode;
//    the loaded libpq's answer agrees with its version (Debian 12: libpq 15, none)
//  - the SQLSTATE class -> Errc table; libpq's own errors; the busy error;
//    a failed connection's verbose message -> the server's SQLSTATE (57P03,
//    28P01, 3D000, the last host's), 08001 for libpq's own, LOCATION dropped
//  - binary decoding: numeric at its stored scale (-0.000100, NaN as Text),
//    integers, uuid, jsonb, dates and timestamps (before 2000, infinity), bad sizes
//  - parameters: natural types and formats, untyped text as OID 0, prepared
//    encoding with range checks (22003) and syntax errors (22P02), NUL in text,
//    a cleared buffer reused for the next statement
//  - result format choice for native mode; command tags -> verb and count
//  - conninfo: TLS keys refused, options refused, pins checked, bare database
//    names accepted; what the driver adds (channel_binding=require with TLS,
//    prefer when the conninfo says so, disable refused); passwords redacted by
//    libpq's parser in every form (spaces around '=', quotes, backslash
//    escapes, tabs, URIs with userinfo, %-encoding and query parameters)

#include <gtest/gtest.h>

#include <cstring>

#include "backends/postgresql/postgresql_errors.hpp"
#include "backends/postgresql/postgresql_options.hpp"
#include "backends/postgresql/postgresql_session.hpp"
#include "backends/postgresql/postgresql_types.hpp"
#include "protocol/pg/types.hpp"

namespace wirepool::postgresql {
namespace {

// ---- chunked rows ---------------------------------------------------------------

PGconn* g_seen_conn = reinterpret_cast<PGconn*>(1);
int g_seen_rows = 0;
int fake_chunked(PGconn* conn, int rows) {
  g_seen_conn = conn;
  g_seen_rows = rows;
  return 1;
}
int fake_close(PGconn*, const char*) {
  return 1;
}
void* lookup_libpq17(const char* name) {
  if (std::strcmp(name, "PQsetChunkedRowsMode") == 0) return reinterpret_cast<void*>(&fake_chunked);
  if (std::strcmp(name, "PQsendClosePrepared") == 0) return reinterpret_cast<void*>(&fake_close);
  return nullptr;
}
void* lookup_libpq15(const char*) {
  return nullptr;
}

TEST(ChunkedRows, DetectedWhenTheLookupFindsTheSymbol) {
  const LibpqExtras x = find_libpq_extras(&lookup_libpq17);
  EXPECT_EQ(x.set_chunked_rows_mode, &fake_chunked);
  EXPECT_EQ(x.send_close_prepared, &fake_close);
  g_seen_rows = 0;
  EXPECT_EQ(select_row_mode(nullptr, x), RowMode::chunked);
  EXPECT_EQ(g_seen_rows, 256);
  EXPECT_EQ(g_seen_conn, nullptr);
}

TEST(ChunkedRows, FallsBackToSingleRowModeWithoutIt) {
  const LibpqExtras x = find_libpq_extras(&lookup_libpq15);
  EXPECT_EQ(x.set_chunked_rows_mode, nullptr);
  EXPECT_EQ(x.send_close_prepared, nullptr);
  g_seen_rows = 0;
  // No connection: PQsetSingleRowMode refuses, so nothing could be set.
  EXPECT_EQ(select_row_mode(nullptr, x), RowMode::whole);
  EXPECT_EQ(g_seen_rows, 0);
  EXPECT_EQ(find_libpq_extras(nullptr).set_chunked_rows_mode, nullptr);
}

TEST(ChunkedRows, TheLoadedLibpqAgreesWithItsVersion) {
  const bool has = libpq_extras().set_chunked_rows_mode != nullptr;
  EXPECT_EQ(has, PQlibVersion() >= 170000) << "libpq " << PQlibVersion();
}

// ---- errors -----------------------------------------------------------------------

TEST(ErrorMapping, SqlstateClassesMapToPortableErrors) {
  struct Case {
    const char* sqlstate;
    db::Errc code;
  };
  const Case cases[] = {
      {"23505", db::Errc::constraint},    {"23503", db::Errc::constraint},
      {"23502", db::Errc::constraint},    {"23514", db::Errc::constraint},
      {"42601", db::Errc::invalid_query}, {"42P01", db::Errc::invalid_query},
      {"42703", db::Errc::invalid_query}, {"22012", db::Errc::invalid_query},
      {"2BP01", db::Errc::invalid_query}, {"25P02", db::Errc::invalid_query},
      {"40P01", db::Errc::busy},          {"40001", db::Errc::busy},
      {"55P03", db::Errc::busy},          {"57014", db::Errc::busy},
      {"57P01", db::Errc::connection},    {"08006", db::Errc::connection},
      {"08P01", db::Errc::connection},    {"0A000", db::Errc::unsupported},
      {"XX000", db::Errc::invalid_query}, {"", db::Errc::invalid_query},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(errc_for_sqlstate(c.sqlstate), c.code) << c.sqlstate;
  }
}

TEST(ErrorMapping, LibpqOwnErrorsAndLostConnections) {
  const db::Error lost = error_from_result(nullptr, true, "server closed the connection\n");
  EXPECT_EQ(lost.code, db::Errc::connection);
  EXPECT_EQ(lost.sqlstate, "08006");
  EXPECT_EQ(lost.message, "server closed the connection");
  const db::Error local = error_from_result(nullptr, false, "bad request\n");
  EXPECT_EQ(local.code, db::Errc::invalid_query);
  EXPECT_EQ(local.message, "bad request");
  const db::Error busy = busy_error();
  EXPECT_EQ(busy.code, db::Errc::busy);
  EXPECT_EQ(busy.sqlstate, "55000");
  EXPECT_EQ(would_block_error().code, db::Errc::would_block);
}

TEST(ErrorMapping, ConnectErrorCarriesTheServersSqlstate) {
  const db::Error starting = connect_error(
      "connection to server at \"h\" (127.0.0.1), port 5432 failed: FATAL:  57P03: the "
      "database system is starting up\nLOCATION:  ProcessStartupPacket, postmaster.c:2400\n");
  EXPECT_EQ(starting.code, db::Errc::connection);
  EXPECT_EQ(starting.sqlstate, "57P03");
  EXPECT_EQ(starting.message,
            "connection to server at \"h\" (127.0.0.1), port 5432 failed: FATAL:  the database "
            "system is starting up");
  EXPECT_EQ(connect_error("failed: FATAL:  28P01: password authentication failed for user \"u\"")
                .sqlstate,
            "28P01");
  EXPECT_EQ(connect_error("failed: FATAL:  3D000: database \"x\" does not exist").sqlstate,
            "3D000");
  // Two hosts tried: the last one's answer.
  EXPECT_EQ(connect_error("a failed: FATAL:  57P03: starting\nb failed: FATAL:  28000: role "
                          "\"u\" does not exist\n")
                .sqlstate,
            "28000");
  const db::Error refused = connect_error(
      "connection to server at \"h\" (127.0.0.1), port 1 failed: Connection refused\n\tIs the "
      "server running on that host and accepting TCP/IP connections?\n");
  EXPECT_EQ(refused.sqlstate, "08001");
  EXPECT_EQ(refused.code, db::Errc::connection);
  EXPECT_EQ(connect_error("timeout:  ABC: x").sqlstate, "08001");  // not five characters
}

// ---- decoding -----------------------------------------------------------------------

db::ValueView decode(uint32_t oid, std::string_view bytes, std::string& scratch, int16_t fmt = 1) {
  db::ValueView v;
  auto e = decode_value(read_for_oid(oid), oid, fmt, bytes, scratch, v);
  EXPECT_FALSE(e.has_value()) << (e ? e->message : "");
  return v;
}

TEST(Decode, NumericKeepsItsStoredScale) {
  std::string scratch;
  const auto bin = pg::numeric_to_binary("-0.000100");
  ASSERT_TRUE(bin);
  const db::ValueView v = decode(1700, *bin, scratch);
  EXPECT_EQ(v.kind, db::Kind::Decimal);
  EXPECT_EQ(v.str, "-0.000100");
  const auto nan = pg::numeric_to_binary("NaN");
  const db::ValueView n = decode(1700, *nan, scratch);
  EXPECT_EQ(n.kind, db::Kind::Text);
  EXPECT_EQ(n.str, "NaN");
  // 12345.6700 by hand: ndigits 3, weight 1, positive, dscale 4: 1 2345 6700.
  const std::string hand("\0\3\0\1\0\0\0\4\0\1\x09\x29\x1a\x2c", 14);
  EXPECT_EQ(decode(1700, hand, scratch).str, "12345.6700");
}

TEST(Decode, IntegersFloatsBoolAndBadSizes) {
  std::string scratch;
  EXPECT_EQ(decode(23, std::string("\xff\xff\xff\xfe", 4), scratch).i64, -2);
  EXPECT_EQ(decode(21, std::string("\x80\x00", 2), scratch).i64, -32768);
  EXPECT_EQ(decode(26, std::string("\xff\xff\xff\xff", 4), scratch).i64, 4294967295LL);
  EXPECT_EQ(decode(20, std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8), scratch).i64, INT64_MAX);
  EXPECT_EQ(decode(701, std::string("\x3f\xf8\0\0\0\0\0\0", 8), scratch).f64, 1.5);
  EXPECT_EQ(decode(700, std::string("\x3f\xc0\0\0", 4), scratch).f64, 1.5);
  EXPECT_TRUE(decode(16, std::string("\1", 1), scratch).b);
  db::ValueView v;
  auto e = decode_value(Read::int4, 23, 1, std::string("\0\0", 2), scratch, v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->sqlstate, "22P03");
}

TEST(Decode, InlineFastPathAgreesAndLeavesBadSizesToTheFullDecoder) {
  db::ValueView v;
  ASSERT_TRUE(
      decode_binary_fast(Read::int8, std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8), v));
  EXPECT_EQ(v.kind, db::Kind::I64);
  EXPECT_EQ(v.i64, -2);
  ASSERT_TRUE(decode_binary_fast(Read::int4, std::string("\x80\0\0\0", 4), v));
  EXPECT_EQ(v.i64, INT32_MIN);
  ASSERT_TRUE(decode_binary_fast(Read::int2, std::string("\x7f\xff", 2), v));
  EXPECT_EQ(v.i64, 32767);
  ASSERT_TRUE(decode_binary_fast(Read::float8, std::string("\xc0\x04\0\0\0\0\0\0", 8), v));
  EXPECT_EQ(v.kind, db::Kind::F64);
  EXPECT_EQ(v.f64, -2.5);
  ASSERT_TRUE(decode_binary_fast(Read::text, "h\xc3\xa9", v));
  EXPECT_EQ(v.kind, db::Kind::Text);
  EXPECT_EQ(v.str, "h\xc3\xa9");
  // Not a fast kind: the full decoder's.
  EXPECT_FALSE(decode_binary_fast(Read::numeric, std::string("\0\0\0\0\0\0\0\0", 8), v));
  // A wrong size is not decoded inline; decode_value answers 22P03 naming both sizes.
  std::string scratch;
  const std::pair<Read, uint32_t> kinds[] = {
      {Read::int2, 21}, {Read::int4, 23}, {Read::int8, 20}, {Read::float8, 701}};
  for (const auto& [how, oid] : kinds) {
    const std::string seven(7, '\0');
    EXPECT_FALSE(decode_binary_fast(how, seven, v));
    auto e = decode_value(how, oid, 1, seven, scratch, v);
    ASSERT_TRUE(e) << oid;
    EXPECT_EQ(e->sqlstate, "22P03");
    EXPECT_NE(e->message.find("got 7"), std::string::npos) << e->message;
  }
}

TEST(Decode, UuidJsonbDatesAndTimestamps) {
  std::string scratch;
  const std::string uuid("\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a\x11", 16);
  const db::ValueView u = decode(2950, uuid, scratch);
  EXPECT_EQ(u.kind, db::Kind::Text);
  EXPECT_EQ(u.str, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  const std::string jsonb("\1{}", 3);  // the views point into the bytes
  const db::ValueView j = decode(3802, jsonb, scratch);
  EXPECT_EQ(j.kind, db::Kind::Text);
  EXPECT_EQ(j.str, "{}");
  // 1999-12-31 = day -1 of PostgreSQL's epoch.
  const db::ValueView d = decode(1082, std::string("\xff\xff\xff\xff", 4), scratch);
  EXPECT_EQ(d.kind, db::Kind::Time);
  EXPECT_EQ(d.micros, 946598400LL * 1000000);
  const db::ValueView inf =
      decode(1184, std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8), scratch);
  EXPECT_EQ(inf.micros, INT64_MAX);
  const db::ValueView ts = decode(1114, std::string(8, '\0'), scratch);
  EXPECT_EQ(ts.micros, 946684800LL * 1000000);
  const std::string interval("\1\2", 2);
  const db::ValueView other = decode(1186, interval, scratch);
  EXPECT_EQ(other.kind, db::Kind::Bytes);
  EXPECT_EQ(other.str.data(), interval.data());  // borrowed, not copied
}

TEST(Decode, TextFormatForTheSimpleProtocol) {
  std::string scratch;
  EXPECT_EQ(decode(23, "42", scratch, 0).i64, 42);
  EXPECT_EQ(decode(1700, "-0.000100", scratch, 0).str, "-0.000100");
  EXPECT_EQ(decode(1700, "NaN", scratch, 0).kind, db::Kind::Text);
  EXPECT_EQ(decode(17, "\\x0102", scratch, 0).str, "\x01\x02");
  EXPECT_EQ(decode(1184, "2000-01-01 01:00:00+01", scratch, 0).micros, 946684800LL * 1000000);
  EXPECT_EQ(decode(1186, "1 day", scratch, 0).kind, db::Kind::Bytes);
  // A DateStyle the parser does not read: the text itself.
  EXPECT_EQ(decode(1082, "12/31/1999", scratch, 0).kind, db::Kind::Text);
}

TEST(Columns, NumericTypmodIncludingNegativeScale) {
  EXPECT_EQ(numeric_typmod(((10 << 16) | 2) + 4), std::make_pair(10, 2));
  EXPECT_EQ(numeric_typmod(-1), std::nullopt);
  EXPECT_EQ(numeric_typmod(((5 << 16) | (0x7ff & -2)) + 4), std::make_pair(5, -2));
  const db::Column c = make_column("v", 1043, 24, 99, 3, -1, 1);
  EXPECT_EQ(c.kind, db::Kind::Text);
  EXPECT_EQ(c.native.length, 20);
  EXPECT_EQ(c.native.pg_table_oid, 99u);
  EXPECT_EQ(c.native.pg_column, 3);
  EXPECT_EQ(c.native.name, "varchar");
}

// ---- parameters ---------------------------------------------------------------------

db::Param P(db::Value v) {
  db::Param p;
  p.value = std::move(v);
  return p;
}

TEST(Params, NaturalTypesAndFormats) {
  ParamBuffer b;
  ASSERT_FALSE(b.add_natural(P(db::Value::boolean(true))));
  ASSERT_FALSE(b.add_natural(P(db::Value::int64(-2))));
  ASSERT_FALSE(b.add_natural(P(db::Value::uint64(UINT64_MAX))));
  ASSERT_FALSE(b.add_natural(P(db::Value::float64(1.5))));
  ASSERT_FALSE(b.add_natural(P(db::Value::text("héllo"))));
  ASSERT_FALSE(b.add_natural(P(db::Value::bytes(std::string("\0\1", 2)))));
  ASSERT_FALSE(b.add_natural(P(db::Value::time(946684800LL * 1000000))));
  ASSERT_FALSE(b.add_natural(P(db::Value::decimal("-0.000100"))));
  ASSERT_FALSE(b.add_natural(P(db::Value::null())));
  b.finish();
  ASSERT_EQ(b.count(), 9);
  const Oid types[] = {16, 20, 1700, 701, 0, 17, 1184, 1700, 0};
  const int formats[] = {1, 1, 0, 1, 0, 1, 1, 0, 0};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(b.types()[i], types[i]) << i;
    EXPECT_EQ(b.formats()[i], formats[i]) << i;
  }
  EXPECT_EQ(std::string(b.values()[1], b.lengths()[1]),
            std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  EXPECT_STREQ(b.values()[2], "18446744073709551615");
  EXPECT_STREQ(b.values()[4], "héllo");
  EXPECT_EQ(std::string(b.values()[6], 8), std::string(8, '\0'));  // 2000-01-01
  EXPECT_STREQ(b.values()[7], "-0.000100");
  EXPECT_EQ(b.values()[8], nullptr);
}

TEST(Params, TypedEncodingChecksRanges) {
  ParamBuffer b;
  auto e = b.add_typed(P(db::Value::int64(3000000000LL)), 23);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, db::Errc::invalid_query);
  EXPECT_EQ(e->sqlstate, "22003");
  EXPECT_EQ(e->detail, "parameter $1");
  ASSERT_FALSE(b.add_typed(P(db::Value::int64(7)), 23));
  ASSERT_FALSE(b.add_typed(P(db::Value::text("not parsed here")), 23));  // the server parses text
  auto bad = b.add_typed(P(db::Value::decimal("1.2.3")), 1700);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->sqlstate, "22P02");
  ASSERT_FALSE(b.add_typed(P(db::Value::int64(5)), 1186));  // interval: text "5"
  b.finish();
  ASSERT_EQ(b.count(), 3);
  EXPECT_EQ(std::string(b.values()[0], 4), std::string("\0\0\0\7", 4));
  EXPECT_EQ(b.formats()[0], 1);
  EXPECT_EQ(b.formats()[1], 0);
  EXPECT_STREQ(b.values()[2], "5");
  EXPECT_EQ(b.formats()[2], 0);
}

TEST(Params, TextWithNulIsRefusedAndNativeParamsPassThrough) {
  ParamBuffer b;
  auto e = b.add_natural(P(db::Value::text(std::string("a\0b", 3))));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->sqlstate, "22021");
  db::Param native = P(db::Value::bytes(std::string("\0\0\0\1", 4)));
  native.pg_oid = 23;
  native.pg_format = 1;
  ASSERT_FALSE(b.add_natural(native));
  b.finish();
  EXPECT_EQ(b.types()[0], 23u);
  EXPECT_EQ(b.formats()[0], 1);
  EXPECT_EQ(b.lengths()[0], 4);
}

TEST(Params, ClearedBufferServesTheNextStatement) {
  // The driver reuses one buffer per thread: after clear() nothing of the
  // last statement's values, NULLs or failed value is left, including after
  // a value past 64 KiB (whose allocation is given back).
  ParamBuffer b;
  ASSERT_FALSE(b.add_natural(P(db::Value::text(std::string(70000, 'x')))));
  ASSERT_FALSE(b.add_natural(P(db::Value::null())));
  ASSERT_TRUE(b.add_natural(P(db::Value::text(std::string("a\0b", 3)))));  // refused, left over
  b.finish();
  b.clear();
  ASSERT_FALSE(b.add_typed(P(db::Value::int64(9)), 20));
  ASSERT_FALSE(b.add_typed(P(db::Value::text("t")), 25));
  b.finish();
  ASSERT_EQ(b.count(), 2);
  EXPECT_EQ(std::string(b.values()[0], b.lengths()[0]), std::string("\0\0\0\0\0\0\0\x09", 8));
  EXPECT_STREQ(b.values()[1], "t");
  EXPECT_EQ(b.types()[1], 25u);
  b.clear();
  ASSERT_FALSE(b.add_natural(P(db::Value::null())));
  b.finish();
  ASSERT_EQ(b.count(), 1);
  EXPECT_EQ(b.values()[0], nullptr);
  // The thread's buffer the driver uses comes back empty each time.
  ParamBuffer& mine = ParamBuffer::reused();
  ASSERT_FALSE(mine.add_natural(P(db::Value::int64(1))));
  ParamBuffer& again = ParamBuffer::reused();
  EXPECT_EQ(&again, &mine);
  again.finish();
  EXPECT_EQ(again.count(), 0);
}

TEST(ResultFormat, BinaryOnlyWhenEveryRequestedFormatIsBinary) {
  db::QueryOptions o;
  EXPECT_EQ(result_format_for(o), 1);  // non-native: binary, decoded
  o.native = true;
  EXPECT_EQ(result_format_for(o), 0);
  o.formats = {1};
  EXPECT_EQ(result_format_for(o), 1);
  o.formats = {1, 1, 1};
  EXPECT_EQ(result_format_for(o), 1);
  o.formats = {1, 0};
  EXPECT_EQ(result_format_for(o), 0);
}

TEST(CommandTag, VerbAndAffectedRows) {
  EXPECT_EQ(parse_command_tag("INSERT 0 3"), std::make_pair(std::string("INSERT"), int64_t{3}));
  EXPECT_EQ(parse_command_tag("UPDATE 7"), std::make_pair(std::string("UPDATE"), int64_t{7}));
  EXPECT_EQ(parse_command_tag("SELECT 5"), std::make_pair(std::string("SELECT"), int64_t{-1}));
  EXPECT_EQ(parse_command_tag("CREATE TABLE"),
            std::make_pair(std::string("CREATE TABLE"), int64_t{-1}));
  EXPECT_EQ(parse_command_tag("COPY 12"), std::make_pair(std::string("COPY"), int64_t{12}));
  EXPECT_EQ(parse_command_tag(""), std::make_pair(std::string(), int64_t{-1}));
}

// ---- conninfo -------------------------------------------------------------------------

TEST(Conninfo, ValidateRefusesTlsKeysOptionsAndBadPins) {
  db::OpenOptions o;
  o.connection = "host=h sslmode=require sslrootcert=/x";
  auto p = validate_options(o);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(p[0].second.find("tls block"), std::string::npos);
  o.connection = "postgresql://h/db?requiressl=1";
  EXPECT_EQ(validate_options(o).size(), 1u);
  o.connection = "host=h nonsense=1";
  p = validate_options(o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].second.find("nonsense"), std::string::npos);
  o.connection = "mydb";  // a bare database name
  EXPECT_TRUE(validate_options(o).empty());
  o.options["x"] = "1";
  o.tls_ca = "/ca.pem";
  o.tls_pins = {std::string(64, 'A'), "AB:CD"};
  p = validate_options(o);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, "x");
  EXPECT_EQ(p[1].first, "tls.pin_sha256");
  EXPECT_EQ(normalize_pin("AB:cd:0F"), "abcd0f");
}

TEST(Conninfo, DriverAddsNoApplicationName) {
  // Clients without one see the server's default (''), as directly.
  db::OpenOptions o;
  o.connection = "host=h";
  auto params = connect_params(o);
  for (const auto& [k, v] : params.pairs)
    EXPECT_NE(k, "application_name");
}

TEST(Conninfo, DriverAddsKeepalivesTimeoutNameAndTls) {
  db::OpenOptions o;
  o.connection = "host=h application_name=mine";
  o.password = "pw";
  auto params = connect_params(o);
  std::map<std::string, std::string> m(params.pairs.begin(), params.pairs.end());
  EXPECT_EQ(params.pairs[0].first, "dbname");  // first: expanded, then overridden
  EXPECT_EQ(params.pairs[0].second, o.connection);
  EXPECT_EQ(m["password"], "pw");
  EXPECT_EQ(m["keepalives"], "1");
  EXPECT_EQ(m["keepalives_idle"], "30");
  EXPECT_EQ(m["keepalives_interval"], "10");
  EXPECT_EQ(m["keepalives_count"], "3");
  EXPECT_EQ(m["connect_timeout"], "10");
  EXPECT_EQ(m.count("application_name"), 0u);  // the conninfo's own wins
  EXPECT_EQ(m["sslmode"], "disable");
  EXPECT_EQ(params.keywords.back(), nullptr);
  EXPECT_EQ(params.keywords.size(), params.pairs.size() + 1);
  o.tls_ca = "/ca.pem";
  params = connect_params(o);
  m = std::map<std::string, std::string>(params.pairs.begin(), params.pairs.end());
  EXPECT_EQ(m["sslmode"], "verify-full");
  EXPECT_EQ(m["sslrootcert"], "/ca.pem");
  EXPECT_EQ(m["ssl_min_protocol_version"], "TLSv1.3");
  EXPECT_EQ(m["channel_binding"], "require");
  o.connection = "host=h channel_binding=prefer";
  params = connect_params(o);
  m = std::map<std::string, std::string>(params.pairs.begin(), params.pairs.end());
  EXPECT_EQ(m.count("channel_binding"), 0u);  // the conninfo's own stands
  EXPECT_TRUE(validate_options(o).empty());
  o.connection = "host=h channel_binding=disable";
  ASSERT_EQ(validate_options(o).size(), 1u);
  EXPECT_NE(validate_options(o)[0].second.find("require (the default) or prefer"),
            std::string::npos);
}

TEST(Conninfo, RedactHidesPasswordsInEveryFormLibpqAccepts) {
  EXPECT_EQ(redact_conninfo("host=h password=s3cret"), "password=*** host=h");
  EXPECT_EQ(redact_conninfo("host=h password = S3cretA"), "password=*** host=h");
  EXPECT_EQ(redact_conninfo("host=h password= 'S3cret B' user=u"), "user=u password=*** host=h");
  EXPECT_EQ(redact_conninfo("host=h password=S3cret\\ D user=u"), "user=u password=*** host=h");
  EXPECT_EQ(redact_conninfo("host=h\tpassword\t=\tS3cretE\tuser=u"), "user=u password=*** host=h");
  EXPECT_EQ(redact_conninfo("password='it\\'s x' host=h"), "password=*** host=h");
  EXPECT_EQ(redact_conninfo("host=h sslpassword=k"), "host=h sslpassword=***");
  EXPECT_EQ(redact_conninfo("postgresql://u:S3cretF@h/db"), "user=u password=*** dbname=db host=h");
  EXPECT_EQ(redact_conninfo("postgres://u:p%40ss@h:5433/db"),
            "user=u password=*** dbname=db host=h port=5433");
  EXPECT_EQ(redact_conninfo("postgresql://u@h/db?password=S3cretG&application_name=a"),
            "user=u password=*** dbname=db host=h application_name=a");
  EXPECT_EQ(redact_conninfo("host=h user=u"), "user=u host=h");
  EXPECT_EQ(redact_conninfo("host=h options='-c x=1'"), "host=h options='-c x=1'");
  EXPECT_EQ(redact_conninfo("mydb"), "mydb");  // a bare database name
  EXPECT_EQ(redact_conninfo("host=h password='S3cret unterminated"),
            "(a connection string libpq cannot parse)");
}

}  // namespace
TEST(Conninfo, HostListOfAMultiHostConninfoPairsHostsWithPorts) {
  using HP = db::HostPort;
  EXPECT_EQ(conninfo_host_list("host=a,b port=5433,5434 dbname=x"),
            (std::vector<HP>{{"a", 5433}, {"b", 5434}}));
  EXPECT_EQ(conninfo_host_list("host=a,b,c port=6000"),
            (std::vector<HP>{{"a", 6000}, {"b", 6000}, {"c", 6000}}));
  EXPECT_EQ(conninfo_host_list("host=a,b"), (std::vector<HP>{{"a", 0}, {"b", 0}}));
  EXPECT_EQ(conninfo_host_list("postgresql://u@a:1,b:2/db"), (std::vector<HP>{{"a", 1}, {"b", 2}}));
  EXPECT_EQ(conninfo_host_list("hostaddr=10.0.0.1,10.0.0.2 port=5432"),
            (std::vector<HP>{{"10.0.0.1", 5432}, {"10.0.0.2", 5432}}));
  EXPECT_TRUE(conninfo_host_list("host=a port=1").empty());
  EXPECT_TRUE(conninfo_host_list("app").empty());
  EXPECT_TRUE(conninfo_host_list("host='unterminated").empty());
}

TEST(Conninfo, OneHostOfSeveralReplacesTheConninfosHosts) {
  db::OpenOptions o;
  o.connection = "host=a,b port=1,2 dbname=x";
  o.host = "10.0.0.9";
  o.port = 6543;
  o.read_write = true;
  auto params = connect_params(o);
  std::map<std::string, std::string> m(params.pairs.begin(), params.pairs.end());
  EXPECT_EQ(m["host"], "10.0.0.9");
  EXPECT_EQ(m["hostaddr"], "10.0.0.9");
  EXPECT_EQ(m["port"], "6543");
  EXPECT_EQ(m["target_session_attrs"], "read-write");
  o.host = "db.example";
  o.port = 0;
  o.read_write = false;
  params = connect_params(o);
  m = std::map<std::string, std::string>(params.pairs.begin(), params.pairs.end());
  EXPECT_EQ(m["host"], "db.example");
  EXPECT_EQ(m.count("hostaddr"), 0u);
  EXPECT_EQ(m.count("port"), 0u);  // the conninfo's stands
  EXPECT_EQ(m.count("target_session_attrs"), 0u);
}

}  // namespace wirepool::postgresql
