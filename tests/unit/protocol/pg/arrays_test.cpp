// Arrays' text form turned into the binary form (protocol/pg/arrays.hpp).
//
// Cases: one-dimensional int4[] with a NULL; an empty array; two dimensions
// of text with quoted elements, escapes, spaces and the quoted string "NULL"
// (a string, not NULL); explicit lower bounds ("[0:1]={7,8}"); elements as
// each element type's binary form (int8, bool, float8, uuid); malformed text
// (unbalanced braces, uneven sub-arrays, junk after the array, a bad element,
// bounds that do not match) refused with `out` unchanged; non-array OIDs.

#include <gtest/gtest.h>

#include <string>

#include "protocol/pg/arrays.hpp"

namespace wirepool::pg {
namespace {

std::string i32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
          static_cast<char>(u)};
}

std::string binary(std::string_view text, uint32_t oid) {
  std::string out, why;
  EXPECT_TRUE(array_text_to_binary(text, oid, out, &why)) << text << ": " << why;
  return out;
}

TEST(PgArrays, OneDimensionWithNull) {
  EXPECT_EQ(binary("{1,NULL,-3}", 1007), i32(1) + i32(1) + i32(23) + i32(3) + i32(1) + i32(4) +
                                             i32(1) + i32(-1) + i32(4) + i32(-3));
}

TEST(PgArrays, Empty) {
  EXPECT_EQ(binary("{}", 1009), i32(0) + i32(0) + i32(25));
}

TEST(PgArrays, TwoDimensionsOfQuotedText) {
  const std::string got = binary(R"({{a,"b c"},{"NULL", "x\"y\\z" }})", 1009);
  const std::string want = i32(2) + i32(0) + i32(25) + i32(2) + i32(1) + i32(2) + i32(1) + i32(1) +
                           "a" + i32(3) + "b c" + i32(4) + "NULL" + i32(5) + "x\"y\\z";
  EXPECT_EQ(got, want);
}

TEST(PgArrays, LowerBounds) {
  EXPECT_EQ(binary("[0:1]={7,8}", 1005), i32(1) + i32(0) + i32(21) + i32(2) + i32(0) + i32(2) +
                                             std::string("\0\7", 2) + i32(2) +
                                             std::string("\0\x08", 2));
}

TEST(PgArrays, ElementsInTheirBinaryForm) {
  const std::string i8 = binary("{5}", 1016);
  EXPECT_EQ(i8.substr(20), i32(8) + std::string(7, '\0') + "\x05");
  EXPECT_EQ(binary("{t,f}", 1000).substr(20), i32(1) + "\x01" + i32(1) + std::string(1, '\0'));
  EXPECT_EQ(binary("{1.5}", 1022).substr(20), i32(8) + std::string("\x3f\xf8\0\0\0\0\0\0", 8));
  EXPECT_EQ(binary("{11111111-2222-3333-4444-555555555555}", 2951).substr(20, 4), i32(16));
}

TEST(PgArrays, MalformedIsRefusedAndOutIsUnchanged) {
  for (std::string_view bad : {"{1,2", "1,2}", "{{1,2},{3}}", "{1,2} x", "{1,x}", "[1:3]={1,2}",
                               "{{1},2}", "{,1}", R"({"a)"}) {
    std::string out = "keep", why;
    EXPECT_FALSE(array_text_to_binary(bad, 1007, out, &why)) << bad;
    EXPECT_EQ(out, "keep") << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(PgArrays, OnlyKnownArrayTypes) {
  EXPECT_EQ(array_element(1007), 23u);
  EXPECT_FALSE(array_element(23).has_value());
  std::string out, why;
  EXPECT_FALSE(array_text_to_binary("{1}", 23, out, &why));
}

}  // namespace
}  // namespace wirepool::pg
