// Decoding of the PostgreSQL v3 frontend side (protocol/pg/codec.hpp).
//
// Cases:
// - startup: StartupMessage (params in order, duplicates, newer 3.x minor),
//   SSLRequest, GSSENCRequest, CancelRequest decoded from hand-built bytes;
//   need_more at every split point; the startup length field below 8, at 8 for
//   a v3 packet, above max_len and at 2 GiB; fixed lengths of SSL/GSS/Cancel;
//   unsupported protocol versions and request codes; missing terminator,
//   parameter without value, bytes after the terminator;
// - every frontend message type (Q P B D E C S H X p d c f F) decoded with its
//   fields;
// - each message split at every byte boundary answers need_more until complete;
//   several messages merged in one buffer advance `consumed` exactly;
// - every type's length field at 0..3, 2 GiB, max_len + 1 (refused from the
//   5-byte header alone), below the type's minimum, not 4 for the fixed-size ones;
// - body rules: strings without NUL, trailing bytes, negative and oversized
//   counts, Bind parameter lengths -2 and past the end, format codes other than
//   0/1, Describe/Close kinds; a format count mismatching the parameter count
//   is well framed and left to the session;
//   every sample with one byte more or one byte less inside its length;
// - unknown type bytes refused from the first byte; peek_length;
//   parse_sasl_initial.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/pg/codec.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"

