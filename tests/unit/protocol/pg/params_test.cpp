// Bind parameters (protocol/pg/params.hpp).
//
// Cases: decode_param of typed and untyped text, binary of every supported
// type, SQLSTATEs 22P02 / 22P03 / 22003 / 22021 / 22023 with
// Errc::invalid_query; encode_value then decode_param round trips, text and
// binary.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "protocol/pg/types.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"
#include "tests/unit/protocol/pg/values.hpp"

namespace wirepool::pg {
namespace {

using test::ByteBuilder;

// ---------------------------------------------------------------------------
// decode_param

TEST(DecodeParam, NullStaysNullAndUntypedTextStaysText) {
  auto r = decode_param(std::nullopt, oid::kInt4, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->value.is_null());
  auto u = decode_param("12", 0, 0);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->untyped);
  EXPECT_EQ(u->value.kind, db::Kind::Text);
  EXPECT_EQ(u->value.str, "12");
  auto unknown = decode_param("x", oid::kUnknown, 0);
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE(unknown->untyped);
  auto typed = decode_param("x", oid::kText, 0);
  ASSERT_TRUE(typed.ok());
  EXPECT_FALSE(typed->untyped);
}

TEST(DecodeParam, BinaryOfUnspecifiedTypeIsBytes) {
  const auto v = decode_ok(std::string_view("\x00\x01", 2), 0, 1);
  EXPECT_EQ(v.kind, db::Kind::Bytes);
  EXPECT_EQ(v.str, std::string("\x00\x01", 2));
}

TEST(DecodeParam, TypedTextInput) {
  EXPECT_EQ(decode_ok("-32768", oid::kInt2, 0).i64, -32768);
  EXPECT_EQ(decode_ok(" 2147483647", oid::kInt4, 0).i64, 2147483647);
  EXPECT_EQ(decode_ok("+9223372036854775807", oid::kInt8, 0).i64, INT64_MAX);
  EXPECT_EQ(decode_ok("4294967295", oid::kOid, 0).i64, 4294967295LL);
  EXPECT_EQ(decode_ok("1.5", oid::kFloat8, 0).f64, 1.5);
  EXPECT_EQ(decode_ok("-Infinity", oid::kFloat8, 0).f64, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(decode_ok("NaN", oid::kFloat4, 0).f64));
  EXPECT_EQ(decode_ok("0.1", oid::kFloat4, 0).f64, double(0.1f));
  const auto n = decode_ok("  -0.000100 ", oid::kNumeric, 0);
  EXPECT_EQ(n.kind, db::Kind::Decimal);
  EXPECT_EQ(n.str, "-0.000100");
  EXPECT_EQ(decode_ok("\\x4142", oid::kBytea, 0).str, "AB");
  EXPECT_EQ(decode_ok("2000-01-01", oid::kDate, 0).micros, k2000);
  EXPECT_EQ(decode_ok("2000-01-01 10:00+02", oid::kTimestamptz, 0).micros,
            k2000 + 8 * 3600 * 1000000LL);
  // timestamp without time zone ignores a zone, as PostgreSQL does.
  EXPECT_EQ(decode_ok("2000-01-01 10:00+02", oid::kTimestamp, 0).micros,
            k2000 + 10 * 3600 * 1000000LL);
  EXPECT_EQ(decode_ok("{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}", oid::kUuid, 0).str,
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
}

TEST(DecodeParam, TextSyntaxErrorsAre22P02) {
  expect_decode_error("abc", oid::kInt4, 0, "22P02");
  expect_decode_error("1.5", oid::kInt8, 0, "22P02");
  expect_decode_error("", oid::kInt2, 0, "22P02");
  expect_decode_error("+-5", oid::kInt4, 0, "22P02");
  expect_decode_error("- 5", oid::kInt4, 0, "22P02");
  expect_decode_error("1,5", oid::kFloat8, 0, "22P02");
  expect_decode_error("1..5", oid::kNumeric, 0, "22P02");
  expect_decode_error("\\xZZ", oid::kBytea, 0, "22P02");
  expect_decode_error("2024-02-30", oid::kDate, 0, "22P02");
  expect_decode_error("yesterday", oid::kTimestamptz, 0, "22P02");
  expect_decode_error("1234", oid::kUuid, 0, "22P02");
}

TEST(DecodeParam, OutOfRangeIs22003) {
  expect_decode_error("32768", oid::kInt2, 0, "22003");
  expect_decode_error("-2147483649", oid::kInt4, 0, "22003");
  expect_decode_error("9223372036854775808", oid::kInt8, 0, "22003");
  expect_decode_error("-1", oid::kOid, 0, "22003");
  expect_decode_error("1e400", oid::kFloat8, 0, "22003");
  expect_decode_error("1e39", oid::kFloat4, 0, "22003");
  expect_decode_error("1e-400", oid::kFloat8, 0, "22003");
  expect_decode_error("1e999999", oid::kNumeric, 0, "22003");
}

TEST(DecodeParam, BinaryInput) {
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i16(-2)), oid::kInt2, 1).i64, -2);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i32(-3)), oid::kInt4, 1).i64, -3);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i64(INT64_MIN)), oid::kInt8, 1).i64, INT64_MIN);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().u32(0xFFFFFFFF)), oid::kOid, 1).i64, 4294967295LL);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().u32(0x3FC00000)), oid::kFloat4, 1).f64, 1.5);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i64(0x3FF8000000000000)), oid::kFloat8, 1).f64, 1.5);
  EXPECT_TRUE(decode_ok(std::string_view("\2", 1), oid::kBool, 1).b);
  EXPECT_EQ(decode_ok(numeric_bytes(1, -1, 0x4000, 6, {1}), oid::kNumeric, 1).str, "-0.000100");
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i32(-1)), oid::kDate, 1).micros, k2000 - kDay);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i64(-1)), oid::kTimestamptz, 1).micros, k2000 - 1);
  EXPECT_EQ(decode_ok(bytes_of(ByteBuilder().i64(INT64_MAX)), oid::kTimestamp, 1).micros,
            INT64_MAX);
  EXPECT_EQ(decode_ok("héllo", oid::kText, 1).str, "héllo");
  EXPECT_EQ(decode_ok("\1[1]", oid::kJsonb, 1).str, "[1]");
  EXPECT_EQ(decode_ok(std::string_view("\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38"
                                       "\x0a\x11",
                                       16),
                      oid::kUuid, 1)
                .str,
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_EQ(decode_ok(std::string_view("\0\1", 2), oid::kBytea, 1).str, std::string("\0\1", 2));
}

