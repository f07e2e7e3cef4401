// A second real client: pytds 1.8.2's captured PRELOGIN, LOGIN7, SQL batch,
// transaction manager requests and a typed sp_executesql (its own TYPE_INFO
// choices: DATETIME2, DATE, BIGVARBINARY, DECIMALN at its own precision, a NULL
// parameter) decoded value by value.

#include <gtest/gtest.h>

#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::bytes_of;
using test::capture_message;

TEST(TdsPytds, DecodesPreloginLoginAndBatch) {
  auto p = decode_prelogin(bytes_of(capture_message("pytds_00_prelogin.hex").payload));
  ASSERT_EQ(p.status, DecodeStatus::ok) << p.error;
  ASSERT_TRUE(p.message.version);
  auto l = decode_login7(bytes_of(capture_message("pytds_01_login7.hex").payload));
  ASSERT_EQ(l.status, DecodeStatus::ok) << l.error;
  EXPECT_EQ(l.message.user_name, "demo");
  EXPECT_EQ(l.message.password, "Pässwörd!1");
  EXPECT_EQ(l.message.database, "demo");
  EXPECT_EQ(l.message.app_name, "capture");
  EXPECT_FALSE(l.message.integrated_security());
  auto b = decode_sql_batch(bytes_of(capture_message("pytds_02_sqlbatch.hex").payload));
  ASSERT_EQ(b.status, DecodeStatus::ok) << b.error;
  EXPECT_EQ(b.message.sql, "use [demo]");
}

TEST(TdsPytds, DecodesTransactionRequests) {
  auto begin = decode_transaction_request(bytes_of(capture_message("pytds_03_txmgr.hex").payload));
  ASSERT_EQ(begin.status, DecodeStatus::ok) << begin.error;
  EXPECT_EQ(begin.message.request, tm::kBeginXact);
  EXPECT_EQ(begin.message.name, "");
  auto commit = decode_transaction_request(bytes_of(capture_message("pytds_05_txmgr.hex").payload));
  ASSERT_EQ(commit.status, DecodeStatus::ok) << commit.error;
  EXPECT_EQ(commit.message.headers.transaction_descriptor, 1u);
}

TEST(TdsPytds, DecodesTypedRpc) {
  auto d = decode_rpc(bytes_of(capture_message("pytds_04_rpc.hex").payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  const auto& p = d.message.params;
  EXPECT_EQ(d.message.proc_id, proc::kExecuteSql);
  // The statement and its declaration are positional (no names); pytds
  // inlines None as NULL in the text.
  ASSERT_EQ(p.size(), 12u);
  EXPECT_EQ(p[0].name, "");
  EXPECT_EQ(p[0].value.value.str, "SELECT @P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10, NULL");
  EXPECT_NE(p[1].value.value.str.find("@P5 DATETIME2(6)"), std::string::npos);
  EXPECT_EQ(p[2].name, "@P1");
  EXPECT_EQ(p[2].value.value.i64, -123456);
  EXPECT_EQ(p[3].value.type.max_length, 8u);
  EXPECT_EQ(p[3].value.value.i64, 1099511627776);
  EXPECT_EQ(p[4].value.value.str, "straße 😀");
  EXPECT_TRUE(p[4].value.type.plp());  // NVARCHAR(MAX)
  EXPECT_EQ(p[5].value.type.precision, 8);
  EXPECT_EQ(p[5].value.value.str, "-12345.678");
  EXPECT_EQ(p[6].value.type.type, type::kDateTime2N);
  EXPECT_EQ(p[6].value.type.scale, 6);
  EXPECT_EQ(p[6].value.value.micros, 1709212455678901);  // 2024-02-29T13:14:15.678901
  EXPECT_EQ(p[7].value.type.type, type::kDateN);
  EXPECT_EQ(p[7].value.time_form, db::TimeForm::date);
  EXPECT_EQ(p[7].value.value.micros, 1709164800000000);  // 2024-02-29
  EXPECT_EQ(p[8].value.type.type, type::kBigVarBinary);
  EXPECT_EQ(p[8].value.value.kind, db::Kind::Bytes);
  EXPECT_EQ(p[8].value.value.str, std::string("\xde\xad\xbe\xef\x00", 5));
  EXPECT_TRUE(p[9].value.value.b);
  EXPECT_EQ(p[10].value.value.str, "6F9619FF-8B86-D011-B42D-00C04FC964FF");
  EXPECT_EQ(p[11].value.value.kind, db::Kind::F64);
  EXPECT_DOUBLE_EQ(p[11].value.value.f64, 3.5e-7);
}

}  // namespace
}  // namespace wirepool::tds
