// Values between db::Value and PostgreSQL's text and binary formats
// (protocol/pg/types.hpp).
//
// Cases:
// - wire_type_for: every Kind, numeric typmod from precision/scale, Time by
//   time_form, parameters of unknown kind as text;
// - numeric: binary layout of 0, -0.000100 (scale kept), 1e-30, 12345.678,
//   99999999999999999999.99, 1000000, NaN and infinities, both directions;
//   digits hidden by dscale dropped; invalid sign, digit, dscale and size
//   refused; text normalisation (exponents, leading zeros, "-0.00");
// - floats: shortest exact text with PostgreSQL's fixed/exponent layout
//   (float8 and float4 thresholds), Infinity/-Infinity/NaN, -0;
// - times: dates before 2000 and before 1970, BC dates, timestamps with and
//   without fraction (trailing zeros trimmed), "+00" for timestamptz,
//   binary epochs 2000-01-01, infinities; parse_time's ISO forms and zones,
//   rounding to microseconds, invalid dates;
// - bool input spellings; bytea hex and escape formats;
// - encode_value conversions as PostgreSQL casts them (I64 -> float8/numeric/
//   text, Text -> int8, Bool -> int, U64 -> numeric, float8 -> int rounding,
//   numeric -> int rounding), out-of-range errors leaving `out` unchanged,
//   Text passed through in text format, NULL refused;
// - decode_param: typed and untyped text, binary of every supported type,
//   SQLSTATEs 22P02 / 22P03 / 22003 / 22021 / 22023 with Errc::invalid_query;
// - encode_value then decode_param round trips, text and binary.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "protocol/pg/types.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"

