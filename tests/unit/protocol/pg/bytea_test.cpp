// bytea's text forms (protocol/pg/bytea.hpp).
//
// Cases: hex output, hex and escape input, malformed input refused; bytea
// values encoded as hex text or raw binary.

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
// bytea

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

}  // namespace
}  // namespace wirepool::pg
