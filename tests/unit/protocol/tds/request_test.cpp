// Client requests: tedious's captured SQL batch, sp_executesql RPCs (int,
// nvarchar, decimal, datetime2, varbinary, bit, uniqueidentifier, float; all
// NULL; an NVARCHAR(MAX) PLP parameter spanning packets) and transaction
// manager BEGIN/COMMIT decoded value by value; encoders round-tripped;
// ALL_HEADERS variants; malformed requests (every truncation, odd UCS-2,
// unpaired surrogates, batched RPCs, unknown types) giving errors.

#include <gtest/gtest.h>

#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::bytes_of;
using test::capture_message;

TEST(TdsSqlBatch, DecodesTediousBatch) {
  const Message m = capture_message("02_sqlbatch.hex");
  auto d = decode_sql_batch(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_TRUE(d.message.headers.has_transaction_descriptor);
  EXPECT_EQ(d.message.headers.transaction_descriptor, 0u);
  EXPECT_EQ(d.message.headers.outstanding_requests, 1u);
  EXPECT_EQ(d.message.sql.rfind("set ansi_nulls on\n", 0), 0u);
  EXPECT_NE(d.message.sql.find("set xact_abort off"), std::string::npos);
}

TEST(TdsSqlBatch, RoundTripAndBadText) {
  std::string out;
  ASSERT_TRUE(encode_sql_batch(out, "SELECT N'😀 é'", 0x1122334455667788ULL));
  auto d = decode_sql_batch(bytes_of(out));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(d.message.sql, "SELECT N'😀 é'");
  EXPECT_EQ(d.message.headers.transaction_descriptor, 0x1122334455667788ULL);
  std::string odd = out + "x";
  EXPECT_NE(decode_sql_batch(bytes_of(odd)).error.find("odd length"), std::string::npos);
  std::string lone = out + std::string("\x00\xDC", 2);
  EXPECT_NE(decode_sql_batch(bytes_of(lone)).error.find("surrogate"), std::string::npos);
  EXPECT_FALSE(encode_sql_batch(out, "\xff"));
}

TEST(TdsAllHeaders, ToleratesNotificationAndTraceHeaders) {
  std::string h;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      h.push_back(static_cast<char>(v >> (8 * i)));
  };
  auto u16 = [&](uint16_t v) {
    h.push_back(static_cast<char>(v));
    h.push_back(static_cast<char>(v >> 8));
  };
  u32(4 + 18 + 26 + 8);
  u32(18), u16(2), u32(7), u32(0), u32(3);  // descriptor 7, 3 outstanding
  u32(26), u16(3), h.append(20, 'a');       // trace activity
  u32(8), u16(1), u16(0);                   // query notification (empty)
  auto d = decode_all_headers(bytes_of(h));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(d.message.transaction_descriptor, 7u);
  EXPECT_EQ(d.message.outstanding_requests, 3u);
  EXPECT_TRUE(d.message.has_trace_activity);
  EXPECT_TRUE(d.message.has_query_notification);
  std::string bad = h;
  bad[0] = 100;  // total beyond the request
  EXPECT_EQ(decode_all_headers(bytes_of(bad)).status, DecodeStatus::error);
  bad = h;
  bad[8] = 9;  // header type 9
  EXPECT_EQ(decode_all_headers(bytes_of(bad)).status, DecodeStatus::error);
}