namespace wirepool::pg {
namespace {

using test::ByteBuilder;
using test::concat;
using test::frame;
using test::frame_with_length;
using test::span_of;
using test::startup_packet;

constexpr size_t kMax = 1 << 20;

Decoded<FrontendMessage> decode(const std::vector<uint8_t>& v, size_t max_len = kMax) {
  return decode_frontend(span_of(v), max_len);
}

/// The decoded message (views into the input: keep the input alive meanwhile).
template <class M>
const M& as(const Decoded<FrontendMessage>& d) {
  EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_TRUE(std::holds_alternative<M>(d.message));
  return std::get<M>(d.message);
}

void expect_error(const Decoded<FrontendMessage>& d, std::string_view needle) {
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_EQ(d.consumed, 0u);
  EXPECT_NE(d.error.find(needle), std::string::npos) << "error: " << d.error;
}

void expect_startup_error(const Decoded<StartupPacket>& d, std::string_view needle) {
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_EQ(d.consumed, 0u);
  EXPECT_NE(d.error.find(needle), std::string::npos) << "error: " << d.error;
}

// ---------------------------------------------------------------------------
// Startup

std::vector<uint8_t> sample_startup() {
  return startup_packet(kProtocol30, ByteBuilder()
                                         .cstr("user")
                                         .cstr("alice")
                                         .cstr("database")
                                         .cstr("demo")
                                         .cstr("application_name")
                                         .cstr("")
                                         .u8(0));
}

TEST(DecodeStartup, StartupMessageKeepsParametersInOrder) {
  const auto in = sample_startup();
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(d.consumed, in.size());
  const auto& m = std::get<StartupMessage>(d.message);
  EXPECT_EQ(m.protocol, kProtocol30);
  ASSERT_EQ(m.params.size(), 3u);
  EXPECT_EQ(m.params[0].first, "user");
  EXPECT_EQ(m.params[0].second, "alice");
  EXPECT_EQ(m.params[2].first, "application_name");
  EXPECT_EQ(m.params[2].second, "");
  EXPECT_EQ(m.get("database"), "demo");
  EXPECT_EQ(m.get("options"), std::nullopt);
}

TEST(DecodeStartup, LaterDuplicateParameterWins) {
  const auto in = startup_packet(kProtocol30,
                                 ByteBuilder().cstr("user").cstr("a").cstr("user").cstr("b").u8(0));
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(std::get<StartupMessage>(d.message).get("user"), "b");
}

TEST(DecodeStartup, NewerMinorVersionIsAcceptedForNegotiation) {
  const auto in = startup_packet((3u << 16) | 2, ByteBuilder().cstr("user").cstr("a").u8(0));
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(std::get<StartupMessage>(d.message).protocol, (3u << 16) | 2);
}

TEST(DecodeStartup, EmptyParameterListIsJustTheTerminator) {
  const auto in = startup_packet(kProtocol30, ByteBuilder().u8(0));
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_TRUE(std::get<StartupMessage>(d.message).params.empty());
}

TEST(DecodeStartup, SslAndGssRequestsAreEightBytes) {
  const auto ssl = startup_packet(kSslRequestCode, ByteBuilder());
  auto d = decode_startup(span_of(ssl));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_TRUE(std::holds_alternative<SslRequest>(d.message));
  EXPECT_EQ(d.consumed, 8u);

  const auto gss = startup_packet(kGssEncRequestCode, ByteBuilder());
  d = decode_startup(span_of(gss));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_TRUE(std::holds_alternative<GssEncRequest>(d.message));
}

TEST(DecodeStartup, CancelRequestCarriesPidAndSecret) {
  const auto in = startup_packet(kCancelRequestCode, ByteBuilder().i32(4242).i32(-7));
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(d.consumed, 16u);
  const auto& c = std::get<CancelRequest>(d.message);
  EXPECT_EQ(c.pid, 4242);
  EXPECT_EQ(c.secret, -7);
}

TEST(DecodeStartup, TrailingDataAfterPacketIsNotConsumed) {
  // An SSLRequest followed by the first TLS bytes: only the request is consumed.
  auto in = startup_packet(kSslRequestCode, ByteBuilder());
  in.push_back(0x16);
  const auto d = decode_startup(span_of(in));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(d.consumed, 8u);
}

TEST(DecodeStartup, EverySplitPointNeedsMoreUntilComplete) {
  for (const auto& in : {sample_startup(), startup_packet(kSslRequestCode, ByteBuilder()),
                         startup_packet(kCancelRequestCode, ByteBuilder().i32(1).i32(2))}) {
    for (size_t n = 0; n < in.size(); ++n) {
      const auto d = decode_startup(std::span(in.data(), n));
      EXPECT_EQ(d.status, DecodeStatus::need_more) << "prefix " << n << ": " << d.error;
      EXPECT_EQ(d.consumed, 0u);
    }
    EXPECT_EQ(decode_startup(span_of(in)).status, DecodeStatus::ok);
  }
}

class StartupLengthBelowEight : public ::testing::TestWithParam<int32_t> {};

TEST_P(StartupLengthBelowEight, IsRefusedFromTheLengthAlone) {
  const auto in = ByteBuilder().i32(GetParam()).bytes();
  expect_startup_error(decode_startup(span_of(in)), "invalid length of startup packet");
}
INSTANTIATE_TEST_SUITE_P(Lengths, StartupLengthBelowEight,
                         ::testing::Values(0, 1, 4, 7, -1, INT32_MIN));

TEST(DecodeStartup, LengthAboveMaxIsRefusedWithoutWaitingForTheBody) {
  const auto at_max = ByteBuilder().i32(int32_t(kMaxStartupPacket)).u32(kProtocol30).bytes();
  EXPECT_EQ(decode_startup(span_of(at_max)).status, DecodeStatus::need_more);
  const auto over = ByteBuilder().i32(int32_t(kMaxStartupPacket + 1)).bytes();
  expect_startup_error(decode_startup(span_of(over)), "invalid length of startup packet");
  const auto two_gib = ByteBuilder().u32(0x80000000u).bytes();
  expect_startup_error(decode_startup(span_of(two_gib)), "invalid length of startup packet");
  const auto custom = ByteBuilder().i32(101).bytes();
  expect_startup_error(decode_startup(span_of(custom), 100), "101");
}

TEST(DecodeStartup, V3PacketOfEightBytesHasNoRoomForTheTerminator) {
  const auto in = startup_packet(kProtocol30, ByteBuilder());
  expect_startup_error(decode_startup(span_of(in)), "invalid length of startup packet");
}

TEST(DecodeStartup, FixedSizeRequestsWithOtherLengthsAreRefusedFromTheHeader) {
  // Only the 8-byte header is present: the wrong length is enough to refuse.
  expect_startup_error(decode_startup(span_of(ByteBuilder().i32(12).u32(kSslRequestCode).bytes())),
                       "SSLRequest");
  expect_startup_error(
      decode_startup(span_of(ByteBuilder().i32(9).u32(kGssEncRequestCode).bytes())),
      "GSSENCRequest");
  expect_startup_error(
      decode_startup(span_of(ByteBuilder().i32(8).u32(kCancelRequestCode).bytes())),
      "CancelRequest");
  expect_startup_error(
      decode_startup(span_of(ByteBuilder().i32(20).u32(kCancelRequestCode).bytes())),
      "CancelRequest");
}

TEST(DecodeStartup, OtherProtocolMajorsAreRefusedNamingTheVersion) {
  const auto v1 = ByteBuilder().i32(9).u32(1u << 16).bytes();
  expect_startup_error(decode_startup(span_of(v1)),
                       "unsupported frontend protocol 1.0: server supports 3.0");
  const auto v2 = ByteBuilder().i32(9).u32(2u << 16).bytes();
  expect_startup_error(decode_startup(span_of(v2)), "unsupported frontend protocol 2.0");
  const auto unknown_request = ByteBuilder().i32(8).u32((1234u << 16) | 5681).bytes();
  expect_startup_error(decode_startup(span_of(unknown_request)), "1234.5681");
}

TEST(DecodeStartup, MissingTerminatorIsRefused) {
  const auto in = startup_packet(kProtocol30, ByteBuilder().cstr("user").cstr("a"));
  expect_startup_error(decode_startup(span_of(in)), "expected terminator");
}

TEST(DecodeStartup, ParameterWithoutValueIsRefused) {
  // "db\0" is a name, and the packet ends before its value.
  const auto in = startup_packet(kProtocol30, ByteBuilder().cstr("user").cstr("a").cstr("db"));
  expect_startup_error(decode_startup(span_of(in)), "no value");
}

TEST(DecodeStartup, BytesAfterTheTerminatorAreRefused) {
  const auto in = startup_packet(kProtocol30, ByteBuilder().cstr("user").cstr("a").u8(0).u8('x'));
  expect_startup_error(decode_startup(span_of(in)), "expected terminator");
}

// ---------------------------------------------------------------------------
// Frontend messages: one of each, decoded

std::vector<uint8_t> bind_sample() {
  return frame('B', ByteBuilder()
                        .cstr("portal")
                        .cstr("stmt")
                        .i16(3)
                        .i16(0)
                        .i16(1)
                        .i16(0)
                        .i16(3)
                        .i32(2)
                        .raw("42")
                        .i32(-1)
                        .i32(0)
                        .i16(1)
                        .i16(1));
}

TEST(DecodeFrontend, Query) {
  const auto in = frame('Q', ByteBuilder().cstr("SELECT 1"));
  const auto d = decode(in);
  EXPECT_EQ(as<Query>(d).sql, "SELECT 1");
  EXPECT_EQ(d.consumed, in.size());
}

TEST(DecodeFrontend, ParseWithParameterTypes) {
  const auto in =
      frame('P', ByteBuilder().cstr("s1").cstr("SELECT $1, $2").i16(2).i32(23).u32(0xFFFFFFFFu));
  const auto d = decode(in);
  const auto& p = as<Parse>(d);
  EXPECT_EQ(p.name, "s1");
  EXPECT_EQ(p.sql, "SELECT $1, $2");
  EXPECT_EQ(p.param_types, (std::vector<uint32_t>{23, 0xFFFFFFFFu}));
}

TEST(DecodeFrontend, BindWithNullEmptyAndFormats) {
  const auto in = bind_sample();
  const auto d = decode(in);
  const auto& b = as<Bind>(d);
  EXPECT_EQ(b.portal, "portal");
  EXPECT_EQ(b.statement, "stmt");
  EXPECT_EQ(b.param_formats, (std::vector<int16_t>{0, 1, 0}));
  ASSERT_EQ(b.params.size(), 3u);
  EXPECT_EQ(b.params[0], std::optional<std::string_view>("42"));
  EXPECT_EQ(b.params[1], std::nullopt);
  EXPECT_EQ(b.params[2], std::optional<std::string_view>(""));
  EXPECT_EQ(b.result_formats, (std::vector<int16_t>{1}));
}

TEST(DecodeFrontend, BindWithoutFormatsOrParameters) {
  const auto in = frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(0).i16(0));
  const auto decoded = decode(in);
  const auto& b = as<Bind>(decoded);
  EXPECT_TRUE(b.params.empty());
  EXPECT_TRUE(b.param_formats.empty());
  EXPECT_TRUE(b.result_formats.empty());
}

TEST(DecodeFrontend, BindWithOneFormatForAllParameters) {
  const auto in = frame(
      'B',
      ByteBuilder().cstr("").cstr("").i16(1).i16(1).i16(2).i32(1).raw("a").i32(1).raw("b").i16(0));
  const auto decoded = decode(in);
  const auto& b = as<Bind>(decoded);
  EXPECT_EQ(b.param_formats, (std::vector<int16_t>{1}));
  EXPECT_EQ(b.params.size(), 2u);
}

TEST(DecodeFrontend, BindFormatCountMismatchIsLeftToTheSession) {
  // Well framed; PostgreSQL answers it with a recoverable 08P01 error.
  const auto in = frame(
      'B',
      ByteBuilder().cstr("").cstr("").i16(2).i16(0).i16(0).i16(3).i32(-1).i32(-1).i32(-1).i16(0));
  const auto decoded = decode(in);
  const auto& b = as<Bind>(decoded);
  EXPECT_EQ(b.param_formats.size(), 2u);
  EXPECT_EQ(b.params.size(), 3u);
}

TEST(DecodeFrontend, DescribeStatementAndPortal) {
  const auto statement = frame('D', ByteBuilder().u8('S').cstr("s1"));
  auto d = decode(statement);
  EXPECT_EQ(as<Describe>(d).kind, 'S');
  EXPECT_EQ(as<Describe>(d).name, "s1");
  const auto portal = frame('D', ByteBuilder().u8('P').cstr(""));
  d = decode(portal);
  EXPECT_EQ(as<Describe>(d).kind, 'P');
  EXPECT_EQ(as<Describe>(d).name, "");
}

TEST(DecodeFrontend, ExecuteWithRowLimit) {
  const auto in = frame('E', ByteBuilder().cstr("p1").i32(100));
  const auto d = decode(in);
  EXPECT_EQ(as<Execute>(d).portal, "p1");
  EXPECT_EQ(as<Execute>(d).max_rows, 100);
}

TEST(DecodeFrontend, ExecuteNegativeRowLimitMeansAll) {
  const auto in = frame('E', ByteBuilder().cstr("").i32(-5));
  const auto d = decode(in);
  EXPECT_EQ(as<Execute>(d).max_rows, 0);
}

TEST(DecodeFrontend, CloseStatementAndPortal) {
  const auto statement = frame('C', ByteBuilder().u8('S').cstr("s1"));
  auto d = decode(statement);
  EXPECT_EQ(as<Close>(d).kind, 'S');
  EXPECT_EQ(as<Close>(d).name, "s1");
  const auto portal = frame('C', ByteBuilder().u8('P').cstr("p1"));
  d = decode(portal);
  EXPECT_EQ(as<Close>(d).kind, 'P');
}

TEST(DecodeFrontend, EmptyBodiedMessages) {
  EXPECT_EQ(decode(frame('S', ByteBuilder())).message.index(), FrontendMessage(Sync{}).index());
  EXPECT_EQ(decode(frame('H', ByteBuilder())).message.index(), FrontendMessage(Flush{}).index());
  EXPECT_EQ(decode(frame('X', ByteBuilder())).message.index(),
            FrontendMessage(Terminate{}).index());
  EXPECT_EQ(decode(frame('c', ByteBuilder())).message.index(), FrontendMessage(CopyDone{}).index());
  for (char t : {'S', 'H', 'X', 'c'}) {
    const auto in = frame(t, ByteBuilder());
    const auto d = decode(in);
    EXPECT_EQ(d.status, DecodeStatus::ok) << t;
    EXPECT_EQ(d.consumed, 5u);
  }
}

TEST(DecodeFrontend, PasswordMessageBodyIsKeptWhole) {
  const auto in = frame('p', ByteBuilder().cstr("secret"));
  const auto d = decode(in);
  EXPECT_EQ(as<PasswordMessage>(d).data, std::string_view("secret\0", 7));
  const auto empty_in = frame('p', ByteBuilder());
  const auto empty = decode(empty_in);
  EXPECT_EQ(as<PasswordMessage>(empty).data, "");
}

TEST(DecodeFrontend, CopyDataAndCopyFail) {
  const auto data_in = frame('d', ByteBuilder().raw(std::string_view("a\0b\n", 4)));
  const auto d = decode(data_in);
  EXPECT_EQ(as<CopyData>(d).data, std::string_view("a\0b\n", 4));
  const auto fail_in = frame('f', ByteBuilder().cstr("client gave up"));
  const auto f = decode(fail_in);
  EXPECT_EQ(as<CopyFail>(f).message, "client gave up");
}

TEST(DecodeFrontend, FunctionCallIsFramedForRefusal) {
  const auto in =
      frame('F', ByteBuilder().i32(1598).i16(1).i16(0).i16(2).i32(1).raw("x").i32(-1).i16(1));
  const auto d = decode(in);
  EXPECT_TRUE(std::holds_alternative<FunctionCall>(d.message));
  EXPECT_EQ(d.consumed, in.size());
}

// ---------------------------------------------------------------------------
// Split and merged buffers

struct Sample {
  const char* name;
  std::vector<uint8_t> bytes;
};

std::vector<Sample> samples() {
  return {
      {"Query", frame('Q', ByteBuilder().cstr("SELECT 1"))},
      {"Parse", frame('P', ByteBuilder().cstr("s").cstr("SELECT $1").i16(1).i32(23))},
      {"Bind", bind_sample()},
      {"Describe", frame('D', ByteBuilder().u8('S').cstr("s"))},
      {"Execute", frame('E', ByteBuilder().cstr("").i32(0))},
      {"Close", frame('C', ByteBuilder().u8('P').cstr("p"))},
      {"Sync", frame('S', ByteBuilder())},
      {"Flush", frame('H', ByteBuilder())},
      {"Terminate", frame('X', ByteBuilder())},
      {"Password", frame('p', ByteBuilder().cstr("pw"))},
      {"CopyData", frame('d', ByteBuilder().raw("1\t2\n"))},
      {"CopyDone", frame('c', ByteBuilder())},
      {"CopyFail", frame('f', ByteBuilder().cstr("no"))},
      {"FunctionCall", frame('F', ByteBuilder().i32(1).i16(0).i16(0).i16(0))},
  };
}

class EachMessage : public ::testing::TestWithParam<Sample> {};

TEST_P(EachMessage, EveryProperPrefixNeedsMore) {
  const auto& in = GetParam().bytes;
  for (size_t n = 0; n < in.size(); ++n) {
    const auto d = decode_frontend(std::span(in.data(), n), kMax);
    EXPECT_EQ(d.status, DecodeStatus::need_more) << "prefix " << n << ": " << d.error;
    EXPECT_EQ(d.consumed, 0u);
  }
  const auto d = decode(in);
  EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(d.consumed, in.size());
}

TEST_P(EachMessage, FedByteByByteThroughABufferDecodesOnce) {
  // The caller's loop: append what arrived, decode, drop what was consumed.
  const auto& in = GetParam().bytes;
  std::vector<uint8_t> buffer;
  int decoded = 0;
  for (uint8_t byte : in) {
    buffer.push_back(byte);
    const auto d = decode(buffer);
    ASSERT_NE(d.status, DecodeStatus::error) << d.error;
    if (d.status == DecodeStatus::ok) {
      ++decoded;
      buffer.erase(buffer.begin(), buffer.begin() + std::ptrdiff_t(d.consumed));
    }
  }
  EXPECT_EQ(decoded, 1);
  EXPECT_TRUE(buffer.empty());
}

TEST_P(EachMessage, LengthZeroToThreeIsRefusedFromTheHeader) {
  const char type = static_cast<char>(GetParam().bytes[0]);
  for (uint32_t len = 0; len < 4; ++len) {
    expect_error(decode(frame_with_length(type, len, ByteBuilder())), "invalid length");
  }
}

TEST_P(EachMessage, TwoGibLengthIsRefusedFromTheHeader) {
  const char type = static_cast<char>(GetParam().bytes[0]);
  expect_error(decode(frame_with_length(type, 0x80000000u, ByteBuilder())), "invalid length");
  expect_error(decode(frame_with_length(type, 0xFFFFFFFFu, ByteBuilder())), "invalid length");
  expect_error(decode(frame_with_length(type, 0x7FFFFFFFu, ByteBuilder())), "exceeds");
}

TEST_P(EachMessage, LengthAboveMaxIsRefusedFromTheFiveByteHeader) {
  const char type = static_cast<char>(GetParam().bytes[0]);
  const auto d = decode(frame_with_length(type, uint32_t(kMax + 1), ByteBuilder()), kMax);
  expect_error(d, "message of 1048577 bytes exceeds max_message_size 1048576");
}

TEST_P(EachMessage, OwnLengthAsMaxIsAccepted) {
  const auto& in = GetParam().bytes;
  const auto d = decode(in, in.size() - 1);  // max_len counts the length field, not the type
  EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
  expect_error(decode(in, in.size() - 2), "exceeds max_message_size");
}

/// The sample with its length field rewritten to match `in.size() - 1`.
void fix_length(std::vector<uint8_t>& in) {
  const uint32_t len = uint32_t(in.size() - 1);
  in[1] = uint8_t(len >> 24), in[2] = uint8_t(len >> 16), in[3] = uint8_t(len >> 8),
  in[4] = uint8_t(len);
}

bool opaque_body(uint8_t type) {
  return type == 'p' || type == 'd';
}

TEST_P(EachMessage, TrailingByteInsideTheLengthIsRefused) {
  auto in = GetParam().bytes;
  in.push_back(0);
  fix_length(in);
  const auto d = decode(in);
  if (opaque_body(in[0])) {
    // PasswordMessage and CopyData bodies are opaque: one more byte is data.
    EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
    EXPECT_EQ(d.consumed, in.size());
    return;
  }
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_EQ(d.consumed, 0u);
}

TEST_P(EachMessage, BodyOneByteShortIsRefused) {
  // The same message with its last byte dropped and the length fixed to match
  // (for an empty body: a length of 3).
  auto in = GetParam().bytes;
  if (in.size() == 5) {
    in[4] = 3;
  } else {
    in.pop_back();
    fix_length(in);
  }
  const auto d = decode(in);
  if (opaque_body(in[0])) {
    EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
    return;
  }
  EXPECT_EQ(d.status, DecodeStatus::error) << "decoded a truncated " << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Types, EachMessage, ::testing::ValuesIn(samples()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DecodeFrontend, MergedMessagesAdvanceConsumedExactly) {
  std::vector<uint8_t> stream;
  std::vector<size_t> sizes;
  for (const auto& s : samples()) {
    stream.insert(stream.end(), s.bytes.begin(), s.bytes.end());
    sizes.push_back(s.bytes.size());
  }
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto d = decode_frontend(std::span(stream).subspan(offset), kMax);
    ASSERT_EQ(d.status, DecodeStatus::ok) << samples()[i].name << ": " << d.error;
    EXPECT_EQ(d.consumed, sizes[i]) << samples()[i].name;
    offset += d.consumed;
  }
  EXPECT_EQ(offset, stream.size());
  EXPECT_EQ(decode_frontend(std::span(stream).subspan(offset), kMax).status,
            DecodeStatus::need_more);
}

TEST(DecodeFrontend, MergedStreamSplitAtEveryPointDecodesTheSameMessages) {
  const auto stream =
      concat({frame('P', ByteBuilder().cstr("").cstr("SELECT $1").i16(0)), bind_sample(),
              frame('E', ByteBuilder().cstr("").i32(0)), frame('S', ByteBuilder())});
  for (size_t split = 0; split <= stream.size(); ++split) {
    std::vector<uint8_t> buffer(stream.begin(), stream.begin() + std::ptrdiff_t(split));
    std::vector<size_t> types;
    auto drain = [&] {
      while (true) {
        const auto d = decode(buffer);
        ASSERT_NE(d.status, DecodeStatus::error) << d.error;
        if (d.status == DecodeStatus::need_more) return;
        types.push_back(d.message.index());
        buffer.erase(buffer.begin(), buffer.begin() + std::ptrdiff_t(d.consumed));
      }
    };
    drain();
    buffer.insert(buffer.end(), stream.begin() + std::ptrdiff_t(split), stream.end());
    drain();
    EXPECT_TRUE(buffer.empty()) << "split " << split;
    EXPECT_EQ(types, (std::vector<size_t>{
                         FrontendMessage(Parse{}).index(), FrontendMessage(Bind{}).index(),
                         FrontendMessage(Execute{}).index(), FrontendMessage(Sync{}).index()}))
        << "split " << split;
  }
}

// ---------------------------------------------------------------------------
// Header rules

TEST(DecodeFrontend, UnknownTypeByteIsRefusedFromTheFirstByte) {
  std::vector<uint8_t> in{'z'};
  expect_error(decode(in), "unknown frontend message type 'z'");
  in = {0x00};
  expect_error(decode(in), "unknown frontend message type 0x00");
  // Backend-only types are not frontend messages.
  in = {'T'};
  expect_error(decode(in), "'T'");
}

TEST(DecodeFrontend, EmptyInputNeedsMore) {
  EXPECT_EQ(decode({}).status, DecodeStatus::need_more);
}

class FixedSize : public ::testing::TestWithParam<char> {};

TEST_P(FixedSize, LengthMustBeExactlyFour) {
  expect_error(decode(frame_with_length(GetParam(), 5, ByteBuilder())), "must be 4");
  expect_error(decode(frame_with_length(GetParam(), 1000, ByteBuilder())), "must be 4");
}
INSTANTIATE_TEST_SUITE_P(Types, FixedSize, ::testing::Values('S', 'H', 'X', 'c'));

struct Minimum {
  char type;
  uint32_t min;
};
class BelowMinimum : public ::testing::TestWithParam<Minimum> {};

TEST_P(BelowMinimum, IsRefusedFromTheHeader) {
  const auto [type, min] = GetParam();
  expect_error(decode(frame_with_length(type, min - 1, ByteBuilder())), "at least");
  // At the minimum the header is fine and the decoder waits for the body.
  EXPECT_EQ(decode(frame_with_length(type, min, ByteBuilder())).status, DecodeStatus::need_more);
}
INSTANTIATE_TEST_SUITE_P(Types, BelowMinimum,
                         ::testing::Values(Minimum{'Q', 5}, Minimum{'P', 8}, Minimum{'B', 12},
                                           Minimum{'D', 6}, Minimum{'E', 9}, Minimum{'C', 6},
                                           Minimum{'f', 5}, Minimum{'F', 14}));

TEST(DecodeFrontend, PeekLengthReadsACompleteHeaderOnly) {
  const auto in = frame('Q', ByteBuilder().cstr("x"));
  EXPECT_EQ(peek_length(std::span(in.data(), 4)), std::nullopt);
  EXPECT_EQ(peek_length(std::span(in.data(), 5)), 6u);
}

// ---------------------------------------------------------------------------
// Body rules

struct Malformed {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* needle;
};

class MalformedBody : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedBody, IsRefused) {
  const auto d = decode(GetParam().bytes);
  expect_error(d, GetParam().needle);
}