TEST(DecodeParam, BinaryFormatErrorsAre22P03) {
  expect_decode_error(std::string_view("\0\0\0", 3), oid::kInt4, 1, "22P03");
  expect_decode_error(std::string_view("\0\0\0\0\0", 5), oid::kInt4, 1, "22P03");
  expect_decode_error("", oid::kBool, 1, "22P03");
  expect_decode_error(std::string_view("\0\0\0\0", 4), oid::kInt8, 1, "22P03");
  expect_decode_error(std::string_view("\0\0\0\0\0\0\0", 7), oid::kFloat8, 1, "22P03");
  expect_decode_error(numeric_bytes(1, 0, 0, 0, {10000}), oid::kNumeric, 1, "22P03");
  expect_decode_error("\2[1]", oid::kJsonb, 1, "22P03");
  expect_decode_error("short", oid::kUuid, 1, "22P03");
  expect_decode_error(std::string_view("\0\0\0", 3), oid::kDate, 1, "22P03");
}

TEST(DecodeParam, OtherErrors) {
  expect_decode_error(std::string_view("\xff", 1), oid::kText, 1, "22021");
  expect_decode_error(std::string_view("a\0b", 3), 0, 0, "22021");
  expect_decode_error(std::string_view("\xc0\x80", 2), oid::kVarchar, 0, "22021");  // overlong
  expect_decode_error("1", oid::kInt4, 2, "22023");
  expect_decode_error(bytes_of(ByteBuilder().i64(INT64_MAX - 1)), oid::kTimestamptz, 1, "22008");
  expect_decode_error(bytes_of(ByteBuilder().i32(INT32_MAX - 1)), oid::kDate, 1, "22008");
  expect_decode_error("x", 1007, 1, "0A000");
}

