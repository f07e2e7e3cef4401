#pragma once
// PostgreSQL v3 wire protocol, sans-I/O (after Asio's request_parser, Odyssey's
// kiwi and h11): decoders take a byte span and answer {message, need more bytes,
// protocol error} with how many bytes they consumed; encoders append to a
// buffer. No sockets, no timers, no logging here.
//
// Decoded messages hold views into the input span: they are valid until the
// caller discards or moves those bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace wirepool::pg {

using Bytes = std::span<const uint8_t>;

inline constexpr uint32_t kProtocol30 = 196608;  // 3.0
inline constexpr uint32_t kSslRequestCode = 80877103;
inline constexpr uint32_t kGssEncRequestCode = 80877104;
inline constexpr uint32_t kCancelRequestCode = 80877102;
/// PostgreSQL's own limit on a startup packet (MAX_STARTUP_PACKET_LENGTH).
inline constexpr size_t kMaxStartupPacket = 10000;

enum class DecodeStatus : uint8_t { ok, need_more, error };

/// The outcome of one decode call.
template <class M>
struct Decoded {
  DecodeStatus status = DecodeStatus::need_more;
  M message{};
  size_t consumed = 0;  ///< bytes of the input that make up `message` (0 unless ok)
  std::string error;    ///< what was wrong (status == error), for the client and the log
};

// ---------------------------------------------------------------------------
// Startup phase: a length-prefixed packet without a type byte.

struct StartupMessage {
  uint32_t protocol = 0;  ///< major << 16 | minor
  /// name/value pairs in the order sent (user, database, options, application_name, ...)
  std::vector<std::pair<std::string_view, std::string_view>> params;
  std::optional<std::string_view> get(std::string_view name) const;
};
struct SslRequest {};
struct GssEncRequest {};
struct CancelRequest {
  int32_t pid = 0;
  int32_t secret = 0;
};
using StartupPacket = std::variant<StartupMessage, SslRequest, GssEncRequest, CancelRequest>;

/// Decodes the first packet of a connection. Rejects lengths below 8 or above
/// `max_len`, a missing terminator, a parameter without a value and trailing bytes.
Decoded<StartupPacket> decode_startup(Bytes in, size_t max_len = kMaxStartupPacket);

// ---------------------------------------------------------------------------
// Frontend messages: type byte, int32 length (including itself), body.

struct Query {
  std::string_view sql;
};              // 'Q'
struct Parse {  // 'P'
  std::string_view name;
  std::string_view sql;
  std::vector<uint32_t> param_types;
};
struct Bind {  // 'B'
  std::string_view portal;
  std::string_view statement;
  std::vector<int16_t> param_formats;                   ///< 0, 1 (all) or one per parameter
  std::vector<std::optional<std::string_view>> params;  ///< nullopt = NULL (length -1)
  std::vector<int16_t> result_formats;                  ///< 0, 1 (all) or one per column
};
struct Describe {
  char kind = 'S';
  std::string_view name;
};  // 'D': 'S' or 'P'
struct Execute {
  std::string_view portal;
  int32_t max_rows = 0;
};  // 'E': 0 = all
struct Close {
  char kind = 'S';
  std::string_view name;
};                    // 'C': 'S' or 'P'
struct Sync {};       // 'S'
struct Flush {};      // 'H'
struct Terminate {};  // 'X'
/// 'p': PasswordMessage, SASLInitialResponse or SASLResponse; which one depends
/// on the authentication state, so the body is parsed by parse_sasl_*().
struct PasswordMessage {
  std::string_view data;
};
struct CopyData {
  std::string_view data;
};                   // 'd'
struct CopyDone {};  // 'c'
struct CopyFail {
  std::string_view message;
};                       // 'f'
struct FunctionCall {};  // 'F' (refused)

using FrontendMessage =
    std::variant<Query, Parse, Bind, Describe, Execute, Close, Sync, Flush, Terminate,
                 PasswordMessage, CopyData, CopyDone, CopyFail, FunctionCall>;

