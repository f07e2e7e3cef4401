// JSON log lines are valid JSON strings (connection strings are redacted by
// each driver's parser: tests/unit/backends/*).
//
// Cases: json_escape escapes quotes, backslashes and control characters; log_escape
// and json_escape turn C0, DEL, C1, U+2028/U+2029 and every byte outside
// well-formed UTF-8 (stray continuation, truncated sequence, overlong form,
// surrogate, above U+10FFFF) into escapes, and keep other UTF-8 as it is.

#include "server/log.hpp"

#include <gtest/gtest.h>

namespace wirepool::server {
namespace {

TEST(JsonEscape, EscapesWhatJsonRequires) {
  std::string out;
  json_escape("a\"b\\c\nd\te\x01", out);
  EXPECT_EQ(out, "a\\\"b\\\\c\\nd\\te\\u0001");
}

TEST(JsonEscape, ControlAndInvalidUtf8BecomeEscapes) {
  std::string out;
  json_escape("\x1b[31m\x7f\xc2\x9b\xe2\x80\xa8|\xff|\xc3", out);
  EXPECT_EQ(out, "\\u001b[31m\\u007f\\u009b\\u2028|\\\\xff|\\\\xc3");
}

std::string log_escaped(std::string_view s) {
  std::string out;
  log_escape(s, out);
  return out;
}

TEST(LogEscape, NewlinesAndTerminalEscapesCannotReachTheLine) {
  EXPECT_EQ(log_escaped("ops\n2030-01-01 info forged\r\t\x1b[31m\x07\x7f"),
            "ops\\n2030-01-01 info forged\\r\\t\\x1b[31m\\x07\\x7f");
  EXPECT_EQ(log_escaped("\xc2\x9b"
                        "31m\xe2\x80\xa8\xe2\x80\xa9"),
            "\\u009b31m\\u2028\\u2029");
}

TEST(LogEscape, InvalidUtf8BytesBecomeHex) {
  EXPECT_EQ(log_escaped("a\xff"), "a\\xff");
  EXPECT_EQ(log_escaped("\x80"), "\\x80");                             // stray continuation byte
  EXPECT_EQ(log_escaped("\xe2\x82"), "\\xe2\\x82");                    // truncated sequence
  EXPECT_EQ(log_escaped("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(log_escaped("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate U+D800
  EXPECT_EQ(log_escaped("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(LogEscape, WellFormedTextIsUnchanged) {
  for (const char* s : {"plain ascii \"quoted\" back\\slash",
                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xc2\xa0nbsp", ""}) {
    EXPECT_EQ(log_escaped(s), s);
  }
}

}  // namespace
}  // namespace wirepool::server
