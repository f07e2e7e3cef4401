#pragma once
// The server's token stream ([MS-TDS] 2.2.7), sans-I/O (codec.hpp): the
// encoder the front end writes with and the decoder the driver reads with.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/tds/login.hpp"
#include "protocol/tds/types.hpp"

namespace wirepool::tds {

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