std::vector<Malformed> malformed_bodies() {
  return {
      {"QueryWithoutNul", frame('Q', ByteBuilder().raw("SELECT 1")), "not NUL-terminated"},
      {"QueryTrailing", frame('Q', ByteBuilder().cstr("SELECT 1").u8('x')), "1 trailing bytes"},
      {"ParseNameWithoutNul", frame('P', ByteBuilder().raw("abcdefgh")), "not NUL-terminated"},
      {"ParseSqlWithoutNul", frame('P', ByteBuilder().cstr("s").raw("SELECT 1")),
       "not NUL-terminated"},
      {"ParseNegativeCount", frame('P', ByteBuilder().cstr("").cstr("x").i16(-1)),
       "negative parameter type count"},
      {"ParseCountLargerThanBody",
       frame('P', ByteBuilder().cstr("").cstr("x").i16(3).i32(23).i32(23)), "3 parameter types"},
      {"ParseCountSmallerThanBody",
       frame('P', ByteBuilder().cstr("").cstr("x").i16(1).i32(23).i32(23)), "1 parameter types"},
      {"ParseMissingCount", frame('P', ByteBuilder().cstr("").cstr("x").u8(0)),
       "missing parameter type count"},
      {"BindPortalWithoutNul", frame('B', ByteBuilder().raw("portalname12")), "not NUL-terminated"},
      {"BindNegativeFormatCount", frame('B', ByteBuilder().cstr("").cstr("").i16(-1).i16(0).i16(0)),
       "negative parameter format count"},
      {"BindFormatCountLargerThanBody",
       frame('B', ByteBuilder().cstr("").cstr("").i16(100).i16(0).i16(0)), "exceed the message"},
      {"BindFormatCodeTwo", frame('B', ByteBuilder().cstr("").cstr("").i16(1).i16(2).i16(0).i16(0)),
       "unsupported format code 2"},
      {"BindNegativeParamCount", frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(-2).i16(0)),
       "negative parameter count"},
      {"BindParamCountLargerThanBody",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1000).i16(0)), "exceed the message"},
      {"BindParamLengthMinusTwo",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1).i32(-2).i16(0)),
       "parameter 1 has length -2"},
      {"BindParamLengthMinInt",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1).i32(INT32_MIN).i16(0)),
       "has length"},
      {"BindParamLengthPastTheEnd",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1).i32(10).raw("abc").i16(0)),
       "exceeds the message"},
      {"BindParamLengthHuge",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1).i32(INT32_MAX).i16(0)),
       "exceeds the message"},
      {"BindMissingResultCount",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(1).i32(1).raw("a").u8(0)),
       "missing result format count"},
      {"BindNegativeResultCount", frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(0).i16(-1)),
       "negative result format count"},
      {"BindResultCountLargerThanBody",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(0).i16(2).i16(0)), "2 result formats"},
      {"BindResultFormatCodeMinusOne",
       frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(0).i16(1).i16(-1)),
       "unsupported format code -1"},
      {"BindTrailing", frame('B', ByteBuilder().cstr("").cstr("").i16(0).i16(0).i16(0).u8(0)),
       "0 result formats"},
      {"DescribeKindX", frame('D', ByteBuilder().u8('X').cstr("")), "neither 'S' nor 'P'"},
      {"DescribeNameWithoutNul", frame('D', ByteBuilder().u8('S').raw("ab")), "not NUL-terminated"},
      {"DescribeTrailing", frame('D', ByteBuilder().u8('S').cstr("a").u8(1)), "trailing"},
      {"CloseKindLowercase", frame('C', ByteBuilder().u8('s').cstr("")), "neither 'S' nor 'P'"},
      {"CloseTrailing", frame('C', ByteBuilder().u8('P').cstr("").cstr("")), "trailing"},
      {"ExecutePortalWithoutNul", frame('E', ByteBuilder().raw("abcde")), "not NUL-terminated"},
      {"ExecuteShortLimit", frame('E', ByteBuilder().cstr("abcd").i16(0)), "missing row limit"},
      {"ExecuteTrailing", frame('E', ByteBuilder().cstr("").i32(0).u8(0)), "trailing"},
      {"CopyFailWithoutNul", frame('f', ByteBuilder().raw("oops")), "not NUL-terminated"},
      {"CopyFailTrailing", frame('f', ByteBuilder().cstr("a").u8('b')), "trailing"},
      {"FunctionCallBadArgLength", frame('F', ByteBuilder().i32(1).i16(0).i16(1).i32(-2).i16(0)),
       "bad argument length"},
      {"FunctionCallArgCountLargerThanBody", frame('F', ByteBuilder().i32(1).i16(0).i16(5).i16(0)),
       "bad argument count"},
      {"FunctionCallResultFormatTwo", frame('F', ByteBuilder().i32(1).i16(0).i16(0).i16(2)),
       "bad result format"},
  };
}

