#pragma once
// Client requests, sans-I/O (codec.hpp): ALL_HEADERS, SQL batch, RPC and the
// transaction manager request.

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

}  // namespace wirepool::tds
