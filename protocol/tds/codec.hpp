#pragma once
// TDS 7.4 / 8.0 wire protocol, sans-I/O ([MS-TDS]): packets, PRELOGIN, LOGIN7,
// client requests (SQL batch, RPC, transaction manager, attention) and the
// server's token stream, in both directions so the front end (server/) and
// the SQL Server driver (backends/tds/) share one codec. Decoders take bytes and
// answer {ok, need_more, error} with what they consumed; encoders append to a
// std::string. No sockets, no timers, no logging here. docs/tds.md lists what
// is decoded, what is refused and why.
//
// Notes for the server side:
// - TDS 8.0 ("strict", tedious `encrypt: 'strict'`, ALPN tds/8.0): the client
//   starts TLS 1.3 at once; its first byte is a TLS handshake record (0x16, see
//   looks_like_tls()). After the handshake everything below runs inside TLS:
//   PRELOGIN (the answer's ENCRYPTION is informative; tedious 19 sends
//   ENCRYPTION = NOT_SUP there, see the strict_* captures), LOGIN7, requests.
// - TDS 7.x (FreeTDS, pytds, ODBC without strict): the client sends a cleartext
//   PRELOGIN; when both sides agree on encryption the TLS handshake records then
//   travel *inside* PRELOGIN packets (type 18) until TLS is established, and
//   after it TDS packets travel as TLS records. Wrapping and unwrapping those
//   handshake bytes is plain packet framing: PacketWriter::write(out,
//   PacketType::prelogin, tls_bytes) and MessageAssembler's payloads. The TDS
//   listener serves a 7.x client that completes TLS 1.3 so (tds-front-end.md).
// - A message's packets are assembled by header length and the EOM bit, never
//   by read boundaries; ATTENTION is an empty message of type 6.
// - Cancel: tedious 19 reads the cancelled request's response as one message
//   (up to EOM) and expects the attention acknowledgement — DONE with
//   done::kAttn — in the *next* message; an acknowledgement inside the same
//   message leaves it waiting until its cancel timeout (checked by
//   integration_tds_tedious).
// - The decoders of assembled messages (PRELOGIN, LOGIN7, SQL batch, RPC,
//   transaction manager) answer ok or error, never need_more: a message cut
//   short is malformed. Only TokenDecoder and decode_value stream.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
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

// ---------------------------------------------------------------------------
// PRELOGIN ([MS-TDS] 2.2.6.5)

namespace encrypt {
inline constexpr uint8_t kOff = 0x00;
inline constexpr uint8_t kOn = 0x01;
inline constexpr uint8_t kNotSup = 0x02;
inline constexpr uint8_t kReq = 0x03;
inline constexpr uint8_t kClientCertOff = 0x80;  ///< flag added to one of the above
}  // namespace encrypt

struct PreloginVersion {
  uint8_t major = 0;
  uint8_t minor = 0;
  uint16_t build = 0;
  uint16_t sub_build = 0;
};

/// The options a PRELOGIN carries (absent ones are nullopt).
struct Prelogin {
  std::optional<PreloginVersion> version;
  std::optional<uint8_t> encryption;
  std::optional<std::string> instance;   ///< INSTOPT bytes without the terminating NUL
  std::optional<std::string> thread_id;  ///< 0 or 4 bytes, raw
  std::optional<uint8_t> mars;
  std::optional<std::string> trace_id;  ///< 36 bytes: connection id, activity id, sequence
  std::optional<uint8_t> fed_auth_required;
  std::optional<std::string> nonce;  ///< 32 bytes
  /// Options with unknown tokens: kept as (token, data).
  std::vector<std::pair<uint8_t, std::string>> unknown;
};

/// Decodes a PRELOGIN payload: VERSION must be first, offsets and lengths must
/// lie inside the payload, the table must end with 0xFF. (The payload of an
/// assembled message; TLS-in-PRELOGIN payloads are not option tables.)
Decoded<Prelogin> decode_prelogin(Bytes payload);
/// Appends a PRELOGIN payload with the options present in `p`, in token order.
void encode_prelogin(std::string& out, const Prelogin& p);

