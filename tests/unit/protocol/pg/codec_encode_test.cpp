// Encoding of PostgreSQL v3 backend messages (protocol/pg/codec.hpp Encoder).
//
// Cases:
// - byte-exact output of every message type: authentication (Ok, SASL,
//   SASLContinue, SASLFinal), ParameterStatus, BackendKeyData,
//   NegotiateProtocolVersion, ReadyForQuery, RowDescription,
//   ParameterDescription, the empty-bodied completions, CommandComplete,
//   ErrorResponse/NoticeResponse (field order S V C M D H P, empty fields left
//   out, NUL terminator), NotificationResponse, CopyIn/CopyOutResponse,
//   CopyData, CopyDone, the single-byte SSL answer;
// - DataRow built with null_field / field / begin_field+end_field, the length
//   prefixes patched in place, appended after earlier output;
// - a NUL inside a C-string field is cut there instead of breaking the frame;
// - several messages appended back to back frame correctly.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/pg/codec.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"

namespace wirepool::pg {
namespace {

using test::ByteBuilder;
using test::frame;

std::string framed(char type, const ByteBuilder& body) {
  return test::as_string(frame(type, body));
}

TEST(Encoder, SslResponseIsOneByte) {
  std::string out;
  Encoder(out).ssl_response('N');
  EXPECT_EQ(out, "N");
}

TEST(Encoder, AuthenticationMessages) {
  std::string out;
  Encoder e(out);
  e.auth_ok();
  EXPECT_EQ(out, std::string("R\0\0\0\x08\0\0\0\0", 9));

  out.clear();
  const std::string_view mechs[] = {"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"};
  e.auth_sasl(mechs);
  EXPECT_EQ(
      out,
      framed('R', ByteBuilder().i32(10).cstr("SCRAM-SHA-256-PLUS").cstr("SCRAM-SHA-256").u8(0)));

  out.clear();
  e.auth_sasl_continue("r=abc,s=c2FsdA==,i=4096");
  EXPECT_EQ(out, framed('R', ByteBuilder().i32(11).raw("r=abc,s=c2FsdA==,i=4096")));

  out.clear();
  e.auth_sasl_final("v=xyz");
  EXPECT_EQ(out, framed('R', ByteBuilder().i32(12).raw("v=xyz")));
}

TEST(Encoder, ParameterStatusAndBackendKeyData) {
  std::string out;
  Encoder e(out);
  e.parameter_status("server_version", "15.0");
  e.backend_key_data(1234, -1);
  EXPECT_EQ(out, framed('S', ByteBuilder().cstr("server_version").cstr("15.0")) +
                     framed('K', ByteBuilder().i32(1234).i32(-1)));
}

TEST(Encoder, NegotiateProtocolVersionListsUnrecognizedOptions) {
  std::string out;
  const std::string_view opts[] = {"_pq_.compression"};
  Encoder(out).negotiate_protocol_version(0, opts);
  EXPECT_EQ(out, framed('v', ByteBuilder().i32(0).i32(1).cstr("_pq_.compression")));
}

TEST(Encoder, ReadyForQuery) {
  std::string out;
  Encoder(out).ready_for_query('T');
  EXPECT_EQ(out, std::string("Z\0\0\0\x05T", 6));
}

TEST(Encoder, RowDescriptionFieldsInWireOrder) {
  std::string out;
  const FieldDescription fields[] = {
      {"id", 16384, 1, 23, 4, -1, 0},
      {"price", 0, 0, 1700, -1, (10 << 16 | 2) + 4, 1},
  };
  Encoder(out).row_description(fields);
  EXPECT_EQ(out, framed('T', ByteBuilder()
                                 .i16(2)
                                 .cstr("id")
                                 .i32(16384)
                                 .i16(1)
                                 .i32(23)
                                 .i16(4)
                                 .i32(-1)
                                 .i16(0)
                                 .cstr("price")
                                 .i32(0)
                                 .i16(0)
                                 .i32(1700)
                                 .i16(-1)
                                 .i32(655366)
                                 .i16(1)));
}

TEST(Encoder, ParameterDescription) {
  std::string out;
  const uint32_t oids[] = {23, 25};
  Encoder(out).parameter_description(oids);
  EXPECT_EQ(out, framed('t', ByteBuilder().i16(2).i32(23).i32(25)));
}

TEST(Encoder, EmptyBodiedMessages) {
  std::string out;
  Encoder e(out);
  e.no_data();
  e.parse_complete();
  e.bind_complete();
  e.close_complete();
  e.portal_suspended();
  e.empty_query_response();
  e.copy_done();
  std::string want;
  for (char t : {'n', '1', '2', '3', 's', 'I', 'c'})
    want += framed(t, ByteBuilder());
  EXPECT_EQ(out, want);
}

TEST(Encoder, CommandComplete) {
  std::string out;
  Encoder(out).command_complete("INSERT 0 3");
  EXPECT_EQ(out, framed('C', ByteBuilder().cstr("INSERT 0 3")));
}

TEST(Encoder, ErrorResponseFieldsInOrderWithSeverityTwice) {
  std::string out;
  ErrorFields f;
  f.severity = "ERROR";
  f.sqlstate = "42P01";
  f.message = "relation \"t\" does not exist";
  f.detail = "d";
  f.hint = "h";
  f.position = 15;
  Encoder(out).error_response(f);
  EXPECT_EQ(out, framed('E', ByteBuilder()
                                 .u8('S')
                                 .cstr("ERROR")
                                 .u8('V')
                                 .cstr("ERROR")
                                 .u8('C')
                                 .cstr("42P01")
                                 .u8('M')
                                 .cstr("relation \"t\" does not exist")
                                 .u8('D')
                                 .cstr("d")
                                 .u8('H')
                                 .cstr("h")
                                 .u8('P')
                                 .cstr("15")
                                 .u8(0)));
}

TEST(Encoder, ErrorResponseLeavesOutEmptyFields) {
  std::string out;
  ErrorFields f;
  f.sqlstate = "28P01";
  f.severity = "FATAL";
  f.message = "password authentication failed for user \"x\"";
  Encoder(out).error_response(f);
  EXPECT_EQ(out, framed('E', ByteBuilder()
                                 .u8('S')
                                 .cstr("FATAL")
                                 .u8('V')
                                 .cstr("FATAL")
                                 .u8('C')
                                 .cstr("28P01")
                                 .u8('M')
                                 .cstr("password authentication failed for user \"x\"")
                                 .u8(0)));
}

TEST(Encoder, NoticeResponseUsesTypeN) {
  std::string out;
  ErrorFields f;
  f.severity = "WARNING";
  f.sqlstate = "01000";
  f.message = "careful";
  Encoder(out).notice_response(f);
  EXPECT_EQ(out, framed('N', ByteBuilder()
                                 .u8('S')
                                 .cstr("WARNING")
                                 .u8('V')
                                 .cstr("WARNING")
                                 .u8('C')
                                 .cstr("01000")
                                 .u8('M')
                                 .cstr("careful")
                                 .u8(0)));
}

TEST(Encoder, NulInsideAStringFieldIsCutThere) {
  std::string out;
  Encoder e(out);
  e.command_complete(std::string_view("SELECT 1\0junk", 13));
  ErrorFields f;
  f.message = std::string_view("bad\0rest", 8);
  e.error_response(f);
  EXPECT_EQ(out, framed('C', ByteBuilder().cstr("SELECT 1")) + framed('E', ByteBuilder()
                                                                               .u8('S')
                                                                               .cstr("ERROR")
                                                                               .u8('V')
                                                                               .cstr("ERROR")
                                                                               .u8('C')
                                                                               .cstr("XX000")
                                                                               .u8('M')
                                                                               .cstr("bad")
                                                                               .u8(0)));
}

TEST(Encoder, NotificationResponse) {
  std::string out;
  Encoder(out).notification_response(77, "chan", "payload");
  EXPECT_EQ(out, framed('A', ByteBuilder().i32(77).cstr("chan").cstr("payload")));
}

TEST(Encoder, CopyResponsesAndData) {
  std::string out;
  Encoder e(out);
  const int16_t formats[] = {0, 0};
  e.copy_in_response(0, formats);
  e.copy_out_response(1, formats);
  e.copy_data("1\t2\n");
  EXPECT_EQ(out, framed('G', ByteBuilder().u8(0).i16(2).i16(0).i16(0)) +
                     framed('H', ByteBuilder().u8(1).i16(2).i16(0).i16(0)) +
                     framed('d', ByteBuilder().raw("1\t2\n")));
}

TEST(Encoder, DataRowPatchesFieldAndMessageLengths) {
  std::string out = "prefix";  // earlier output stays untouched
  Encoder e(out);
  e.begin_data_row(4);
  e.null_field();
  e.field("abc");
  e.begin_field();
  e.buffer().append("12345");
  e.end_field();
  e.begin_field();  // an empty, non-NULL value
  e.end_field();
  e.end_data_row();
  EXPECT_EQ(
      out,
      "prefix" +
          framed('D', ByteBuilder().i16(4).i32(-1).i32(3).raw("abc").i32(5).raw("12345").i32(0)));
}

TEST(Encoder, ConsecutiveDataRowsFrameIndependently) {
  std::string out;
  Encoder e(out);
  for (int i = 0; i < 3; ++i) {
    e.begin_data_row(1);
    e.begin_field();
    e.buffer().append(std::to_string(i * 100));
    e.end_field();
    e.end_data_row();
  }
  EXPECT_EQ(out, framed('D', ByteBuilder().i16(1).i32(1).raw("0")) +
                     framed('D', ByteBuilder().i16(1).i32(3).raw("100")) +
                     framed('D', ByteBuilder().i16(1).i32(3).raw("200")));
}

}  // namespace
}  // namespace wirepool::pg
