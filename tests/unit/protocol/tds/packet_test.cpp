// TDS packets: the message assembler fed the same bytes split every way (byte
// by byte, every split point of a captured multi-packet message, several
// messages in one buffer, cut headers), its limits (length below 8, above the
// packet size, above the message cap, a type change inside a message, refused
// packet types), the IGNORE bit, RESETCONNECTION, ATTENTION as an empty
// message, and the packet writer's framing at the negotiated size.

#include <gtest/gtest.h>

#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::capture_stream;

std::string packet(uint8_t type, uint8_t status, std::string_view body, uint8_t id = 1) {
  std::string p;
  p.push_back(static_cast<char>(type));
  p.push_back(static_cast<char>(status));
  const size_t len = body.size() + 8;
  p.push_back(static_cast<char>(len >> 8));
  p.push_back(static_cast<char>(len & 0xFF));
  p.append("\0\0", 2);
  p.push_back(static_cast<char>(id));
  p.push_back('\0');
  p += body;
  return p;
}

std::vector<Message> feed_all(MessageAssembler& a, std::string_view in, size_t step,
                              std::string* error = nullptr) {
  std::vector<Message> out;
  for (size_t i = 0; i < in.size(); i += step) {
    a.feed(in.substr(i, step));
    for (;;) {
      Message m;
      std::string e;
      const auto st = a.next(m, e);
      if (st == DecodeStatus::ok) {
        out.push_back(std::move(m));
        continue;
      }
      if (st == DecodeStatus::error) {
        if (error) *error = e;
        return out;
      }
      break;
    }
  }
  return out;
}

TEST(TdsAssembler, MultiPacketMessageAssemblesAtEverySplitPoint) {
  const std::string stream = capture_stream("06_rpc.hex");  // 3 packets
  MessageAssembler whole;
  const auto ref = feed_all(whole, stream, stream.size());
  ASSERT_EQ(ref.size(), 1u);
  EXPECT_EQ(ref[0].type, static_cast<uint8_t>(PacketType::rpc));
  EXPECT_EQ(ref[0].payload.size(), stream.size() - 3 * 8);
  for (size_t split = 1; split < stream.size(); ++split) {
    MessageAssembler a;
    std::vector<Message> got;
    a.feed(std::string_view(stream).substr(0, split));
    Message m;
    std::string e;
    ASSERT_EQ(a.next(m, e), DecodeStatus::need_more) << split;
    a.feed(std::string_view(stream).substr(split));
    ASSERT_EQ(a.next(m, e), DecodeStatus::ok) << split << e;
    ASSERT_EQ(m.payload, ref[0].payload) << split;
    EXPECT_TRUE(a.idle());
  }
}

TEST(TdsAssembler, ByteByByteAndSeveralMessagesInOneBuffer) {
  const std::string stream = capture_stream("00_prelogin.hex") + capture_stream("01_login7.hex") +
                             capture_stream("02_sqlbatch.hex") + capture_stream("06_rpc.hex") +
                             capture_stream("07_txmgr.hex");
  for (size_t step :
       {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{4096}, stream.size()}) {
    MessageAssembler a;
    std::string error;
    const auto msgs = feed_all(a, stream, step, &error);
    ASSERT_EQ(msgs.size(), 5u) << "step " << step << " " << error;
    EXPECT_EQ(msgs[0].type, 18);
    EXPECT_EQ(msgs[1].type, 16);
    EXPECT_EQ(msgs[2].type, 1);
    EXPECT_EQ(msgs[3].type, 3);
    EXPECT_EQ(msgs[4].type, 14);
    EXPECT_TRUE(a.idle());
  }
}

TEST(TdsAssembler, AttentionIsAnEmptyMessage) {
  MessageAssembler a;
  a.feed(packet(6, status::kEom, ""));
  Message m;
  std::string e;
  ASSERT_EQ(a.next(m, e), DecodeStatus::ok);
  EXPECT_EQ(m.type, static_cast<uint8_t>(PacketType::attention));
  EXPECT_TRUE(m.payload.empty());
}

TEST(TdsAssembler, ResetConnectionComesFromTheFirstPacket) {
  MessageAssembler a;
  a.feed(packet(1, status::kResetConnection, "ab") + packet(1, status::kEom, "cd", 2));
  Message m;
  std::string e;
  ASSERT_EQ(a.next(m, e), DecodeStatus::ok);
  EXPECT_TRUE(m.reset_connection());
  EXPECT_FALSE(m.reset_connection_skip_tran());
  EXPECT_EQ(m.payload, "abcd");
}

TEST(TdsAssembler, IgnoreBitDropsTheMessage) {
  MessageAssembler a;
  a.feed(packet(1, 0, "ab") + packet(1, status::kEom | status::kIgnore, "cd") +
         packet(1, status::kEom, "ok"));
  Message m;
  std::string e;
  ASSERT_EQ(a.next(m, e), DecodeStatus::ok);
  EXPECT_EQ(m.payload, "ok");
}