/// The server's answer to `client`: VERSION `version`, ENCRYPTION `encryption`
/// (encrypt::kReq for the TDS 8.0 front end), INSTOPT 0 (a match), THREADID
/// empty, MARS 0 (not supported), FEDAUTHREQUIRED 0 only when the client sent it.
Prelogin prelogin_response(const Prelogin& client, uint8_t encryption, PreloginVersion version);
/// wirepool's version in SQL Server's form: 16.0.<build>.0 (SQL Server 2022's
/// major, so clients enable their 7.4 features; docs/tds.md).
PreloginVersion wirepool_prelogin_version();

// ---------------------------------------------------------------------------
// LOGIN7 ([MS-TDS] 2.2.6.4)

inline constexpr uint32_t kTds74 = 0x74000004;  ///< TDS 7.4 (what LOGINACK announces)
inline constexpr uint32_t kTds80 = 0x08000000;  ///< TDS 8.0 as a LOGIN7 may state it

namespace feature {
inline constexpr uint8_t kSessionRecovery = 0x01;
inline constexpr uint8_t kFedAuth = 0x02;
inline constexpr uint8_t kColumnEncryption = 0x04;
inline constexpr uint8_t kGlobalTransactions = 0x05;
inline constexpr uint8_t kAzureSqlSupport = 0x08;
inline constexpr uint8_t kDataClassification = 0x09;
inline constexpr uint8_t kUtf8Support = 0x0A;
inline constexpr uint8_t kAzureSqlDnsCaching = 0x0B;
inline constexpr uint8_t kJsonSupport = 0x0D;
inline constexpr uint8_t kVectorSupport = 0x0E;
inline constexpr uint8_t kTerminator = 0xFF;
}  // namespace feature
/// "UTF8_SUPPORT", ... or "0xNN".
std::string feature_name(uint8_t id);

struct FeatureExt {
  uint8_t id = 0;
  std::string data;
};

/// OptionFlags3 fExtension: the extension field points to a FeatureExt block.
inline constexpr uint8_t kOptionFlags3Extension = 0x10;
/// OptionFlags2 fIntSecurity: integrated (SSPI) authentication.
inline constexpr uint8_t kOptionFlags2IntSecurity = 0x80;

struct Login7 {
  uint32_t tds_version = kTds74;
  uint32_t packet_size = kDefaultPacketSize;
  uint32_t client_prog_ver = 0;
  uint32_t client_pid = 0;
  uint32_t connection_id = 0;
  uint8_t option_flags1 = 0xE0;  ///< fUseDB, fSetLang, fInitDBFatal... (tedious sends 0xF0)
  uint8_t option_flags2 = 0x03;  ///< fLanguage fatal, ODBC
  uint8_t type_flags = 0;
  uint8_t option_flags3 = 0;  ///< fExtension is set by encode_login7 when features exist
  int32_t client_time_zone = 0;
  uint32_t client_lcid = 0x0409;
  std::string host_name;  ///< UTF-8 (UCS-2 on the wire), as are all strings here
  std::string user_name;
  std::string password;  ///< clear text after de-obfuscation: never log it
  std::string app_name;
  std::string server_name;
  std::string client_interface;  ///< "Tedious", "ODBC", ...
  std::string language;
  std::string database;
  std::array<uint8_t, 6> client_id{};  ///< the client's MAC address
  std::string sspi;                    ///< raw SSPI bytes: integrated auth, refused by wirepool
  std::string attach_db_file;
  std::string change_password;  ///< clear text
  std::vector<FeatureExt> features;
  /// True when the client asked for integrated authentication (fIntSecurity or SSPI bytes).
  bool integrated_security() const {
    return (option_flags2 & kOptionFlags2IntSecurity) != 0 || !sspi.empty();
  }
  /// The feature with `id`, or nullptr.
  const FeatureExt* find_feature(uint8_t id) const;
};

