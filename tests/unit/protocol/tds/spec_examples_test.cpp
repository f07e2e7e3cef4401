// The [MS-TDS] specification's own examples (section 4), byte for byte: what
// the SQL Server driver sends and reads goes through these encoders and
// decoders. Cases: 4.1 PRELOGIN request decoded; 4.2 LOGIN7 request (TDS 7.2)
// decoded, split across reads by the assembler; 4.6 SQL batch and 4.8 RPC
// requests encoded and framed identically; 4.7 SQL batch response
// (COLMETADATA, ROW, DONE with a SELECT count) decoded whole and one byte at a
// time.

#include <gtest/gtest.h>

#include "protocol/tds/codec.hpp"
#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::unhex;

std::string spec(std::string_view spaced) {
  std::string hex;
  for (char c : spaced) {
    if (c != ' ' && c != '\n') hex += c;
  }
  return unhex(hex);
}

/// Frames `payload` as one packet of `type` the way the driver does.
std::string framed(PacketType type, const std::string& payload) {
  PacketWriter w;
  std::string out;
  w.write(out, type, payload);
  return out;
}

TEST(TdsSpecExamples, PreloginRequest41) {
  const std::string packet = spec(
      "12 01 00 2F 00 00 01 00 00 00 1A 00 06 01 00 20 00 01 02 00 21 00 01 03 00 22 00 04 04 00 "
      "26 00 01 FF 09 00 00 00 00 00 01 00 B8 0D 00 00 01");
  auto h = peek_header(as_bytes(packet));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->type, static_cast<uint8_t>(PacketType::prelogin));
  EXPECT_EQ(h->length, packet.size());
  auto p = decode_prelogin(as_bytes(packet).subspan(kHeaderSize));
  ASSERT_EQ(p.status, DecodeStatus::ok) << p.error;
  ASSERT_TRUE(p.message.version);
  EXPECT_EQ(p.message.version->major, 9);
  EXPECT_EQ(p.message.encryption, encrypt::kOn);
  EXPECT_EQ(p.message.instance, std::string());
  EXPECT_EQ(p.message.thread_id, std::string("\xB8\x0D\x00\x00", 4));
  EXPECT_EQ(p.message.mars, 1);
}

TEST(TdsSpecExamples, Login7Request42SplitAcrossReads) {
  const std::string packet = spec(
      "10 01 00 90 00 00 01 00 88 00 00 00 02 00 09 72 00 10 00 00 00 00 00 07 00 01 00 00 00 00 "
      "00 00 E0 03 00 00 00 00 00 00 09 04 00 00 5E 00 08 00 6E 00 02 00 72 00 00 00 72 00 07 00 "
      "80 00 00 00 80 00 00 00 80 00 04 00 88 00 00 00 88 00 00 00 00 50 8B E2 B7 8F 88 00 00 00 "
      "88 00 00 00 88 00 00 00 00 00 00 00 73 00 6B 00 6F 00 73 00 74 00 6F 00 76 00 31 00 73 00 "
      "61 00 4F 00 53 00 51 00 4C 00 2D 00 33 00 32 00 4F 00 44 00 42 00 43 00");
  ASSERT_EQ(packet.size(), 0x90u);
  for (size_t split : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{100}}) {
    MessageAssembler a;
    Message m;
    std::string error;
    a.feed(std::string_view(packet).substr(0, split));
    EXPECT_EQ(a.next(m, error), DecodeStatus::need_more) << split;
    a.feed(std::string_view(packet).substr(split));
    ASSERT_EQ(a.next(m, error), DecodeStatus::ok) << error;
    auto l = decode_login7(as_bytes(m.payload));
    ASSERT_EQ(l.status, DecodeStatus::ok) << l.error;
    EXPECT_EQ(l.message.tds_version, 0x72090002u);
    EXPECT_EQ(l.message.packet_size, 4096u);
    EXPECT_EQ(l.message.option_flags1, 0xE0);
    EXPECT_EQ(l.message.option_flags2, 0x03);
    EXPECT_EQ(l.message.client_lcid, 0x0409u);
    EXPECT_EQ(l.message.host_name, "skostov1");
    EXPECT_EQ(l.message.user_name, "sa");
    EXPECT_EQ(l.message.password, "");
    EXPECT_EQ(l.message.app_name, "OSQL-32");
    EXPECT_EQ(l.message.client_interface, "ODBC");
    EXPECT_EQ(l.message.database, "");
  }
}

