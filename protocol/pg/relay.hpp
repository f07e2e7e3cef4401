#pragma once
// The relay's sans-I/O half (docs/protocol-postgres.md, "The relay"): a
// PostgreSQL client's messages go to a PostgreSQL backend as bytes, with only
// statement names rewritten, and the server's answers come back as bytes.
// Here: framing a batch of client messages, the light parses and encoders the
// rewrites need, and the tracker that follows the server's answers (which of
// them the client gets, which answer a message wirepool added, and which one
// ends the exchange). No sockets, no state beyond one exchange.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/pg/codec.hpp"

namespace wirepool::pg::relay {

/// One complete message in a buffer.
struct Frame {
  char type = 0;
  size_t offset = 0;  ///< of the type byte
  size_t size = 0;    ///< type byte, length field and body
  std::string_view body(Bytes buf) const {
    return {reinterpret_cast<const char*>(buf.data()) + offset + 5, size - 5};
  }
  std::string_view whole(Bytes buf) const {
    return {reinterpret_cast<const char*>(buf.data()) + offset, size};
  }
};

/// At most this many messages in one relayed batch (more go the ordinary way).
inline constexpr size_t kMaxBatch = 64;

enum class Scan : uint8_t {
  complete,    ///< `frames` holds the batch
  incomplete,  ///< the batch has not fully arrived
  unsuitable,  ///< a message the relay does not take, a bad length, too many messages
};

/// The batch at the start of `in`: Parse, Bind, Describe, Execute and Close
/// messages up to and including the first Sync, or one Query on its own.
/// Lengths are checked as decode_frontend checks them (below 4 or above
/// `max_len`: unsuitable, so that the ordinary path reports the error).
Scan scan_batch(Bytes in, size_t max_len, std::vector<Frame>& frames);

// ---- light parses of client messages (views into `body`; false: malformed)

struct ParseMsg {
  std::string_view name;
  std::string_view sql;
  std::string_view types;  ///< the parameter-type count and OIDs as sent
  std::vector<uint32_t> oids;
};
bool parse_parse(std::string_view body, ParseMsg& out);

struct BindMsg {
  std::string_view portal;
  std::string_view statement;
  std::string_view rest;  ///< formats, values, result formats: passed as sent
};
bool parse_bind(std::string_view body, BindMsg& out);

/// Describe and Close: 'S' (statement) or 'P' (portal), and the name.
struct TargetMsg {
  char kind = 0;
  std::string_view name;
};
bool parse_target(std::string_view body, TargetMsg& out);

struct ExecuteMsg {
  std::string_view portal;
  int32_t max_rows = 0;
};
bool parse_execute(std::string_view body, ExecuteMsg& out);

// ---- encoders (append to `out`)

void put_parse(std::string& out, std::string_view name, std::string_view sql,
               std::span<const uint32_t> oids);
void put_bind(std::string& out, std::string_view portal, std::string_view statement,
              std::string_view rest);
/// Describe ('D') or Close ('C') of a statement or portal.
void put_target(std::string& out, char type, char kind, std::string_view name);

// ---- server answers

/// The value of field `code` ('S', 'V', 'C', 'M', ...) of an ErrorResponse or
/// NoticeResponse body; empty when absent.
std::string_view error_field(std::string_view body, char code);
/// Re-encodes an ErrorResponse body as a whole message with severity ERROR
/// (a FATAL or PANIC about the server's own session is, for the client, an
/// error of its statement: its connection to wirepool stays) and, when
/// `message` is not empty, that message.
void put_error_as_error(std::string& out, std::string_view body, std::string_view message);

/// What the server's answer to one relayed (or added) message looks like.
enum class Expect : uint8_t {
  parse,                ///< ParseComplete
  bind,                 ///< BindComplete
  describe_statement,   ///< ParameterDescription, then RowDescription or NoData
  describe_portal,      ///< RowDescription or NoData
  close,                ///< CloseComplete
  execute,              ///< DataRows, then CommandComplete, EmptyQuery or PortalSuspended
  sync,                 ///< ReadyForQuery
  query,                ///< anything but COPY, then ReadyForQuery
  swallow_parse,        ///< ParseComplete of a Parse wirepool added: not for the client
  swallow_close,        ///< CloseComplete of a Close wirepool added
  emit_parse_complete,  ///< no server message: ParseComplete for the client (statement known)
  emit_close_complete,  ///< no server message: CloseComplete for the client
};

/// Follows one batch's answers.
class Tracker {
 public:
  /// Starts a batch.
  void clear();
  /// The next answer expected. `tag` is reported by confirmed() when a parse
  /// or swallow_parse is answered with ParseComplete.
  void expect(Expect e, int tag = -1);
  /// Answers for the client that need no server message and are due now (the
  /// batch's first ones, or the ones after the message just handled).
  void emit_due(std::string& out);

  struct Step {
    bool forward = false;     ///< the message goes to the client
    bool done = false;        ///< it was the batch's ReadyForQuery
    bool unexpected = false;  ///< not an answer the batch can get: the link is unusable
  };
  /// One server message (its type: called once its header has arrived).
  Step on_message(char type);
  /// Tags of the Parses answered with ParseComplete, in order.
  const std::vector<int>& confirmed() const { return confirmed_; }
  bool failed() const { return failed_; }
  /// ParseCompletes emit_due has written for the client so far.
  int emitted_parses() const { return emitted_parses_; }

 private:
  struct Item {
    Expect what;
    int tag;
  };
  bool empty() const { return head_ == items_.size(); }
  Item& front() { return items_[head_]; }
  void pop() { ++head_; }
  std::vector<Item> items_;  // a vector and a head: no allocation per batch once warm
  size_t head_ = 0;
  std::vector<int> confirmed_;
  int emitted_parses_ = 0;
  bool failed_ = false;
};

}  // namespace wirepool::pg::relay