/// The FEATUREEXTACK entries the server sends for `login`: UTF8_SUPPORT (data
/// 0x01) when the client asked for it and `utf8_supported`; nothing else, since
/// wirepool offers none of the other features (session recovery, federated
/// authentication, column encryption, ...). Send the token (even empty) when
/// the client sent a FeatureExt block.
std::vector<FeatureExt> feature_acks(const Login7& login, bool utf8_supported);

/// Decodes an assembled LOGIN7 payload. Every offset and length is checked
/// against the payload; strings must be whole UCS-2; the FeatureExt list must
/// end with 0xFF. Caps: 128 characters per name (sp_addlogin's limit) and 8000
/// bytes of SSPI.
Decoded<Login7> decode_login7(Bytes payload);
/// Appends a LOGIN7 payload (the password and change password obfuscated).
void encode_login7(std::string& out, const Login7& login);

/// The LOGIN7 password obfuscation: swap nibbles, then XOR 0xA5 (and back).
std::string obfuscate_password(std::string_view ucs2);
std::string deobfuscate_password(std::string_view wire);

// ---------------------------------------------------------------------------
// Client requests

/// ALL_HEADERS ([MS-TDS] 2.2.5.3) of a SQL batch, RPC or transaction manager
/// request. Query-notification (1) and trace-activity (3) headers are tolerated.
struct AllHeaders {
  uint64_t transaction_descriptor = 0;  ///< from header type 2 (0 = none / autocommit)
  uint32_t outstanding_requests = 1;
  bool has_transaction_descriptor = false;
  bool has_query_notification = false;
  bool has_trace_activity = false;
};
/// Decodes ALL_HEADERS at the start of `in` (consumed = its total length).
Decoded<AllHeaders> decode_all_headers(Bytes in);
/// Appends ALL_HEADERS with one transaction descriptor header.
void encode_all_headers(std::string& out, uint64_t transaction_descriptor,
                        uint32_t outstanding_requests = 1);

struct SqlBatch {
  AllHeaders headers;
  std::string sql;  ///< UTF-8
};
Decoded<SqlBatch> decode_sql_batch(Bytes payload);
/// Returns false (out unchanged) when `sql` is not valid UTF-8.
bool encode_sql_batch(std::string& out, std::string_view sql, uint64_t transaction_descriptor = 0);

/// Well-known procedure ids (ProcIDSwitch 0xFFFF).
namespace proc {
inline constexpr uint16_t kCursor = 1;
inline constexpr uint16_t kCursorOpen = 2;
inline constexpr uint16_t kCursorPrepare = 3;
inline constexpr uint16_t kCursorExecute = 4;
inline constexpr uint16_t kCursorPrepExec = 5;
inline constexpr uint16_t kCursorUnprepare = 6;
inline constexpr uint16_t kCursorFetch = 7;
inline constexpr uint16_t kCursorOption = 8;
inline constexpr uint16_t kCursorClose = 9;
inline constexpr uint16_t kExecuteSql = 10;
inline constexpr uint16_t kPrepare = 11;
inline constexpr uint16_t kExecute = 12;
inline constexpr uint16_t kPrepExec = 13;
inline constexpr uint16_t kPrepExecRpc = 14;
inline constexpr uint16_t kUnprepare = 15;
}  // namespace proc
/// "sp_executesql", ... or "proc N".
std::string proc_name(uint16_t id);

namespace rpc_flag {
inline constexpr uint16_t kWithRecomp = 0x01;
inline constexpr uint16_t kNoMetaData = 0x02;
inline constexpr uint16_t kReuseMetaData = 0x04;
}  // namespace rpc_flag
namespace param_status {
inline constexpr uint8_t kByRef = 0x01;  ///< output parameter
inline constexpr uint8_t kDefault = 0x02;
}  // namespace param_status

