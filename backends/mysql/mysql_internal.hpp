#pragma once
// Internal to backends/mysql/: what the connection, statement and reader files
// share (the Session every handed-out object holds, the prepared statement,
// the errors they answer). Not included outside this folder.

#include <mysql.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"
#include "backends/mysql/mysql_errors.hpp"
#include "backends/mysql/mysql_options.hpp"
#include "backends/mysql/mysql_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::mysql::detail {

using db::Error;
using db::Result;
using db::Status;
using sql::Dialect;

/// A refused request (invalid_query) with `sqlstate`.
Error protocol_error(std::string sqlstate, std::string message);
/// PostgreSQL's answer (08P01) to a parameter count that does not match.
Error count_mismatch(size_t supplied, int required);
/// 55000: a reader owns the wire.
Error busy_error();
/// 42601: several statements in one prepared statement.
Error multiple_commands();

/// What a row packet may hold beside one value of max_value_size bytes: the
/// other columns and the length prefixes. A larger packet is refused unread.
inline constexpr uint64_t kRowHeadroom = 64 << 10;
/// The largest packet the MySQL protocol and Connector/C accept (1 GiB).
inline constexpr uint64_t kMaxPacket = 1ull << 30;

/// MYSQL_OPT_MAX_ALLOWED_PACKET for a max_value_size: a row packet above it
/// fails with CR_NET_PACKET_TOO_LARGE before the library allocates it.
inline unsigned long packet_cap(uint64_t max_value_size) {
  return static_cast<unsigned long>(std::min(max_value_size + kRowHeadroom, kMaxPacket));
}

class ReaderBase;

/// The MYSQL handle, shared by a connection and everything it hands out.
struct Session {
  MYSQL* mysql = nullptr;
  ConnectInfo info;  // for the cancel side connection
  unsigned long thread_id = 0;
  bool closed = false;
  bool broken = false;      // the connection was lost: the pool drops it
  bool tx_aborted = false;  // the server rolled the transaction back (deadlock)
  /// Bumped by reset(): COM_RESET_CONNECTION drops the server's prepared
  /// statements, and a statement of an older generation is prepared again.
  uint64_t generation = 0;
  ReaderBase* active = nullptr;             // the reader that owns the wire, if any
  std::vector<MYSQL_STMT*> deferred_close;  // statements closed while a reader was active
  std::mutex cancel_mu;                     // cancel() runs on any thread; close() takes it too

  Session(MYSQL* m, ConnectInfo i) : mysql(m), info(std::move(i)) {
    thread_id = mysql_thread_id(mysql);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  void close();

  bool in_trans() const { return (mysql->server_status & SERVER_STATUS_IN_TRANS) != 0; }

  /// The error of the call that just failed on the connection.
  Error error(bool was_in_trans) {
    return note(map_error(mysql_errno(mysql), mysql_sqlstate(mysql), mysql_error(mysql)),
                was_in_trans);
  }
  Error stmt_error(MYSQL_STMT* stmt, bool was_in_trans) {
    return note(
        map_error(mysql_stmt_errno(stmt), mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt)),
        was_in_trans);
  }
  /// Records what an error means for the connection.
  Error note(Error e, bool was_in_trans) {
    if (e.code == db::Errc::connection) broken = true;
    // A failed fetch of a prepared statement may leave its own errno 0.
    if (info.max_value_size != 0 && (e.code == db::Errc::connection || e.vendor_code == 0) &&
        packet_refused()) {
      // A row packet above packet_cap(): refused before it was read, and the
      // library closed the connection, with the rest of it still on the wire.
      Error big = Error::value_too_large(info.max_value_size);
      big.code = db::Errc::connection;
      big.vendor_code = 2020;  // CR_NET_PACKET_TOO_LARGE
      big.detail = "MySQL sends a row as one packet; a row above " +
                   std::to_string(packet_cap(info.max_value_size)) +
                   " bytes is refused whole and the backend connection is closed.";
      broken = true;
      return big;
    }
    if (e.sqlstate == "57014")
      e.message = "canceling statement due to user request (" + e.message + ")";
    // A deadlock rolls the whole transaction back. An ERR packet carries no
    // status flags, so the errno says it, not server_status.
    if (was_in_trans && e.vendor_code == 1213) tx_aborted = true;
    return e;
  }

  /// Connector/C refused a packet above its cap: it sets net.error 1 (2 on a
  /// read or write failure) but reports 2013 "Lost connection", not 2020.
  bool packet_refused() const { return mysql->net.error == 1 || mysql->net.last_errno == 2020; }

  /// The reader let go of the wire: statements closed meanwhile are closed now.
  void release(ReaderBase* reader) {
    if (active != reader) return;
    active = nullptr;
    for (MYSQL_STMT* s : deferred_close)
      mysql_stmt_close(s);
    deferred_close.clear();
  }
  void close_stmt(MYSQL_STMT* s) {
    if (closed) {
      mysql_stmt_close(s);  // Connector/C detached it at mysql_close: frees memory only
    } else if (active != nullptr) {
      deferred_close.push_back(s);
    } else {
      mysql_stmt_close(s);
    }
  }