TEST(TdsSpecExamples, SqlBatchRequest46IsEncodedIdentically) {
  const std::string packet = spec(
      "01 01 00 5C 00 00 01 00 16 00 00 00 12 00 00 00 02 00 00 00 00 00 00 00 00 01 00 00 00 00 "
      "0A 00 73 00 65 00 6C 00 65 00 63 00 74 00 20 00 27 00 66 00 6F 00 6F 00 27 00 20 00 61 00 "
      "73 00 20 00 27 00 62 00 61 00 72 00 27 00 0A 00 20 00 20 00 20 00 20 00 20 00 20 00 20 00 "
      "20 00");
  // The example's descriptor is 00..00 01 (little-endian 0x0100000000000000)
  // with an outstanding request count of 0; encode_sql_batch always writes 1
  // (one request outstanding, no MARS), so that field is compared apart.
  std::string payload;
  ASSERT_TRUE(encode_sql_batch(payload, "\nselect 'foo' as 'bar'\n        ", 0x0100000000000000));
  ASSERT_EQ(payload.substr(18, 4), std::string("\x01\x00\x00\x00", 4));
  payload.replace(18, 4, std::string(4, '\0'));
  EXPECT_EQ(test::hex(framed(PacketType::sql_batch, payload)), test::hex(packet));
}

TEST(TdsSpecExamples, RpcRequest48IsEncodedIdentically) {
  const std::string packet = spec(
      "03 01 00 2F 00 00 01 00 16 00 00 00 12 00 00 00 02 00 00 00 00 00 00 00 00 01 00 00 00 00 "
      "04 00 66 00 6F 00 6F 00 33 00 00 00 00 00 26 02 00");
  RpcRequest rpc;
  rpc.headers.transaction_descriptor = 0x0100000000000000;  // as the example
  rpc.headers.outstanding_requests = 0;
  rpc.proc_name = "foo3";
  RpcParam p;
  p.value.type.type = type::kIntN;
  p.value.type.max_length = 2;  // a NULL smallint
  rpc.params.push_back(p);
  std::string payload;
  ASSERT_TRUE(encode_rpc(payload, rpc).ok());
  EXPECT_EQ(test::hex(framed(PacketType::rpc, payload)), test::hex(packet));
}

TEST(TdsSpecExamples, SqlBatchResponse47) {
  const std::string packet = spec(
      "04 01 00 33 00 00 01 00 81 01 00 00 00 00 00 20 00 A7 03 00 09 04 D0 00 34 03 62 00 61 00 "
      "72 00 D1 03 00 66 6F 6F FD 10 00 C1 00 01 00 00 00 00 00 00 00");
  const std::string tokens = packet.substr(kHeaderSize);
  // Whole, then fed one byte more at a time (a token is never taken half).
  for (bool bytewise : {false, true}) {
    TokenDecoder d;
    std::vector<Token> got;
    size_t pos = 0, avail = bytewise ? 1 : tokens.size();
    while (pos < tokens.size()) {
      auto r = d.next(as_bytes(std::string_view(tokens).substr(pos, avail - pos)));
      ASSERT_NE(r.status, DecodeStatus::error) << r.error;
      if (r.status == DecodeStatus::need_more) {
        ASSERT_LT(avail, tokens.size());
        ++avail;
        continue;
      }
      pos += r.consumed;
      got.push_back(std::move(r.message));
    }
    ASSERT_EQ(got.size(), 3u);
    const auto& cols = std::get<std::vector<ColumnMeta>>(got[0]);
    ASSERT_EQ(cols.size(), 1u);
    EXPECT_EQ(cols[0].name, "bar");
    EXPECT_EQ(cols[0].type.type, type::kBigVarChar);
    EXPECT_EQ(cols[0].type.max_length, 3u);
    EXPECT_EQ(cols[0].type.collation, kDefaultCollation);
    EXPECT_EQ(std::get<Row>(got[1]).values[0].value.str, "foo");
    const auto& done = std::get<Done>(got[2]);
    EXPECT_EQ(done.status, done::kCount);
    EXPECT_EQ(done.current_command, command::kSelect);
    EXPECT_EQ(done.row_count, 1u);
  }
}

}  // namespace
}  // namespace wirepool::tds