struct RpcParam {
  std::string name;  ///< UTF-8 with its '@', may be empty (positional)
  uint8_t status = 0;
  TypedValue value;  ///< its TYPE_INFO and value
  bool output() const { return (status & param_status::kByRef) != 0; }
};

/// One RPC. Several RPCs batched in one request (0xFF / 0x80 separators) are
/// refused with an error: no client wirepool serves sends them.
struct RpcRequest {
  AllHeaders headers;
  uint16_t proc_id = 0;   ///< a well-known id, or 0 when proc_name is set
  std::string proc_name;  ///< UTF-8, empty when proc_id is set
  uint16_t option_flags = 0;
  std::vector<RpcParam> params;
};
Decoded<RpcRequest> decode_rpc(Bytes payload, const Limits& limits = {});
/// Appends an RPC request payload; fails when a parameter's value does not fit its type.
db::Status encode_rpc(std::string& out, const RpcRequest& rpc);

/// Transaction manager request types ([MS-TDS] 2.2.6.9).
namespace tm {
inline constexpr uint16_t kGetDtcAddress = 0;  ///< refused by wirepool
inline constexpr uint16_t kPropagateXact = 1;  ///< refused by wirepool
inline constexpr uint16_t kBeginXact = 5;
inline constexpr uint16_t kPromoteXact = 6;  ///< refused
inline constexpr uint16_t kCommitXact = 7;
inline constexpr uint16_t kRollbackXact = 8;
inline constexpr uint16_t kSaveXact = 9;
/// COMMIT/ROLLBACK flag fBeginXact: start a new transaction right after.
inline constexpr uint8_t kFlagBeginXact = 0x01;
}  // namespace tm

/// Isolation levels of TM_BEGIN_XACT (0 = keep the current one).
namespace isolation {
inline constexpr uint8_t kNoChange = 0;
inline constexpr uint8_t kReadUncommitted = 1;
inline constexpr uint8_t kReadCommitted = 2;
inline constexpr uint8_t kRepeatableRead = 3;
inline constexpr uint8_t kSerializable = 4;
inline constexpr uint8_t kSnapshot = 5;
}  // namespace isolation

struct TransactionRequest {
  AllHeaders headers;
  uint16_t request = 0;         ///< tm::k*
  uint8_t isolation_level = 0;  ///< BEGIN
  std::string name;             ///< BEGIN, COMMIT, ROLLBACK, SAVE (UTF-8, may be empty)
  uint8_t flags = 0;            ///< COMMIT, ROLLBACK: tm::kFlagBeginXact
  /// BEGIN after COMMIT/ROLLBACK with fBeginXact: its isolation level and name.
  uint8_t new_isolation_level = 0;
  std::string new_name;
  std::string raw;  ///< GET_DTC_ADDRESS, PROPAGATE_XACT, PROMOTE: the bytes after the type
};
Decoded<TransactionRequest> decode_transaction_request(Bytes payload);
void encode_transaction_request(std::string& out, const TransactionRequest& r);

// ---------------------------------------------------------------------------
// Server token stream ([MS-TDS] 2.2.7)

namespace token {
inline constexpr uint8_t kReturnStatus = 0x79;
inline constexpr uint8_t kColMetadata = 0x81;
inline constexpr uint8_t kTabName = 0xA4;
inline constexpr uint8_t kColInfo = 0xA5;
inline constexpr uint8_t kOrder = 0xA9;
inline constexpr uint8_t kError = 0xAA;
inline constexpr uint8_t kInfo = 0xAB;
inline constexpr uint8_t kReturnValue = 0xAC;
inline constexpr uint8_t kLoginAck = 0xAD;
inline constexpr uint8_t kFeatureExtAck = 0xAE;
inline constexpr uint8_t kRow = 0xD1;
inline constexpr uint8_t kNbcRow = 0xD2;
inline constexpr uint8_t kEnvChange = 0xE3;
inline constexpr uint8_t kSspi = 0xED;
inline constexpr uint8_t kDone = 0xFD;
inline constexpr uint8_t kDoneProc = 0xFE;
inline constexpr uint8_t kDoneInProc = 0xFF;
}  // namespace token

