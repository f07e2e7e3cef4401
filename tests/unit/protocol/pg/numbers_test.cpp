// Floats and booleans in PostgreSQL's text forms (protocol/pg/numbers.hpp).
//
// Cases: shortest exact float text with PostgreSQL's fixed/exponent layout
// (float8 and float4 thresholds), Infinity/-Infinity/NaN, -0; bool input
// spellings and output.

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
// bool

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

}  // namespace
}  // namespace wirepool::pg