TEST(TdsRpc, DecodesTediousSpExecuteSqlWithTypedParams) {
  const Message m = capture_message("04_rpc.hex");
  auto d = decode_rpc(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  const RpcRequest& r = d.message;
  EXPECT_EQ(r.proc_id, proc::kExecuteSql);
  EXPECT_EQ(proc_name(r.proc_id), "sp_executesql");
  ASSERT_EQ(r.params.size(), 10u);
  EXPECT_EQ(r.params[0].name, "@statement");
  EXPECT_EQ(r.params[0].value.value.str, "SELECT @i, @s, @d, @t, @b, @bit, @g, @f");
  EXPECT_EQ(r.params[1].name, "@params");
  EXPECT_NE(r.params[1].value.value.str.find("@d decimal(12, 3)"), std::string::npos);
  const auto& v = r.params;
  EXPECT_EQ(v[2].name, "@i");
  EXPECT_EQ(v[2].value.type.type, type::kIntN);
  EXPECT_EQ(v[2].value.value.kind, db::Kind::I64);
  EXPECT_EQ(v[2].value.value.i64, -123456);
  EXPECT_EQ(v[3].value.type.type, type::kNVarChar);
  EXPECT_EQ(v[3].value.value.str, "straße 😀");
  EXPECT_EQ(v[4].value.type.type, type::kDecimalN);
  EXPECT_EQ(v[4].value.type.precision, 12);
  EXPECT_EQ(v[4].value.type.scale, 3);
  EXPECT_EQ(v[4].value.value.kind, db::Kind::Decimal);
  EXPECT_EQ(v[4].value.value.str, "-12345.678");
  EXPECT_EQ(v[5].value.type.type, type::kDateTime2N);
  EXPECT_EQ(v[5].value.type.scale, 7);
  EXPECT_EQ(v[5].value.value.kind, db::Kind::Time);
  EXPECT_EQ(v[5].value.value.micros, 1709212455678000);  // 2024-02-29T13:14:15.678Z
  EXPECT_EQ(v[6].value.type.type, type::kBigVarBinary);
  EXPECT_EQ(v[6].value.value.kind, db::Kind::Bytes);
  EXPECT_EQ(v[6].value.value.str, std::string("\xde\xad\xbe\xef\x00", 5));
  EXPECT_EQ(v[7].value.value.kind, db::Kind::Bool);
  EXPECT_TRUE(v[7].value.value.b);
  EXPECT_EQ(v[8].value.type.type, type::kGuid);
  EXPECT_EQ(v[8].value.value.str, "6F9619FF-8B86-D011-B42D-00C04FC964FF");
  EXPECT_EQ(v[9].value.type.type, type::kFltN);
  EXPECT_EQ(v[9].value.value.kind, db::Kind::F64);
  EXPECT_DOUBLE_EQ(v[9].value.value.f64, 3.5e-7);
}

TEST(TdsRpc, DecodesNullsOfEveryCapturedType) {
  const Message m = capture_message("05_rpc.hex");
  auto d = decode_rpc(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  ASSERT_EQ(d.message.params.size(), 10u);
  for (size_t i = 2; i < 10; ++i) {
    EXPECT_TRUE(d.message.params[i].value.value.is_null()) << d.message.params[i].name;
  }
}

TEST(TdsRpc, DecodesPlpParameterAcrossPackets) {
  const Message m = capture_message("06_rpc.hex");
  auto d = decode_rpc(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  ASSERT_EQ(d.message.params.size(), 3u);
  const auto& big = d.message.params[2].value;
  EXPECT_TRUE(big.type.plp());
  std::string want;
  for (int i = 0; i < 1700; ++i)
    want += "ab€";
  EXPECT_EQ(big.value.str, want);
  // A cap below the value's size is an error, not growth.
  auto capped = decode_rpc(bytes_of(m.payload), Limits{.max_value = 1000});
  EXPECT_EQ(capped.status, DecodeStatus::error);
  EXPECT_NE(capped.error.find("limit"), std::string::npos) << capped.error;
}

TEST(TdsRpc, EveryTruncationIsAnError) {
  for (const char* name : {"03_rpc.hex", "04_rpc.hex", "05_rpc.hex"}) {
    const Message m = capture_message(name);
    for (size_t n = 0; n < m.payload.size(); ++n) {
      auto d = decode_rpc(bytes_of(m.payload.substr(0, n)));
      // A cut between two parameters is a valid shorter request.
      if (d.status == DecodeStatus::ok) continue;
      EXPECT_EQ(d.status, DecodeStatus::error) << name << " at " << n;
      EXPECT_FALSE(d.error.empty());
    }
  }
}

TEST(TdsRpc, EncodeRoundTripWithNamedProcAndOutputParam) {
  RpcRequest r;
  r.proc_name = "dbo.my_proc";
  r.option_flags = rpc_flag::kWithRecomp;
  RpcParam a;
  a.name = "@a";
  a.value.type = TypeInfo{.type = type::kIntN, .max_length = 4};
  a.value.value = db::Value::int64(42);
  RpcParam b;
  b.name = "@out";
  b.status = param_status::kByRef;
  b.value.type =
      TypeInfo{.type = type::kNVarChar, .max_length = 100, .collation = kDefaultCollation};
  b.value.value = db::Value::null();
  r.params = {a, b};
  std::string out;
  ASSERT_TRUE(encode_rpc(out, r).ok());
  auto d = decode_rpc(bytes_of(out));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(d.message.proc_name, "dbo.my_proc");
  EXPECT_EQ(d.message.option_flags, rpc_flag::kWithRecomp);
  ASSERT_EQ(d.message.params.size(), 2u);
  EXPECT_EQ(d.message.params[0].value.value.i64, 42);
  EXPECT_TRUE(d.message.params[1].output());
  EXPECT_TRUE(d.message.params[1].value.value.is_null());
  EXPECT_EQ(d.message.params[1].value.type.collation, kDefaultCollation);
  // A value that does not fit its declared type fails the encoder.
  r.params[0].value.value = db::Value::int64(1LL << 40);
  std::string out2;
  EXPECT_FALSE(encode_rpc(out2, r).ok());
}

TEST(TdsRpc, RefusesBatchedRpcsAndUnknownTypes) {
  const Message m = capture_message("03_rpc.hex");
  std::string batched = m.payload + std::string("\xff", 1);
  EXPECT_NE(decode_rpc(bytes_of(batched)).error.find("several RPCs"), std::string::npos);
  std::string unknown = m.payload + std::string("\x01@\x00\x00\x99", 5);
  auto d = decode_rpc(bytes_of(unknown));
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_NE(d.error.find("0x99"), std::string::npos) << d.error;
  std::string text = m.payload + std::string("\x00\x00\x23", 3);
  EXPECT_NE(decode_rpc(bytes_of(text)).error.find("TEXT"), std::string::npos);
}

TEST(TdsTransactionManager, DecodesTediousBeginAndCommit) {
  auto b = decode_transaction_request(bytes_of(capture_message("07_txmgr.hex").payload));
  ASSERT_EQ(b.status, DecodeStatus::ok) << b.error;
  EXPECT_EQ(b.message.request, tm::kBeginXact);
  EXPECT_EQ(b.message.name, "tx1");
  EXPECT_EQ(b.message.isolation_level, isolation::kReadCommitted);  // tedious's default
  auto c = decode_transaction_request(bytes_of(capture_message("08_txmgr.hex").payload));
  ASSERT_EQ(c.status, DecodeStatus::ok) << c.error;
  EXPECT_EQ(c.message.request, tm::kCommitXact);
  EXPECT_EQ(c.message.name, "");
  EXPECT_EQ(c.message.headers.transaction_descriptor, 1u);
}

TEST(TdsTransactionManager, RoundTripsEveryRequest) {
  TransactionRequest r;
  r.headers.transaction_descriptor = 5;
  for (uint16_t req : {tm::kBeginXact, tm::kCommitXact, tm::kRollbackXact, tm::kSaveXact,
                       tm::kGetDtcAddress, tm::kPropagateXact}) {
    r.request = req;
    r.isolation_level = req == tm::kBeginXact ? isolation::kSerializable : 0;
    r.name = req == tm::kGetDtcAddress || req == tm::kPropagateXact ? "" : "tx";
    r.flags = req == tm::kRollbackXact ? tm::kFlagBeginXact : 0;
    r.new_isolation_level = r.flags ? isolation::kSnapshot : 0;
    r.new_name = r.flags ? "next" : "";
    r.raw = req == tm::kPropagateXact ? std::string("\x02\x00zz", 4) : "";
    std::string out;
    encode_transaction_request(out, r);
    auto d = decode_transaction_request(bytes_of(out));
    ASSERT_EQ(d.status, DecodeStatus::ok) << req << d.error;
    EXPECT_EQ(d.message.request, req);
    EXPECT_EQ(d.message.name, r.name);
    EXPECT_EQ(d.message.isolation_level, r.isolation_level);
    EXPECT_EQ(d.message.new_name, r.new_name);
    EXPECT_EQ(d.message.raw, r.raw);
    for (size_t n = 22; n + 1 < out.size(); ++n) {
      if (req == tm::kGetDtcAddress || req == tm::kPropagateXact) break;
      EXPECT_EQ(decode_transaction_request(bytes_of(out.substr(0, n))).status, DecodeStatus::error)
          << req << " at " << n;
    }
  }
}

}  // namespace
}  // namespace wirepool::tds