namespace done {
inline constexpr uint16_t kFinal = 0x00;
inline constexpr uint16_t kMore = 0x01;
inline constexpr uint16_t kError = 0x02;
inline constexpr uint16_t kInXact = 0x04;
inline constexpr uint16_t kCount = 0x10;
inline constexpr uint16_t kAttn = 0x20;
inline constexpr uint16_t kSrvError = 0x100;
}  // namespace done

/// DONE's CurCmd for the common statements (SQL Server's own values; clients
/// such as tedious ignore it, ODBC drivers report it). 0 for anything else.
namespace command {
inline constexpr uint16_t kSelect = 0xC1;
inline constexpr uint16_t kInsert = 0xC3;
inline constexpr uint16_t kDelete = 0xC4;
inline constexpr uint16_t kUpdate = 0xC5;
}  // namespace command
/// The CurCmd for a statement verb ("SELECT", "INSERT", ... as
/// db::CommandInfo::verb has it), 0 when there is none.
uint16_t current_command(std::string_view verb);

namespace env {
inline constexpr uint8_t kDatabase = 1;
inline constexpr uint8_t kLanguage = 2;
inline constexpr uint8_t kPacketSize = 4;
inline constexpr uint8_t kSqlCollation = 7;
inline constexpr uint8_t kBeginTransaction = 8;
inline constexpr uint8_t kCommitTransaction = 9;
inline constexpr uint8_t kRollbackTransaction = 10;
inline constexpr uint8_t kResetConnectionAck = 18;
}  // namespace env

/// Column flags in COLMETADATA.
namespace col_flag {
inline constexpr uint16_t kNullable = 0x0001;
inline constexpr uint16_t kCaseSensitive = 0x0002;
inline constexpr uint16_t kUpdatable = 0x0008;  ///< read/write (bits 2-3: 0 read-only, 1 rw)
inline constexpr uint16_t kIdentity = 0x0010;
}  // namespace col_flag

struct LoginAck {
  uint8_t interface = 1;  ///< 1 = T-SQL
  uint32_t tds_version = kTds74;
  std::string prog_name = "wirepool";
  std::array<uint8_t, 4> prog_version{};  ///< major, minor, build high, build low
};

/// ENVCHANGE. String types (database, language, packet size, ...) carry UTF-8
/// text; binary types (collation, transactions) raw bytes; routing (20),
/// promote transaction (15) and unknown types their whole body in new_value.
struct EnvChange {
  uint8_t type = 0;
  std::string new_value;
  std::string old_value;
};

/// INFO (0xAB) or ERROR (0xAA).
struct ServerMessage {
  bool is_error = true;
  int32_t number = 0;
  uint8_t state = 1;
  uint8_t severity = 16;  ///< "class": 0-10 INFO, 11+ ERROR
  std::string message;
  std::string server_name;
  std::string proc_name;
  int32_t line = 1;
};

struct ColumnMeta {
  uint32_t user_type = 0;
  uint16_t flags = col_flag::kNullable;
  TypeInfo type;
  std::string name;  ///< UTF-8
};

struct Done {
  uint8_t token = token::kDone;  ///< DONE, DONEPROC or DONEINPROC
  uint16_t status = 0;
  uint16_t current_command = 0;  ///< 0xC1 SELECT, 0xC3 INSERT, 0xC4 DELETE, 0xC5 UPDATE, ...
  uint64_t row_count = 0;
};

struct ReturnValue {
  uint16_t ordinal = 0;
  std::string name;
  uint8_t status = 0x01;  ///< 0x01 output parameter, 0x02 user-defined function
  uint32_t user_type = 0;
  uint16_t flags = col_flag::kNullable;
  TypedValue value;
};