TEST(TdsAssembler, LengthBelowHeaderIsAnError) {
  for (uint16_t len : {0, 1, 7}) {
    MessageAssembler a;
    std::string p = packet(1, status::kEom, "");
    p[2] = static_cast<char>(len >> 8);
    p[3] = static_cast<char>(len);
    a.feed(p);
    Message m;
    std::string e;
    EXPECT_EQ(a.next(m, e), DecodeStatus::error) << len;
    EXPECT_NE(e.find("below 8"), std::string::npos) << e;
    // Sticky: the connection must close.
    a.feed(packet(1, status::kEom, "x"));
    EXPECT_EQ(a.next(m, e), DecodeStatus::error);
  }
}

TEST(TdsAssembler, PacketAboveNegotiatedSizeIsAnErrorBeforeItsBodyArrives) {
  MessageAssembler a;
  a.set_packet_size(512);
  const std::string at_limit = packet(1, status::kEom, std::string(504, 'x'));
  a.feed(at_limit);
  Message m;
  std::string e;
  ASSERT_EQ(a.next(m, e), DecodeStatus::ok) << e;
  const std::string over = packet(1, status::kEom, std::string(505, 'x'));
  a.feed(std::string_view(over).substr(0, 8));  // only the header
  EXPECT_EQ(a.next(m, e), DecodeStatus::error);
  EXPECT_NE(e.find("exceeds the packet size 512"), std::string::npos) << e;
}

TEST(TdsAssembler, MessageAboveTheCapIsAnError) {
  MessageAssembler a(AssemblerLimits{.max_message = 10});
  a.feed(packet(1, 0, "123456") + packet(1, status::kEom, "78901"));
  Message m;
  std::string e;
  EXPECT_EQ(a.next(m, e), DecodeStatus::error);
  EXPECT_NE(e.find("exceeds the limit of 10"), std::string::npos) << e;
  MessageAssembler b(AssemblerLimits{.max_message = 10});
  b.feed(packet(1, 0, "12345") + packet(1, status::kEom, "67890"));
  EXPECT_EQ(b.next(m, e), DecodeStatus::ok);
}

TEST(TdsAssembler, TypeChangeInsideAMessageIsAnError) {
  MessageAssembler a;
  a.feed(packet(1, 0, "ab") + packet(3, status::kEom, "cd"));
  Message m;
  std::string e;
  EXPECT_EQ(a.next(m, e), DecodeStatus::error);
  EXPECT_NE(e.find("inside a message"), std::string::npos) << e;
}

TEST(TdsAssembler, RefusedPacketTypes) {
  for (uint8_t type : {2, 4, 7, 8, 17, 0, 99}) {
    MessageAssembler a;
    a.feed(packet(type, status::kEom, ""));
    Message m;
    std::string e;
    EXPECT_EQ(a.next(m, e), DecodeStatus::error) << int(type);
  }
  MessageAssembler server(AssemblerLimits{.from_server = true});
  server.feed(packet(4, status::kEom, "x"));
  Message m;
  std::string e;
  EXPECT_EQ(server.next(m, e), DecodeStatus::ok);
}

TEST(TdsPacketWriter, SplitsAtThePacketSizeWithEomOnTheLast) {
  PacketWriter w;
  w.set_packet_size(512);
  std::string payload(1500, 'z');
  for (size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i);
  std::string out;
  w.write(out, PacketType::tabular_result, payload, status::kResetConnection);
  // 504 + 504 + 492
  ASSERT_EQ(out.size(), payload.size() + 3 * 8);
  const auto h1 = peek_header(as_bytes(out));
  ASSERT_TRUE(h1);
  EXPECT_EQ(h1->length, 512);
  EXPECT_EQ(h1->status, status::kResetConnection);
  EXPECT_EQ(h1->packet_id, 1);
  const auto h3 = peek_header(as_bytes(out).subspan(1024));
  EXPECT_EQ(h3->length, 500);
  EXPECT_EQ(h3->status, status::kEom);
  EXPECT_EQ(h3->packet_id, 3);
  MessageAssembler a(AssemblerLimits{.from_server = true});
  a.feed(out);
  Message m;
  std::string e;
  ASSERT_EQ(a.next(m, e), DecodeStatus::ok);
  EXPECT_EQ(m.payload, payload);
}

TEST(TdsPacketWriter, EmptyPayloadIsOneEomPacketAndSizesAreClamped) {
  PacketWriter w;
  w.set_packet_size(100);
  EXPECT_EQ(w.packet_size(), kMinPacketSize);
  w.set_packet_size(1 << 20);
  EXPECT_EQ(w.packet_size(), kMaxPacketSize);
  std::string out;
  w.write(out, PacketType::attention, "");
  EXPECT_EQ(test::hex(out), "0601000800000100");
}

TEST(TdsPackets, TlsClientHelloIsRecognised) {
  const std::string hello = test::unhex("160301020001");
  EXPECT_TRUE(looks_like_tls(as_bytes(hello)));
  EXPECT_FALSE(looks_like_tls(as_bytes(capture_stream("00_prelogin.hex"))));
}

}  // namespace
}  // namespace wirepool::tds