namespace wirepool::pg {
namespace {

using test::ByteBuilder;

constexpr int64_t kDay = 86400LL * 1000000;
constexpr int64_t k2000 = 946684800LL * 1000000;  // 2000-01-01 in Unix micros

std::string bytes_of(const ByteBuilder& b) {
  return test::as_string(b.bytes());
}

std::string numeric_bytes(int16_t ndigits, int16_t weight, uint16_t sign, int16_t dscale,
                          std::initializer_list<int16_t> digits) {
  ByteBuilder b;
  b.i16(ndigits).i16(weight).i16(static_cast<int16_t>(sign)).i16(dscale);
  for (auto d : digits)
    b.i16(d);
  return bytes_of(b);
}

std::string encode_ok(const db::ValueView& v, uint32_t oid, int16_t format) {
  std::string out, error;
  EXPECT_TRUE(encode_value(v, oid, format, out, &error)) << error;
  return out;
}

std::string encode_error(const db::ValueView& v, uint32_t oid, int16_t format) {
  std::string out = "keep", error;
  EXPECT_FALSE(encode_value(v, oid, format, out, &error));
  EXPECT_EQ(out, "keep") << "output must be unchanged on failure";
  return error;
}

db::Value decode_ok(std::optional<std::string_view> bytes, uint32_t oid, int16_t format) {
  auto r = decode_param(bytes, oid, format);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value().value : db::Value{};
}

void expect_decode_error(std::optional<std::string_view> bytes, uint32_t oid, int16_t format,
                         std::string_view sqlstate) {
  auto r = decode_param(bytes, oid, format);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, sqlstate) << r.error().message;
  EXPECT_EQ(r.error().code, db::Errc::invalid_query);
  EXPECT_FALSE(r.error().message.empty());
}

// ---------------------------------------------------------------------------
// wire_type_for

TEST(WireType, EachKindMapsAsTheDesignSays) {
  auto of = [](db::Kind k) {
    db::Column c;
    c.kind = k;
    return wire_type_for(c);
  };
  EXPECT_EQ(of(db::Kind::Bool).oid, oid::kBool);
  EXPECT_EQ(of(db::Kind::Bool).size, 1);
  EXPECT_EQ(of(db::Kind::I64).oid, oid::kInt8);
  EXPECT_EQ(of(db::Kind::I64).size, 8);
  EXPECT_EQ(of(db::Kind::U64).oid, oid::kNumeric);
  EXPECT_EQ(of(db::Kind::F64).oid, oid::kFloat8);
  EXPECT_EQ(of(db::Kind::Text).oid, oid::kText);
  EXPECT_EQ(of(db::Kind::Bytes).oid, oid::kBytea);
  EXPECT_EQ(of(db::Kind::Decimal).oid, oid::kNumeric);
  EXPECT_EQ(of(db::Kind::Decimal).modifier, -1);
  EXPECT_EQ(of(db::Kind::Null).oid, oid::kText);
  EXPECT_EQ(of(db::Kind::Time).oid, oid::kTimestamptz);
}

TEST(WireType, TimeFollowsTheColumnsTimeForm) {
  db::Column c;
  c.kind = db::Kind::Time;
  c.native.time_form = db::TimeForm::date;
  EXPECT_EQ(wire_type_for(c).oid, oid::kDate);
  EXPECT_EQ(wire_type_for(c).size, 4);
  c.native.time_form = db::TimeForm::timestamp;
  EXPECT_EQ(wire_type_for(c).oid, oid::kTimestamp);
  c.native.time_form = db::TimeForm::timestamptz;
  EXPECT_EQ(wire_type_for(c).oid, oid::kTimestamptz);
}

TEST(WireType, DecimalTypmodFromPrecisionAndScale) {
  db::Column c;
  c.kind = db::Kind::Decimal;
  c.native.precision = 10;
  c.native.scale = 2;
  EXPECT_EQ(wire_type_for(c).modifier, (10 << 16 | 2) + 4);
  c.native.scale = -1;  // unknown scale: unconstrained numeric
  EXPECT_EQ(wire_type_for(c).modifier, -1);
  c.native.precision = 5;
  c.native.scale = 6;  // scale above precision is not a numeric typmod
  EXPECT_EQ(wire_type_for(c).modifier, -1);
}

TEST(WireType, ParameterOfUnknownKindIsText) {
  db::ParamInfo p;
  EXPECT_EQ(wire_type_for(p).oid, oid::kText);
  p.kind = db::Kind::I64;
  EXPECT_EQ(wire_type_for(p).oid, oid::kInt8);
}

// ---------------------------------------------------------------------------
// numeric

struct NumericCase {
  const char* text;
  std::string binary;
};

class NumericBothWays : public ::testing::TestWithParam<NumericCase> {};

TEST_P(NumericBothWays, TextToBinaryAndBack) {
  const auto& c = GetParam();
  EXPECT_EQ(numeric_to_binary(c.text), c.binary);
  EXPECT_EQ(numeric_from_binary(c.binary), c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Values, NumericBothWays,
    ::testing::Values(
        NumericCase{"0", numeric_bytes(0, 0, 0x0000, 0, {})},
        NumericCase{"0.00", numeric_bytes(0, 0, 0x0000, 2, {})},
        NumericCase{"-0.000100", numeric_bytes(1, -1, 0x4000, 6, {1})},
        NumericCase{"0.000000000000000000000000000001", numeric_bytes(1, -8, 0x0000, 30, {100})},
        NumericCase{"12345.678", numeric_bytes(3, 1, 0x0000, 3, {1, 2345, 6780})},
        NumericCase{"99999999999999999999.99",
                    numeric_bytes(6, 4, 0x0000, 2, {9999, 9999, 9999, 9999, 9999, 9900})},
        NumericCase{"1000000", numeric_bytes(1, 1, 0x0000, 0, {100})},
        NumericCase{"-1", numeric_bytes(1, 0, 0x4000, 0, {1})},
        NumericCase{"NaN", numeric_bytes(0, 0, 0xC000, 0, {})},
        NumericCase{"Infinity", numeric_bytes(0, 0, 0xD000, 0, {})},
        NumericCase{"-Infinity", numeric_bytes(0, 0, 0xF000, 0, {})}));

TEST(Numeric, MinusZeroPointZeroOneHundredKeepsItsScale) {
  // -0.000100 is one base-10000 digit 1 at weight -1, sign negative, dscale 6.
  const auto b = numeric_to_binary("-0.000100");
  ASSERT_TRUE(b);
  EXPECT_EQ(numeric_from_binary(*b), "-0.000100");
}

TEST(Numeric, TextInputIsNormalised) {
  auto round = [](std::string_view in) { return numeric_from_binary(*numeric_to_binary(in)); };
  EXPECT_EQ(round("  +007.50 "), "7.50");
  EXPECT_EQ(round("-0.00"), "0.00");  // zero has no sign
  EXPECT_EQ(round("1e-30"), "0.000000000000000000000000000001");
  EXPECT_EQ(round("1.5E3"), "1500");
  EXPECT_EQ(round("1.2345e2"), "123.45");
  EXPECT_EQ(round(".5"), "0.5");
  EXPECT_EQ(round("5."), "5");
  EXPECT_EQ(round("nan"), "NaN");
  EXPECT_EQ(round("-inf"), "-Infinity");
}

TEST(Numeric, NonDecimalsAreRefused) {
  for (const char* bad : {"", "abc", "1.2.3", "--1", "1e", "1e+", "0x10", ".", "1 2", "e5"}) {
    EXPECT_EQ(numeric_to_binary(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(numeric_to_binary("1e100000000"), std::nullopt);
  EXPECT_EQ(numeric_to_binary("1e-20000"), std::nullopt);  // scale above 16383
}

TEST(Numeric, DigitsHiddenByDscaleAreDropped) {
  EXPECT_EQ(numeric_from_binary(numeric_bytes(1, -1, 0x0000, 2, {1234})), "0.12");
  // Truncated to zero: no minus sign.
  EXPECT_EQ(numeric_from_binary(numeric_bytes(1, -2, 0x4000, 2, {1})), "0.00");
  // Weight above the digits: trailing zero groups.
  EXPECT_EQ(numeric_from_binary(numeric_bytes(1, 2, 0x0000, 0, {7})), "700000000");
}

TEST(Numeric, InvalidBinaryIsRefused) {
  EXPECT_EQ(numeric_from_binary(""), std::nullopt);
  EXPECT_EQ(numeric_from_binary(numeric_bytes(0, 0, 0x1234, 0, {})), std::nullopt);  // sign
  EXPECT_EQ(numeric_from_binary(numeric_bytes(1, 0, 0x0000, 0, {10000})), std::nullopt);
  EXPECT_EQ(numeric_from_binary(numeric_bytes(1, 0, 0x0000, 0, {-1})), std::nullopt);
  EXPECT_EQ(numeric_from_binary(numeric_bytes(0, 0, 0x0000, 0x4000, {})), std::nullopt);
  EXPECT_EQ(numeric_from_binary(numeric_bytes(2, 0, 0x0000, 0, {1})), std::nullopt);  // short
  EXPECT_EQ(numeric_from_binary(numeric_bytes(0, 0, 0x0000, 0, {1})), std::nullopt);  // long
  EXPECT_EQ(numeric_from_binary(numeric_bytes(-1, 0, 0x0000, 0, {})), std::nullopt);
}

// ---------------------------------------------------------------------------
// floats

TEST(Float, ShortestExactTextInPostgresLayout) {
  EXPECT_EQ(format_float8(0.1), "0.1");
  EXPECT_EQ(format_float8(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_float8(1.0), "1");
  EXPECT_EQ(format_float8(-2.5), "-2.5");
  EXPECT_EQ(format_float8(1e14), "100000000000000");
  EXPECT_EQ(format_float8(1e15), "1e+15");
  EXPECT_EQ(format_float8(123456789012345680000.0), "1.2345678901234568e+20");
  EXPECT_EQ(format_float8(1e100), "1e+100");
  EXPECT_EQ(format_float8(0.0001), "0.0001");
  EXPECT_EQ(format_float8(0.00001), "1e-05");
  EXPECT_EQ(format_float8(5e-324), "5e-324");
  EXPECT_EQ(format_float8(0.0), "0");
  EXPECT_EQ(format_float8(-0.0), "-0");
}

TEST(Float, SpecialValues) {
  EXPECT_EQ(format_float8(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(format_float8(-std::numeric_limits<double>::infinity()), "-Infinity");
  EXPECT_EQ(format_float8(std::nan("")), "NaN");
}

TEST(Float, Float4UsesItsOwnThresholdAndDigits) {
  EXPECT_EQ(encode_ok(db::ValueView::float64(1.1), oid::kFloat4, 0), "1.1");
  EXPECT_EQ(encode_ok(db::ValueView::float64(123456), oid::kFloat4, 0), "123456");
  EXPECT_EQ(encode_ok(db::ValueView::float64(1234567), oid::kFloat4, 0), "1.234567e+06");
  EXPECT_EQ(encode_ok(db::ValueView::float64(0.000123456789), oid::kFloat4, 0), "0.00012345679");
}

TEST(Float, EveryPrintedDoubleReadsBackExactly) {
  for (double v : {0.1, 1.0 / 3, 2.0 / 3e-300, 6.02214076e23, -1.7976931348623157e308,
                   2.2250738585072014e-308, 4.9e-324, 1e21, 123.456}) {
    const auto text = format_float8(v);
    const db::Value back = decode_ok(text, oid::kFloat8, 0);
    EXPECT_EQ(back.f64, v) << text;
  }
}

// ---------------------------------------------------------------------------
// times

TEST(Time, DatesBefore2000And1970) {
  EXPECT_EQ(format_time(k2000, db::TimeForm::date), "2000-01-01");
  EXPECT_EQ(format_time(k2000 - kDay, db::TimeForm::date), "1999-12-31");
  EXPECT_EQ(format_time(-kDay, db::TimeForm::date), "1969-12-31");
  EXPECT_EQ(format_time(-1, db::TimeForm::date), "1969-12-31");
  EXPECT_EQ(format_time(-1, db::TimeForm::timestamptz), "1969-12-31 23:59:59.999999+00");
  EXPECT_EQ(format_time(0, db::TimeForm::timestamp), "1970-01-01 00:00:00");
}

TEST(Time, BcDatesAndWideYears) {
  // 0001-01-01 BC is proleptic year 0.
  const int64_t y0 = *parse_time("0001-01-01 BC");
  EXPECT_EQ(format_time(y0, db::TimeForm::date), "0001-01-01 BC");
  EXPECT_EQ(format_time(y0, db::TimeForm::timestamptz), "0001-01-01 00:00:00+00 BC");
  EXPECT_EQ(format_time(*parse_time("0044-03-15 BC"), db::TimeForm::date), "0044-03-15 BC");
  EXPECT_EQ(format_time(*parse_time("12345-06-07"), db::TimeForm::date), "12345-06-07");
}

TEST(Time, FractionTrailingZerosTrimmed) {
  const int64_t base = *parse_time("2024-01-02 03:04:05");
  EXPECT_EQ(format_time(base, db::TimeForm::timestamptz), "2024-01-02 03:04:05+00");
  EXPECT_EQ(format_time(base + 500000, db::TimeForm::timestamptz), "2024-01-02 03:04:05.5+00");
  EXPECT_EQ(format_time(base + 123456, db::TimeForm::timestamp), "2024-01-02 03:04:05.123456");
  EXPECT_EQ(format_time(base + 120, db::TimeForm::timestamp), "2024-01-02 03:04:05.00012");
}

TEST(Time, ExtremeMicrosecondsFormatAndParseBack) {
  for (int64_t micros : {INT64_MIN + 1, INT64_MAX - 1, int64_t(-62135596800000000)}) {
    const std::string text = format_time(micros, db::TimeForm::timestamptz);
    EXPECT_EQ(parse_time(text), micros) << text;
  }
  EXPECT_EQ(format_time(-62135596800000000, db::TimeForm::timestamptz), "0001-01-01 00:00:00+00");
}

TEST(Time, Infinities) {
  EXPECT_EQ(format_time(INT64_MAX, db::TimeForm::timestamptz), "infinity");
  EXPECT_EQ(format_time(INT64_MIN, db::TimeForm::date), "-infinity");
  EXPECT_EQ(parse_time("Infinity"), INT64_MAX);
  EXPECT_EQ(parse_time("-infinity"), INT64_MIN);
}

TEST(Time, ParseIsoFormsAndZones) {
  const int64_t t = 1704164645LL * 1000000;  // 2024-01-02 03:04:05 UTC
  EXPECT_EQ(parse_time("2024-01-02"), t - (3 * 3600 + 4 * 60 + 5) * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05"), t);
  EXPECT_EQ(parse_time(" 2024-01-02 03:04:05 "), t);
  EXPECT_EQ(parse_time("2024-01-02T03:04:05Z"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05+00"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05 UTC"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05.5"), t + 500000);
  EXPECT_EQ(parse_time("2024-01-02T03:04:05+02:00"), t - 2 * 3600 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05 +0530"), t - (5 * 3600 + 30 * 60) * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05-08"), t + 8 * 3600 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04"), t - 5 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05.1234567"), t + 123457);  // rounded
  EXPECT_EQ(parse_time("2024-01-02 24:00:00"), t - (3 * 3600 + 4 * 60 + 5) * 1000000LL + kDay);
  EXPECT_EQ(parse_time("2024-02-29"), parse_time("2024-03-01").value() - kDay);
}

TEST(Time, ParseRefusesInvalidDatesAndSyntax) {
  for (const char* bad :
       {"", "abc", "2024-13-01", "2024-00-10", "2024-02-30", "2023-02-29", "1900-02-29",
        "2024-01-02 25:00", "2024-01-02 24:00:01", "2024-01-02 03:60", "2024-01-02x",
        "2024-01-02 03:04:05+16", "2024-01-02 03:04:05.", "24-01-02", "2024-1-2 3:4",
        "2024-01-02 03:04:05 +053", "0000-01-01 BC", "now"}) {
    EXPECT_EQ(parse_time(bad), std::nullopt) << bad;
  }
}

TEST(Time, BinaryEpochIs2000) {
  const db::ValueView at2000 = db::ValueView::time(k2000);
  EXPECT_EQ(encode_ok(at2000, oid::kTimestamptz, 1), bytes_of(ByteBuilder().i64(0)));
  EXPECT_EQ(encode_ok(at2000, oid::kDate, 1), bytes_of(ByteBuilder().i32(0)));
  // Before 1970: still days and micros relative to 2000, rounded down for dates.
  const db::ValueView before = db::ValueView::time(-1);
  EXPECT_EQ(encode_ok(before, oid::kTimestamp, 1), bytes_of(ByteBuilder().i64(-k2000 - 1)));
  EXPECT_EQ(encode_ok(before, oid::kDate, 1), bytes_of(ByteBuilder().i32(-10958)));
  EXPECT_EQ(encode_ok(db::ValueView::time(INT64_MAX), oid::kDate, 1),
            bytes_of(ByteBuilder().i32(INT32_MAX)));
  EXPECT_EQ(encode_ok(db::ValueView::time(INT64_MIN), oid::kTimestamptz, 1),
            bytes_of(ByteBuilder().i64(INT64_MIN)));
}

// ---------------------------------------------------------------------------
// bool, bytea

TEST(Bool, PostgresSpellingsAreAccepted) {
  for (const char* t : {"t", "true", "TRUE", " yes ", "y", "on", "ON", "1", "tr"}) {
    EXPECT_TRUE(decode_ok(t, oid::kBool, 0).b) << t;
  }
  for (const char* f : {"f", "false", "False", "no", "n", "off", "of", "0", "\tfa\n"}) {
    EXPECT_FALSE(decode_ok(f, oid::kBool, 0).b) << f;
  }
  for (const char* bad : {"", "o", "truex", "2", "10", "maybe", "yess"}) {
    expect_decode_error(std::string_view(bad), oid::kBool, 0, "22P02");
  }
}

TEST(Bool, OutputIsTOrF) {
  EXPECT_EQ(encode_ok(db::ValueView::boolean(true), oid::kBool, 0), "t");
  EXPECT_EQ(encode_ok(db::ValueView::boolean(false), oid::kBool, 0), "f");
  EXPECT_EQ(encode_ok(db::ValueView::boolean(true), oid::kBool, 1), std::string("\1", 1));
}

TEST(Bytea, HexOutputAndBothInputFormats) {
  EXPECT_EQ(bytea_to_hex(std::string_view("\x00\xff\x10", 3)), "\\x00ff10");
  EXPECT_EQ(bytea_to_hex(""), "\\x");
  EXPECT_EQ(bytea_from_text("\\x00FF10"), std::string("\x00\xff\x10", 3));
  EXPECT_EQ(bytea_from_text("\\x 00 ff\n10"), std::string("\x00\xff\x10", 3));
  EXPECT_EQ(bytea_from_text("abc"), "abc");
  EXPECT_EQ(bytea_from_text("a\\\\b\\001\\377"), std::string("a\\b\x01\xff", 5));
  EXPECT_EQ(bytea_from_text(""), "");
}

TEST(Bytea, MalformedInputIsRefused) {
  for (const char* bad : {"\\x0", "\\xzz", "\\x0g", "\\", "a\\", "\\400", "\\08", "\\1"}) {
    EXPECT_EQ(bytea_from_text(bad), std::nullopt) << bad;
  }
}

TEST(Bytea, ValuesEncodeAsHexTextOrRawBinary) {
  const auto v = db::ValueView::bytes(std::string_view("\x01\x02", 2));
  EXPECT_EQ(encode_ok(v, oid::kBytea, 0), "\\x0102");
  EXPECT_EQ(encode_ok(v, oid::kBytea, 1), std::string("\x01\x02", 2));
  // Text into bytea binary is read as bytea input, as the text format would be.
  EXPECT_EQ(encode_ok(db::ValueView::text("\\x41"), oid::kBytea, 1), "A");
}

// ---------------------------------------------------------------------------
// encode_value conversions

TEST(EncodeValue, IntegerToOtherTypes) {
  const auto v = db::ValueView::int64(42);
  EXPECT_EQ(encode_ok(v, oid::kInt8, 0), "42");
  EXPECT_EQ(encode_ok(v, oid::kFloat8, 0), "42");
  EXPECT_EQ(encode_ok(v, oid::kNumeric, 0), "42");
  EXPECT_EQ(encode_ok(v, oid::kText, 0), "42");
  EXPECT_EQ(encode_ok(v, oid::kInt4, 1), bytes_of(ByteBuilder().i32(42)));
  EXPECT_EQ(encode_ok(v, oid::kInt2, 1), bytes_of(ByteBuilder().i16(42)));
  EXPECT_EQ(encode_ok(v, oid::kInt8, 1), bytes_of(ByteBuilder().i64(42)));
  EXPECT_EQ(encode_ok(v, oid::kFloat8, 1), bytes_of(ByteBuilder().i64(0x4045000000000000)));
  EXPECT_EQ(encode_ok(v, oid::kNumeric, 1), numeric_bytes(1, 0, 0, 0, {42}));
  EXPECT_EQ(encode_ok(db::ValueView::int64(INT64_MIN), oid::kInt8, 0), "-9223372036854775808");
}

TEST(EncodeValue, TextParsesIntoTheTargetType) {
  EXPECT_EQ(encode_ok(db::ValueView::text("12"), oid::kInt8, 1), bytes_of(ByteBuilder().i64(12)));
  EXPECT_EQ(encode_ok(db::ValueView::text(" -7 "), oid::kInt4, 1), bytes_of(ByteBuilder().i32(-7)));
  EXPECT_EQ(encode_ok(db::ValueView::text("1.50"), oid::kNumeric, 1),
            numeric_bytes(2, 0, 0, 2, {1, 5000}));
  EXPECT_NE(encode_error(db::ValueView::text("abc"), oid::kInt8, 1).find("\"abc\""),
            std::string::npos);
  EXPECT_FALSE(encode_error(db::ValueView::text("12.5"), oid::kInt8, 1).empty());
}

TEST(EncodeValue, TextInTextFormatPassesThroughWhateverTheType) {
  EXPECT_EQ(encode_ok(db::ValueView::text("not a bool"), oid::kBool, 0), "not a bool");
  EXPECT_EQ(encode_ok(db::ValueView::text("x"), oid::kInt4, 0), "x");
}

TEST(EncodeValue, BoolToIntegerAndText) {
  EXPECT_EQ(encode_ok(db::ValueView::boolean(true), oid::kInt4, 0), "1");
  EXPECT_EQ(encode_ok(db::ValueView::boolean(false), oid::kInt8, 1),
            bytes_of(ByteBuilder().i64(0)));
  EXPECT_EQ(encode_ok(db::ValueView::boolean(true), oid::kText, 0), "true");
  EXPECT_EQ(encode_ok(db::ValueView::int64(5), oid::kBool, 0), "t");
}

TEST(EncodeValue, UnsignedToNumericAndRangeChecked) {
  const auto max = db::ValueView::uint64(UINT64_MAX);
  EXPECT_EQ(encode_ok(max, oid::kNumeric, 0), "18446744073709551615");
  EXPECT_EQ(numeric_from_binary(encode_ok(max, oid::kNumeric, 1)), "18446744073709551615");
  EXPECT_NE(encode_error(max, oid::kInt8, 0).find("out of range for type bigint"),
            std::string::npos);
}

TEST(EncodeValue, OutOfRangeIntegersAreErrors) {
  EXPECT_NE(encode_error(db::ValueView::int64(70000), oid::kInt2, 0).find("smallint"),
            std::string::npos);
  EXPECT_FALSE(encode_error(db::ValueView::int64(int64_t(1) << 40), oid::kInt4, 1).empty());
  EXPECT_FALSE(encode_error(db::ValueView::int64(-1), oid::kOid, 1).empty());
  EXPECT_FALSE(encode_error(db::ValueView::float64(1e19), oid::kInt8, 0).empty());
  EXPECT_FALSE(encode_error(db::ValueView::float64(std::nan("")), oid::kInt8, 0).empty());
  EXPECT_FALSE(encode_error(db::ValueView::decimal("9223372036854775808"), oid::kInt8, 0).empty());
  EXPECT_FALSE(encode_error(db::ValueView::float64(1e300), oid::kFloat4, 0).empty());
  EXPECT_FALSE(encode_error(db::ValueView::float64(1e-300), oid::kFloat4, 1).empty());
}

TEST(EncodeValue, FloatAndNumericRoundToIntegersLikePostgres) {
  // float8 -> int rounds half to even; numeric -> int rounds half away from zero.
  EXPECT_EQ(encode_ok(db::ValueView::float64(2.5), oid::kInt4, 0), "2");
  EXPECT_EQ(encode_ok(db::ValueView::float64(3.5), oid::kInt4, 0), "4");
  EXPECT_EQ(encode_ok(db::ValueView::decimal("2.5"), oid::kInt4, 0), "3");
  EXPECT_EQ(encode_ok(db::ValueView::decimal("-2.5"), oid::kInt4, 0), "-3");
  EXPECT_EQ(encode_ok(db::ValueView::decimal("-9223372036854775808"), oid::kInt8, 0),
            "-9223372036854775808");
}

TEST(EncodeValue, FloatToNumericKeepsFifteenDigits) {
  EXPECT_EQ(encode_ok(db::ValueView::float64(0.1 + 0.2), oid::kNumeric, 0), "0.3");
  EXPECT_EQ(encode_ok(db::ValueView::float64(1e-30), oid::kNumeric, 0),
            "0.000000000000000000000000000001");
  EXPECT_EQ(encode_ok(db::ValueView::float64(std::nan("")), oid::kNumeric, 0), "NaN");
}

TEST(EncodeValue, DecimalIsNormalisedButKeepsScale) {
  EXPECT_EQ(encode_ok(db::ValueView::decimal("-0.000100"), oid::kNumeric, 0), "-0.000100");
  EXPECT_EQ(encode_ok(db::ValueView::decimal("+01.10"), oid::kNumeric, 0), "1.10");
  EXPECT_EQ(encode_ok(db::ValueView::decimal("-0.000100"), oid::kNumeric, 1),
            numeric_bytes(1, -1, 0x4000, 6, {1}));
  EXPECT_EQ(encode_ok(db::ValueView::decimal("2.50"), oid::kFloat8, 0), "2.5");
  EXPECT_FALSE(encode_error(db::ValueView::decimal("junk"), oid::kNumeric, 1).empty());
}

TEST(EncodeValue, TimeAsDateTimestampAndText) {
  const auto v = db::ValueView::time(*parse_time("2024-01-02 03:04:05.25"));
  EXPECT_EQ(encode_ok(v, oid::kDate, 0), "2024-01-02");
  EXPECT_EQ(encode_ok(v, oid::kTimestamp, 0), "2024-01-02 03:04:05.25");
  EXPECT_EQ(encode_ok(v, oid::kTimestamptz, 0), "2024-01-02 03:04:05.25+00");
  EXPECT_EQ(encode_ok(v, oid::kText, 0), "2024-01-02 03:04:05.25+00");
  EXPECT_EQ(encode_ok(db::ValueView::text("2024-01-02"), oid::kDate, 1),
            bytes_of(ByteBuilder().i32(8767)));
  EXPECT_FALSE(encode_error(db::ValueView::int64(1), oid::kTimestamptz, 1).empty());
}

TEST(EncodeValue, TextLikeTypesAndPassthroughs) {
  EXPECT_EQ(encode_ok(db::ValueView::text("héllo"), oid::kVarchar, 1), "héllo");
  EXPECT_EQ(encode_ok(db::ValueView::text("{\"a\":1}"), oid::kJsonb, 1), "\1{\"a\":1}");
  EXPECT_EQ(encode_ok(db::ValueView::text("{\"a\":1}"), oid::kJson, 1), "{\"a\":1}");
  const std::string uuid_bin =
      encode_ok(db::ValueView::text("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), oid::kUuid, 1);
  ASSERT_EQ(uuid_bin.size(), 16u);
  EXPECT_EQ(static_cast<uint8_t>(uuid_bin[0]), 0xa0);
  EXPECT_FALSE(encode_error(db::ValueView::text("not-a-uuid"), oid::kUuid, 1).empty());
  EXPECT_EQ(encode_ok(db::ValueView::float64(1.5), oid::kText, 0), "1.5");
  EXPECT_EQ(encode_ok(db::ValueView::bytes("A"), oid::kText, 0), "\\x41");
  // An OID this file has no binary form for: text works, binary is an error.
  EXPECT_EQ(encode_ok(db::ValueView::int64(3), 1007, 0), "3");
  EXPECT_FALSE(encode_error(db::ValueView::int64(3), 1007, 1).empty());
}

TEST(EncodeValue, NullAndBadFormatAreRefused) {
  EXPECT_FALSE(encode_error(db::ValueView::null(), oid::kText, 0).empty());
  EXPECT_FALSE(encode_error(db::ValueView::int64(1), oid::kInt4, 2).empty());
}

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