/// Token encoders: each call appends one complete token to the payload; the
/// PacketWriter frames it.
class TokenEncoder {
 public:
  explicit TokenEncoder(std::string& out) : out_(out) {}

  void login_ack(const LoginAck& ack);
  /// ENVCHANGE with string values (database, language, packet size).
  void env_change_text(uint8_t type, std::string_view new_value, std::string_view old_value);
  void env_collation(const Collation& new_value, const Collation& old_value);
  void env_begin_transaction(uint64_t descriptor);
  void env_commit_transaction(uint64_t descriptor);
  void env_rollback_transaction(uint64_t descriptor);
  void env_reset_connection_ack();
  void message(const ServerMessage& m);  ///< INFO or ERROR by m.is_error
  /// FEATUREEXTACK: the acknowledged features (may be empty), then 0xFF.
  void feature_ext_ack(std::span<const FeatureExt> acks);
  void col_metadata(std::span<const ColumnMeta> columns);
  void col_metadata_none();  ///< NoMetaData (0xFFFF)
  /// ROW or NBCROW: NBCROW when the null bitmap is smaller than the NULLs it
  /// replaces (the sum of null_size() over the NULL columns), or when a
  /// fixed-length column (INT4, FLT8, ...: no NULL form) is NULL. Fails
  /// (nothing appended) when a value does not fit its column's type.
  db::Status row(std::span<const ColumnMeta> columns, std::span<const db::ValueView> values);
  /// ROW always (tests and callers that must avoid NBCROW).
  db::Status plain_row(std::span<const ColumnMeta> columns, std::span<const db::ValueView> values);
  void done(const Done& d);
  void return_status(int32_t value);
  db::Status return_value(uint16_t ordinal, std::string_view name, uint8_t status,
                          const TypeInfo& type, const db::ValueView& v);

 private:
  std::string& out_;
};

/// ORDER: skipped, reported with its column ids.
struct Order {
  std::vector<uint16_t> columns;
};
/// A row: one value per COLMETADATA column.
struct Row {
  std::vector<TypedValue> values;
};

using Token =
    std::variant<LoginAck, EnvChange, ServerMessage, std::vector<FeatureExt>,
                 std::vector<ColumnMeta>, Row, Done, int32_t /*RETURNSTATUS*/, ReturnValue, Order>;

#ifdef WIREPOOL_PLANTED_DEFECTS
/// Test builds only (wp_tds_defects): deliberately wrong decoder decisions, one
/// at a time, so a test run can prove the tests notice each; the default is
/// none. The TDS driver (backends/tds/) reads it too. The shipped wp_tds and
/// wirepool are built without WIREPOOL_PLANTED_DEFECTS and have no switch.
enum class PlantedDefect : uint8_t {
  none,
  nbcrow_bitmap_wrong_end,   ///< NBCROW's null bitmap read from its high bit (here)
  marker_in_brackets,        ///< a ? inside a [bracketed name] taken as a marker (driver)
  select_count_as_affected,  ///< a SELECT's DONE count taken as affected rows (driver)
};
void set_planted_defect_for_test(PlantedDefect d);
PlantedDefect planted_defect();
/// "nbcrow", "brackets", "select_count" -> the defect; none for anything else.
PlantedDefect planted_defect_from_name(std::string_view name);
#endif

/// Decodes a server's token stream incrementally: `next` answers need_more
/// (consumed 0) when a token is cut, so results can stream. ROW and NBCROW use
/// the last COLMETADATA; TABNAME, COLINFO and SSPI are skipped by their length.
class TokenDecoder {
 public:
  explicit TokenDecoder(Limits limits = {}) : limits_(limits) {}
  Decoded<Token> next(Bytes in);
  /// The columns of the current result set.
  const std::vector<ColumnMeta>& columns() const { return columns_; }

 private:
  Limits limits_;
  std::vector<ColumnMeta> columns_;
};

}  // namespace wirepool::tds
