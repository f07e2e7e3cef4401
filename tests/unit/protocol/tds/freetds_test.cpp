// A third real client: FreeTDS 1.3.17 (`tsql`, TDS 7.4): its captured
// PRELOGIN, LOGIN7 (its own option flags, no FeatureExt ack needed) and SQL
// batch decode.

#include <gtest/gtest.h>

#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::bytes_of;
using test::capture_message;

TEST(TdsFreeTds, DecodesPreloginLoginAndBatch) {
  auto p = decode_prelogin(bytes_of(capture_message("freetds_00_prelogin.hex").payload));
  ASSERT_EQ(p.status, DecodeStatus::ok) << p.error;
  ASSERT_TRUE(p.message.version);
  ASSERT_TRUE(p.message.encryption);
  auto l = decode_login7(bytes_of(capture_message("freetds_01_login7.hex").payload));
  ASSERT_EQ(l.status, DecodeStatus::ok) << l.error;
  EXPECT_EQ(l.message.tds_version, kTds74);
  EXPECT_EQ(l.message.user_name, "demo");
  EXPECT_EQ(l.message.password, "Pässwörd!1");
  EXPECT_EQ(l.message.database, "demo");
  EXPECT_FALSE(l.message.integrated_security());
  auto b = decode_sql_batch(bytes_of(capture_message("freetds_02_sqlbatch.hex").payload));
  ASSERT_EQ(b.status, DecodeStatus::ok) << b.error;
  EXPECT_EQ(b.message.sql, "SELECT N'héllo'\n");
}

}  // namespace
}  // namespace wirepool::tds
