// numeric's text and binary forms (protocol/pg/numeric.hpp).
//
// Cases: binary layout of 0, -0.000100 (scale kept), 1e-30, 12345.678,
// 99999999999999999999.99, 1000000, NaN and infinities, both directions;
// digits hidden by dscale dropped; invalid sign, digit, dscale and size
// refused; text normalisation (exponents, leading zeros, "-0.00").

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

}  // namespace
}  // namespace wirepool::pg
