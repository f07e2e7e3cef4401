// Values between db::Value and PostgreSQL's wire types (protocol/pg/types.hpp).
//
// Cases:
// - wire_type_for: every Kind, numeric typmod from precision/scale, Time by
//   time_form, parameters of unknown kind as text;
// - encode_value conversions as PostgreSQL casts them (I64 -> float8/numeric/
//   text, Text -> int8, Bool -> int, U64 -> numeric, float8 -> int rounding,
//   numeric -> int rounding), out-of-range errors leaving `out` unchanged,
//   Text passed through in text format, NULL refused.

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

TEST(WireType, VarcharAndCharWithTheirLengthHaveTypmod) {
  db::Column c;
  c.kind = db::Kind::Text;
  c.native.length = 40;
  for (const char* name :
       {"VARCHAR", "varchar", "VARCHAR(40)", "NVARCHAR", "WVARCHAR", "character varying"}) {
    c.native.name = name;
    EXPECT_EQ(wire_type_for(c).oid, oid::kVarchar) << name;
    EXPECT_EQ(wire_type_for(c).modifier, 44) << name;  // n + VARHDRSZ
  }
  for (const char* name :
       {"CHAR", "char(40)", "NCHAR", "nchar(40)", "WCHAR", "character", "bpchar"}) {
    c.native.name = name;  // fixed length: bpchar, as PostgreSQL describes CHAR(n)
    EXPECT_EQ(wire_type_for(c).oid, oid::kBpchar) << name;
    EXPECT_EQ(wire_type_for(c).modifier, 44) << name;
  }
  c.native.name = "CLOB";
  EXPECT_EQ(wire_type_for(c).oid, oid::kText);
  c.native.name = "TIME";  // ODBC's times arrive as text
  EXPECT_EQ(wire_type_for(c).oid, oid::kText);
  for (const char* name : {"VARCHAR", "CHAR"}) {
    c.native.name = name;
    c.native.length = -1;  // the driver does not know n
    EXPECT_EQ(wire_type_for(c).oid, oid::kText) << name;
    EXPECT_EQ(wire_type_for(c).modifier, -1) << name;
  }
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

}  // namespace
}  // namespace wirepool::pg
