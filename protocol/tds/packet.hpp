#pragma once
// TDS packets ([MS-TDS] 2.2.3), sans-I/O: the header, the assembly of a message
// from its packets and the writer that cuts a payload into packets (codec.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/tds/types.hpp"

namespace wirepool::tds {

// ---------------------------------------------------------------------------
// Packets ([MS-TDS] 2.2.3)

enum class PacketType : uint8_t {
  sql_batch = 1,
  pre_tds7_login = 2,  ///< refused
  rpc = 3,
  tabular_result = 4,
  attention = 6,
  bulk_load = 7,             ///< refused
  federated_auth_token = 8,  ///< refused
  transaction_manager = 14,
  login7 = 16,
  sspi = 17,  ///< refused
  prelogin = 18,
};
/// "SQL batch", "RPC", ... or "type N".
std::string packet_type_name(uint8_t type);
/// True for the types the assembler accepts (the refused ones are errors).
bool packet_type_supported(uint8_t type);

namespace status {
inline constexpr uint8_t kEom = 0x01;
inline constexpr uint8_t kIgnore = 0x02;
inline constexpr uint8_t kResetConnection = 0x08;
inline constexpr uint8_t kResetConnectionSkipTran = 0x10;
}  // namespace status

inline constexpr size_t kHeaderSize = 8;
inline constexpr uint32_t kMinPacketSize = 512;
inline constexpr uint32_t kMaxPacketSize = 32767;
/// Before LOGIN7 has negotiated a packet size the assembler accepts packets up
/// to kMaxPacketSize: PRELOGIN and LOGIN7 come before the negotiation and a
/// client may already use its own packet size for LOGIN7.
inline constexpr uint32_t kDefaultPacketSize = 4096;
/// The largest PRELOGIN or LOGIN7 message a server takes before login. [MS-TDS]
/// 2.2.6.4 allows a LOGIN7 of up to 128K-1 bytes, room for long SSPI blobs;
/// without them a LOGIN7 is its 94-byte fixed part, its names at their
/// [MS-TDS] maxima (128 characters each, 260 for AtchDBFile: 2,824 bytes in
/// UCS-2), the SSPI data decode_login7 still reads to refuse it clearly (8,000
/// bytes) and a few feature extensions: under 16 KiB. A PRELOGIN is smaller still.
inline constexpr size_t kMaxLoginMessage = 16 * 1024;

struct PacketHeader {
  uint8_t type = 0;
  uint8_t status = 0;
  uint16_t length = 0;  ///< including the header
  uint16_t spid = 0;
  uint8_t packet_id = 0;
  uint8_t window = 0;
};
/// The header at the start of `in` (no validation), or nullopt below 8 bytes.
std::optional<PacketHeader> peek_header(Bytes in);

/// True when `in` starts like a TLS handshake record (0x16 0x03): a TDS 8.0
/// client's ClientHello rather than a PRELOGIN packet.
bool looks_like_tls(Bytes in);

/// One whole client or server message.
struct Message {
  uint8_t type = 0;     ///< PacketType
  uint8_t status = 0;   ///< status of its first packet (RESETCONNECTION bits are there)
  std::string payload;  ///< the packets' payloads, concatenated
  bool reset_connection() const { return (status & status::kResetConnection) != 0; }
  bool reset_connection_skip_tran() const {
    return (status & status::kResetConnectionSkipTran) != 0;
  }
};

struct AssemblerLimits {
  /// The largest message (sum of payloads) accepted (server.max_message_size).
  size_t max_message = 64u << 20;
  /// Accept server-side packet types (tabular result) instead of client ones.
  bool from_server = false;
};

/// Reassembles messages from a byte stream split anywhere. Validates each
/// header as soon as its 8 bytes are there: length >= 8 and <= the packet size
/// limit, a known and accepted type, the same type on every packet of a
/// message, the message within max_message. A packet with the IGNORE bit on
/// its last (EOM) packet cancels the message: it is dropped ([MS-TDS] 2.2.3.1.2).
/// After an error the assembler stays in error (the connection must close).
class MessageAssembler {
 public:
  explicit MessageAssembler(AssemblerLimits limits = {}) : limits_(limits) {}
  ~MessageAssembler();
  MessageAssembler(const MessageAssembler&) = delete;
  MessageAssembler& operator=(const MessageAssembler&) = delete;

  /// On (the default) while the bytes may hold a password (a client's LOGIN7):
  /// memory the assembler frees or stops using is wiped first. Off after login.
  void set_wipe(bool on);

  /// The negotiated packet size (after LOGIN7 / ENVCHANGE 4), 512..32767.
  void set_packet_size(uint32_t size);
  uint32_t packet_size() const { return packet_size_; }
  /// Changes max_message (a server raises it from kMaxLoginMessage after login).
  void set_max_message(size_t bytes) { limits_.max_message = bytes; }

  /// Appends received bytes (any split). Nothing is parsed until next().
  void feed(Bytes in);
  void feed(std::string_view in) { feed(as_bytes(in)); }
  /// The next whole message: ok (into `out`), need_more, or error (`error` set).
  DecodeStatus next(Message& out, std::string& error);
  /// Bytes held (unparsed input plus a partial message).
  size_t buffered() const { return buf_.size() - pos_ + partial_.payload.size(); }
  /// True between messages with nothing buffered.
  bool idle() const { return buffered() == 0 && !in_message_; }
  /// Frees the buffers' memory (an idle client holds none).
  void shrink();

 private:
  AssemblerLimits limits_;
  uint32_t packet_size_ = kMaxPacketSize;
  std::string buf_;
  size_t pos_ = 0;
  Message partial_;
  bool in_message_ = false;
  bool wipe_ = true;
  std::string error_;
};

/// Frames message payloads into packets of at most the packet size.
class PacketWriter {
 public:
  /// 512..32767; values outside are clamped.
  void set_packet_size(uint32_t size);
  uint32_t packet_size() const { return packet_size_; }
  void set_spid(uint16_t spid) { spid_ = spid; }
  /// Appends `payload` as packets of `type`: EOM on the last one, packet ids
  /// counting up (mod 256) from 1 for each message; `first_status` (for
  /// example RESETCONNECTION) is or'ed into the first packet's status.
  void write(std::string& out, PacketType type, std::string_view payload,
             uint8_t first_status = 0) const;

 private:
  uint32_t packet_size_ = kDefaultPacketSize;
  uint16_t spid_ = 0;
};

}  // namespace wirepool::tds
