// What every client connection shares: the user names an auth.mode
// passthrough database passes to the backend as role names.
//
// Cases: a name of 63 bytes passes, 64 is refused (PostgreSQL would cut it to
// another role's name); UTF-8 passes, invalid UTF-8 and control characters
// (a newline would forge a log line) are refused, each with its reason.

#include <gtest/gtest.h>

#include <string>

#include "server/client_connection.hpp"

namespace wirepool::server {
namespace {

TEST(PassthroughUserRefusal, RoleNamesPassOthersAreRefusedWithTheirReason) {
  EXPECT_EQ(passthrough_user_refusal("pt_ann"), std::nullopt);
  EXPECT_EQ(passthrough_user_refusal("ünïcødé rôle"), std::nullopt);
  EXPECT_EQ(passthrough_user_refusal(std::string(63, 'u')), std::nullopt);
  EXPECT_EQ(passthrough_user_refusal(std::string(64, 'u')),
            "the user name is longer than 63 bytes");
  EXPECT_EQ(passthrough_user_refusal(std::string(10000, 'u')),
            "the user name is longer than 63 bytes");
  EXPECT_EQ(passthrough_user_refusal("pt_\xff\xfe"), "the user name is not valid UTF-8");
  EXPECT_EQ(passthrough_user_refusal(std::string("a\0b", 3)),
            "the user name is not valid UTF-8");  // valid_utf8 refuses NUL
  EXPECT_EQ(passthrough_user_refusal("ann\nforged"), "the user name holds a control character");
  EXPECT_EQ(passthrough_user_refusal("ann\x7f"), "the user name holds a control character");
}

}  // namespace
}  // namespace wirepool::server