TEST(DecodeParam, UnsupportedTypeInTextIsLeftToTheBackend) {
  auto r = decode_param("{1,2}", 1007, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->untyped);
  EXPECT_EQ(r->value.str, "{1,2}");
}

// ---------------------------------------------------------------------------
// Round trips: encode_value then decode_param

struct RoundTrip {
  const char* name;
  db::Value value;
  uint32_t oid;
};

class RoundTrips : public ::testing::TestWithParam<std::tuple<RoundTrip, int16_t>> {};

TEST_P(RoundTrips, EncodeThenDecodeGivesTheSameValue) {
  const auto& [c, format] = GetParam();
  std::string wire, error;
  ASSERT_TRUE(encode_value(db::view_of(c.value), c.oid, format, wire, &error)) << error;
  auto back = decode_param(wire, c.oid, format);
  ASSERT_TRUE(back.ok()) << back.error().message << " for " << wire;
  const db::Value& v = back->value;
  ASSERT_EQ(v.kind, c.value.kind) << wire;
  switch (v.kind) {
    case db::Kind::F64:
      if (std::isnan(c.value.f64)) {
        EXPECT_TRUE(std::isnan(v.f64));
      } else {
        EXPECT_EQ(v.f64, c.value.f64) << wire;
        EXPECT_EQ(std::signbit(v.f64), std::signbit(c.value.f64));
      }
      break;
    case db::Kind::Bool:
      EXPECT_EQ(v.b, c.value.b);
      break;
    case db::Kind::I64:
    case db::Kind::Time:
      EXPECT_EQ(v.i64, c.value.i64) << wire;
      break;
    default:
      EXPECT_EQ(v.str, c.value.str) << wire;
  }
}

std::vector<RoundTrip> round_trips() {
  return {
      {"BoolTrue", db::Value::boolean(true), oid::kBool},
      {"BoolFalse", db::Value::boolean(false), oid::kBool},
      {"Int2Min", db::Value::int64(-32768), oid::kInt2},
      {"Int4Max", db::Value::int64(2147483647), oid::kInt4},
      {"Int8Min", db::Value::int64(INT64_MIN), oid::kInt8},
      {"Float8Third", db::Value::float64(1.0 / 3), oid::kFloat8},
      {"Float8Tiny", db::Value::float64(5e-324), oid::kFloat8},
      {"Float8MinusZero", db::Value::float64(-0.0), oid::kFloat8},
      {"Float8Inf", db::Value::float64(std::numeric_limits<double>::infinity()), oid::kFloat8},
      {"Float8NaN", db::Value::float64(std::nan("")), oid::kFloat8},
      {"Float4", db::Value::float64(double(3.14159f)), oid::kFloat4},
      {"NumericZero", db::Value::decimal("0"), oid::kNumeric},
      {"NumericNegSmall", db::Value::decimal("-0.000100"), oid::kNumeric},
      {"NumericTinyScale", db::Value::decimal("0.000000000000000000000000000001"), oid::kNumeric},
      {"NumericBig", db::Value::decimal("99999999999999999999.99"), oid::kNumeric},
      {"NumericNaN", db::Value::decimal("NaN"), oid::kNumeric},
      {"Text", db::Value::text("héllo, wörld"), oid::kText},
      {"Bytea", db::Value::bytes(std::string("\0\x01\xfe\xff\\", 5)), oid::kBytea},
      {"DateBefore1970", db::Value::time(-400 * kDay), oid::kDate},
      {"DateBefore2000", db::Value::time(k2000 - 3 * kDay), oid::kDate},
      {"TimestampFraction", db::Value::time(k2000 + 123456), oid::kTimestamp},
      {"TimestamptzBefore1970", db::Value::time(-1234567890123), oid::kTimestamptz},
      {"TimestamptzBc", db::Value::time(*parse_time("0100-02-03 04:05:06.7 BC")),
       oid::kTimestamptz},
      {"TimestampInfinity", db::Value::time(INT64_MAX), oid::kTimestamptz},
  };
}

INSTANTIATE_TEST_SUITE_P(Values, RoundTrips,
                         ::testing::Combine(::testing::ValuesIn(round_trips()),
                                            ::testing::Values(int16_t{0}, int16_t{1})),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) == 0 ? "Text" : "Binary");
                         });

}  // namespace
}  // namespace wirepool::pg