INSTANTIATE_TEST_SUITE_P(Bodies, MalformedBody, ::testing::ValuesIn(malformed_bodies()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// SASLInitialResponse

TEST(ParseSaslInitial, MechanismAndData) {
  const auto body =
      test::as_string(ByteBuilder().cstr("SCRAM-SHA-256").i32(5).raw("n,,ab").bytes());
  const auto s = parse_sasl_initial(body);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->mechanism, "SCRAM-SHA-256");
  EXPECT_EQ(s->data, std::optional<std::string_view>("n,,ab"));
}

TEST(ParseSaslInitial, MinusOneLengthMeansNoData) {
  const auto body = test::as_string(ByteBuilder().cstr("SCRAM-SHA-256").i32(-1).bytes());
  const auto s = parse_sasl_initial(body);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->data, std::nullopt);
}

TEST(ParseSaslInitial, MalformedBodiesAreRefused) {
  for (const auto& b : {ByteBuilder().raw("SCRAM-SHA-256"),                     // no NUL
                        ByteBuilder().cstr("SCRAM-SHA-256").i16(0),             // short length
                        ByteBuilder().cstr("SCRAM-SHA-256").i32(6).raw("abc"),  // past the end
                        ByteBuilder().cstr("SCRAM-SHA-256").i32(1).raw("ab"),   // trailing
                        ByteBuilder().cstr("SCRAM-SHA-256").i32(-1).u8(0),      // trailing
                        ByteBuilder().cstr("SCRAM-SHA-256").i32(-2)}) {
    EXPECT_FALSE(parse_sasl_initial(test::as_string(b.bytes())));
  }
}

}  // namespace
}  // namespace wirepool::pg
