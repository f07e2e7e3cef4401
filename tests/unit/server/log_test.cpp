// JSON log lines are valid JSON strings (connection strings are redacted by
// each driver's parser: tests/unit/backends/*).
//
// Cases: json_escape escapes quotes, backslashes and control characters.

#include "server/log.hpp"

#include <gtest/gtest.h>

namespace wirepool::server {
namespace {

TEST(JsonEscape, EscapesWhatJsonRequires) {
  std::string out;
  json_escape("a\"b\\c\nd\te\x01", out);
  EXPECT_EQ(out, "a\\\"b\\\\c\\nd\\te\\u0001");
}

}  // namespace
}  // namespace wirepool::server