  /// Runs a statement that returns nothing the caller wants, reading every result.
  Status exec(std::string_view text) {
    const bool was = in_trans();
    if (mysql_real_query(mysql, text.data(), text.size()) != 0) return error(was);
    for (;;) {
      if (MYSQL_RES* r = mysql_store_result(mysql)) mysql_free_result(r);
      if (mysql_errno(mysql) != 0) return error(was);
      const int rc = mysql_next_result(mysql);
      if (rc < 0) return {};
      if (rc > 0) return error(was);
    }
  }
};
using SessionPtr = std::shared_ptr<Session>;

/// What a Session calls on the reader that owns the wire when it must let go.
class ReaderBase : public db::RowsImpl {
 public:
  /// Frees the result without reading the rest (the connection is closing).
  virtual void abandon() = 0;
};

/// A value read as the server's bytes (text, bytes, decimal), which
/// server.max_value_size bounds.
inline bool is_string(Read r) {
  return r == Read::text || r == Read::bytes || r == Read::decimal;
}

inline int64_t affected_of(my_ulonglong n) {
  return n == static_cast<my_ulonglong>(-1) ? -1 : static_cast<int64_t>(n);
}

// ---- binary protocol ----------------------------------------------------------

/// Storage for one bound parameter.
struct ParamCell {
  int64_t i = 0;
  double f = 0;
  MYSQL_TIME t{};
  unsigned long length = 0;
};

/// A server-side prepared statement. Closed when the last owner lets go.
struct Prepared {
  SessionPtr session;
  MYSQL_STMT* stmt = nullptr;
  std::string text;        // after $N -> ? rewriting
  std::vector<int> slots;  // the parameter each ? binds
  int required = 0;        // positional parameters the text uses
  std::string verb;
  std::vector<ColumnType> types;  // result columns as prepared
  // Parameter buffers, kept between executions (one per ?).
  std::vector<MYSQL_BIND> param_binds;
  std::vector<ParamCell> param_cells;

  uint64_t generation = 0;  // Session::generation it was prepared in

  Prepared(SessionPtr s, MYSQL_STMT* st)
      : session(std::move(s)), stmt(st), generation(session->generation) {}
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() {
    if (stmt) session->close_stmt(stmt);
  }
  /// The result columns the last execution reported (stmt->fields is the
  /// connector's copy of the metadata that came with the execution).
  void describe_executed() {
    const unsigned n = mysql_stmt_field_count(stmt);
    if (stmt->fields == nullptr) return describe();
    types.resize(n);
    for (unsigned i = 0; i < n; ++i) {
      const MYSQL_FIELD& f = stmt->fields[i];
      ColumnType& t = types[i];
      // Unchanged metadata (the common case) keeps the column as it is.
      if (t.column.name.size() == f.name_length &&
          std::memcmp(t.column.name.data(), f.name, f.name_length) == 0 && t.type == f.type &&
          t.flags == f.flags && t.length == f.length && t.charsetnr == f.charsetnr &&
          t.decimals == f.decimals) {
        continue;
      }
      t = classify(f);
    }
  }
  /// Prepares the statement again after a reset dropped it on the server (an
  /// old handle answers 2013 "Lost connection", which is not true).
  std::optional<Error> refresh() {
    if (generation == session->generation) return std::nullopt;
    mysql_stmt_close(stmt);  // the server forgot it already; this frees the handle
    stmt = mysql_stmt_init(session->mysql);
    generation = session->generation;
    if (stmt == nullptr) return session->error(false);
    if (mysql_stmt_prepare(stmt, text.data(), text.size()) != 0) {
      return session->stmt_error(stmt, false);
    }
    describe();
    return std::nullopt;
  }
  void describe() {
    types.clear();
    if (MYSQL_RES* meta = mysql_stmt_result_metadata(stmt)) {
      const unsigned n = mysql_num_fields(meta);
      MYSQL_FIELD* fields = mysql_fetch_fields(meta);
      for (unsigned i = 0; i < n; ++i)
        types.push_back(classify(fields[i]));
      mysql_free_result(meta);
    }
  }
};
using PreparedPtr = std::shared_ptr<Prepared>;

/// Compiles `text` (markers already `?`) on the server.
Result<PreparedPtr> prepare_on_server(const SessionPtr& s, sql::QuestionText q,
                                      std::string_view original);
/// Checks the caller's parameters against what the text uses.
std::optional<Error> check_params(db::Params params, int required);
/// Runs text without parameters over the text protocol.
Result<std::unique_ptr<db::RowsImpl>> run_text(const SessionPtr& s, std::string_view text);
/// Executes a prepared statement with `params` over the binary protocol.
Result<std::unique_ptr<db::RowsImpl>> run_prepared(const SessionPtr& s, PreparedPtr p,
                                                   db::Params params);
/// A statement handle; `p` is null for one the text protocol runs (no parameters).
std::unique_ptr<db::StatementImpl> make_statement(SessionPtr s, PreparedPtr p, std::string text,
                                                  int required,
                                                  std::span<const db::ParamInfo> hints);

}  // namespace wirepool::mysql::detail