/// Decodes one frontend message. A length below 4, above `max_len` (the
/// configured max_message_size), an unknown type byte, a malformed body or
/// trailing bytes inside the declared length are errors. Only the header is
/// needed to reject an oversized length: the body is never awaited.
Decoded<FrontendMessage> decode_frontend(Bytes in, size_t max_len);

/// The message length announced by a complete header at the start of `in`
/// (type byte + int32), or nullopt if fewer than 5 bytes are there.
std::optional<uint32_t> peek_length(Bytes in);

/// SASLInitialResponse: mechanism name, then int32 length (-1 = none) and data.
struct SaslInitialResponse {
  std::string_view mechanism;
  std::optional<std::string_view> data;
};
std::optional<SaslInitialResponse> parse_sasl_initial(std::string_view body);

// ---------------------------------------------------------------------------
// Backend messages

/// One field of a RowDescription.
struct FieldDescription {
  std::string_view name;
  uint32_t table_oid = 0;
  int16_t column = 0;
  uint32_t type_oid = 25;
  int16_t type_size = -1;
  int32_t type_modifier = -1;
  int16_t format = 0;  ///< 0 text, 1 binary
};

/// ErrorResponse / NoticeResponse fields (empty ones are not sent).
struct ErrorFields {
  std::string_view severity = "ERROR";  ///< ERROR, FATAL, PANIC / WARNING, NOTICE, ...
  std::string_view sqlstate = "XX000";
  std::string_view message;
  std::string_view detail;
  std::string_view hint;
  int32_t position = 0;  ///< 1-based character position in the query, 0 = none
  /// More fields as the server sent them (code byte, text, NUL each), appended.
  std::string_view more;
};

/// Appends backend messages to `out`. Every call appends one complete message.
class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}

  void ssl_response(char answer);  ///< single byte 'S' or 'N' (not a message)
  void auth_ok();
  void auth_cleartext();  ///< AuthenticationCleartextPassword
  void auth_sasl(std::span<const std::string_view> mechanisms);
  void auth_sasl_continue(std::string_view data);
  void auth_sasl_final(std::string_view data);
  void parameter_status(std::string_view name, std::string_view value);
  void backend_key_data(int32_t pid, int32_t secret);
  void negotiate_protocol_version(uint32_t newest_minor,
                                  std::span<const std::string_view> unrecognized);
  void ready_for_query(char status);  ///< 'I' idle, 'T' in transaction, 'E' failed transaction
  void row_description(std::span<const FieldDescription> fields);
  void parameter_description(std::span<const uint32_t> oids);
  void no_data();
  void parse_complete();
  void bind_complete();
  void close_complete();
  void portal_suspended();
  void empty_query_response();
  void command_complete(std::string_view tag);
  void error_response(const ErrorFields& e);
  void notice_response(const ErrorFields& e);
  void notification_response(int32_t pid, std::string_view channel, std::string_view payload);
  void copy_in_response(int8_t format, std::span<const int16_t> column_formats);
  void copy_out_response(int8_t format, std::span<const int16_t> column_formats);
  void copy_data(std::string_view data);
  void copy_done();

  // DataRow, built field by field without an intermediate copy:
  //   begin_data_row(n); for each field: null_field() or begin_field(), append
  //   bytes to buffer(), end_field(); then end_data_row().
  void begin_data_row(int16_t fields);
  void null_field();
  void field(std::string_view bytes);
  void begin_field();
  void end_field();
  void end_data_row();
  std::string& buffer() { return out_; }

 private:
  void begin(char type);
  void end();
  void put_u8(uint8_t v);
  void put_i16(int16_t v);
  void put_i32(int32_t v);
  void put_cstr(std::string_view s);
  void put_bytes(std::string_view s);

  std::string& out_;
  size_t msg_start_ = 0;
  size_t field_start_ = 0;
};

}  // namespace wirepool::pg
