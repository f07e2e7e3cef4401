// The test-only planted-defect switch (issue 7) of the token decoder: an
// NBCROW from bytes written by hand ([MS-TDS] 2.2.7.17: bit i of the null
// bitmap, least significant first, is column i) decodes right by default and
// wrong with the bitmap read from its high bit; the switch resets.

#include <gtest/gtest.h>

#include "protocol/tds/codec.hpp"

namespace wirepool::tds {
namespace {

/// COLMETADATA with two INT4 columns a, b, then NBCROW (NULL, 5).
std::string nbcrow_stream() {
  std::string s;
  s += static_cast<char>(token::kColMetadata);
  s += std::string("\x02\x00", 2);  // 2 columns
  for (char name : {'a', 'b'}) {
    s += std::string("\x00\x00\x00\x00", 4);  // user type
    s += std::string("\x00\x00", 2);          // flags
    s += static_cast<char>(type::kInt4);
    s += '\x01';  // name length (characters)
    s += name;
    s += '\x00';
  }
  s += static_cast<char>(token::kNbcRow);
  s += '\x01';  // null bitmap: column 0 is NULL
  s += std::string("\x05\x00\x00\x00", 4);
  return s;
}

Decoded<Token> decode_row(const std::string& stream) {
  TokenDecoder d;
  auto bytes = as_bytes(stream);
  auto meta = d.next(bytes);
  EXPECT_EQ(meta.status, DecodeStatus::ok);
  return d.next(bytes.subspan(meta.consumed));
}

TEST(TdsPlantedDefect, NbcrowBitmapIsReadFromTheLowBit) {
  set_planted_defect_for_test(PlantedDefect::none);
  auto r = decode_row(nbcrow_stream());
  ASSERT_EQ(r.status, DecodeStatus::ok);
  const auto& row = std::get<Row>(r.message);
  ASSERT_EQ(row.values.size(), 2u);
  EXPECT_TRUE(row.values[0].value.is_null());
  EXPECT_EQ(row.values[1].value.i64, 5);
}

TEST(TdsPlantedDefect, TheWrongEndDecodesDifferently) {
  set_planted_defect_for_test(PlantedDefect::nbcrow_bitmap_wrong_end);
  auto r = decode_row(nbcrow_stream());
  set_planted_defect_for_test(PlantedDefect::none);
  const bool same = r.status == DecodeStatus::ok &&
                    std::get<Row>(r.message).values[0].value.is_null() &&
                    std::get<Row>(r.message).values[1].value.i64 == 5;
  EXPECT_FALSE(same);
  EXPECT_EQ(planted_defect(), PlantedDefect::none);
  EXPECT_EQ(planted_defect_from_name("brackets"), PlantedDefect::marker_in_brackets);
  EXPECT_EQ(planted_defect_from_name("anything"), PlantedDefect::none);
}

}  // namespace
}  // namespace wirepool::tds
