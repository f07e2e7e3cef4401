#pragma once
// PostgreSQL driver internals: one libpq connection in non-blocking mode,
// shared by the connection object and every Rows, Statement and COPY stream it
// hands out.
//
// libpq runs one command at a time. The session tracks who owns that command
// stream (the state machine in brief; docs/postgresql.md has the whole):
//   idle       nothing in flight; a call may send
//   op         a connection-level call (query, prepare, begin, commit, ...) is
//              in flight: it answered would_block and will be repeated; a
//              different call abandons it (its results are drained)
//   held       a Rows or COPY stream owns the command (holder != nullptr):
//              every other call answers busy (55000) until it is closed
//   draining   an abandoned command (a Rows destroyed mid-stream, a COPY left
//              open, a call given up) still has results on the wire: the next
//              call first reads and discards them (settle()), then runs any
//              DEALLOCATE queued by Statement::close, then its own command.
// Every wait is a would_block: io_interest() names PQsocket and the direction
// (write while PQflush has output queued, read while PQisBusy).

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::postgresql {

// ---- optional libpq entry points (looked up at run time) ---------------------

using ChunkedRowsFn = int (*)(PGconn*, int);
using ClosePreparedFn = int (*)(PGconn*, const char*);
/// Finds a symbol by name (dlsym(RTLD_DEFAULT, name) in production), or nullptr.
using SymbolLookup = void* (*)(const char* name);

struct LibpqExtras {
  ChunkedRowsFn set_chunked_rows_mode = nullptr;  ///< PQsetChunkedRowsMode (libpq 17+)
  ClosePreparedFn send_close_prepared = nullptr;  ///< PQsendClosePrepared (libpq 17+)
};
/// Looks the optional entry points up with `lookup`.
LibpqExtras find_libpq_extras(SymbolLookup lookup);
/// The loaded libpq's, looked up once.
const LibpqExtras& libpq_extras();

inline constexpr int kChunkRows = 256;
/// PGRES_TUPLES_CHUNK (libpq 17; libpq 15's header does not name it).
inline constexpr int kPgresTuplesChunk = 12;

enum class RowMode : uint8_t { chunked, single_row, whole };
/// Chooses how the command just sent returns its rows: chunks of kChunkRows
/// when the library has PQsetChunkedRowsMode, else one row per PGresult.
/// `whole` means neither could be set (then one PGresult holds every row).
RowMode select_row_mode(PGconn* conn, const LibpqExtras& extras);

// ---- the session --------------------------------------------------------------

/// What a command answered, read to its end.
struct Exchange {
  std::optional<db::Error> error;  ///< the first error result
  std::string tag;                 ///< the last command tag
  bool keep = false;               ///< keep the first successful result in `kept`
  PGresult* kept = nullptr;
  Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() {
    if (kept) PQclear(kept);
  }
};

/// The operation a connection-level call has in flight.
enum class OpKind : uint8_t {
  query,
  statement_query,
  prepare,
  begin,
  commit,
  rollback,
  reset,
  copy,
  statement_close,
  describe_portal,
};

/// State of a connection-level call that answered would_block (defined by the
/// connection; the session only owns it, so that any call can abandon it).
struct PendingOp {
  virtual ~PendingOp() = default;
  OpKind kind = OpKind::query;
  std::string key;  ///< identifies the call (its SQL text, a statement name)
};

/// GUC_REPORT parameters PostgreSQL reports with ParameterStatus.
inline constexpr std::string_view kReportedParameters[] = {
    "application_name",
    "client_encoding",
    "DateStyle",
    "default_transaction_read_only",
    "in_hot_standby",
    "integer_datetimes",
    "IntervalStyle",
    "is_superuser",
    "server_encoding",
    "server_version",
    "session_authorization",
    "standard_conforming_strings",
    "TimeZone",
};

class Session {
 public:
  /// Takes ownership of a connected, non-blocking `conn`.
  explicit Session(PGconn* conn);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  PGconn* conn() const { return conn_; }
  bool closed() const { return closed_; }
  /// Connected, and not left in a state nothing can leave (a replication stream).
  bool usable() const { return !closed_ && !broken_ && PQstatus(conn_) == CONNECTION_OK; }
  /// usable(), and for an idle connection also whether the server closed it
  /// meanwhile (a terminated backend, a restarted server): whatever arrived
  /// while idle is read without waiting. Notifications read here are delivered
  /// with the next call.
  bool probe();
  /// PQfinish (blocking: executor only). Everything handed out answers closed after.
  void close();
  /// PQcancel with the PGcancel made at open; any thread; blocks briefly.
  void cancel() noexcept;

  // ---- would_block plumbing ----

  /// Errc::would_block, remembering what to wait for.
  db::Error would_block(bool read, bool write);
  db::IoInterest interest() const { return interest_; }
  /// Flushes queued output and reads until a result is ready: nullopt with
  /// `out` set (nullptr: the command is complete), or would_block / connection.
  std::optional<db::Error> poll_result(PGresult*& out);
  /// The connection error libpq reports now.
  db::Error lost() const;
  /// The error a failed result reports (connection when the link is down).
  db::Error result_error(const PGresult* r) const;
  /// A PQsend* call answered 0.
  db::Error send_failed() const;

  // ---- the command stream ----

  /// Checks before a connection-level call: closed, the link down, or (when
  /// `check_busy`) a Rows or COPY stream holding the connection.
  std::optional<db::Error> enter(bool check_busy = true);
  /// The call starts a new command: marks it in flight.
  void sent() {
    bind_seen_ = BindSeen::off;
    in_flight_ = true;
    just_sent_ = true;
    relay_tx_.reset();  // libpq tracks the state again
  }
  bool in_flight() const { return in_flight_; }
  /// Watches the extended-protocol command just sent for the server's
  /// BindComplete, which libpq reads silently: the first read of its answer
  /// peeks at the bytes first (MSG_PEEK, or SSL_peek on TLS). Until bound().
  void watch_bind() { bind_seen_ = BindSeen::watching; }
  /// Ends the watch: false when the server's first answer after ParseComplete
  /// was not BindComplete (it refused the Bind: a parameter, the plan).
  bool bound();
  /// Reads the command in flight to its end, collecting into `x`.
  std::optional<db::Error> collect(Exchange& x);
  /// Reads and discards what an abandoned command left, then runs queued
  /// deallocations. nullopt when the connection is free for a new command.
  std::optional<db::Error> settle();
  /// The last result (NULL) was read: side channels are delivered.
  void command_done();
  /// A COPY left open: FROM STDIN is ended with an error, TO STDOUT drained.
  void abandon_copy(bool input) { (input ? copy_in_abandoned_ : copy_out_draining_) = true; }
  /// Queues DEALLOCATE of a prepared statement (run by the next settle()).
  void queue_deallocate(std::string name) { deallocate_.push_back(std::move(name)); }
  /// Unguessable by other sessions of the connection (db::random_statement_prefix).
  std::string next_statement_name() {
    if (statement_prefix_.empty()) statement_prefix_ = db::random_statement_prefix("wp_");
    return statement_prefix_ + std::to_string(++statements_);
  }

  /// The Rows or COPY stream that owns the command stream, if any.
  const void* holder() const { return holder_; }
  void hold(const void* who) { holder_ = who; }
  void release(const void* who) {
    if (holder_ == who) holder_ = nullptr;
  }
  /// The connection-level call in flight, if any.
  std::unique_ptr<PendingOp> op;

  // ---- protocol relay (db::ConnectionImpl::relay_socket) ----

  /// PQsocket when nothing is in flight, held or queued and the link is
  /// plaintext (libpq's TLS state cannot be shared); else -1.
  int relay_socket();
  /// The relay's exchange ended with ReadyForQuery `state` (libpq did not see
  /// it: tx_state() answers `state` until libpq sends a command again).
  void relay_done(db::TxState state, bool broken);

  // ---- state and side channels ----

  db::TxState tx_state() const;
  void set_sink(db::EventSink* sink) { sink_ = sink; }
  db::EventSink* sink() const { return sink_; }
  std::vector<std::pair<std::string, std::string>> server_parameters() const;
  const LibpqExtras& extras() const { return extras_; }
  /// Delivers notifications and parameter changes seen since the last call.
  void deliver();

 private:
  static void notice_receiver(void* arg, const PGresult* r);
  /// Decides watch_bind() from the answer's first bytes, before libpq reads.
  void peek_bind();
  /// Continues an abandoned COPY (see abandon_copy).
  std::optional<db::Error> unwind_copy();

  PGconn* conn_;
  PGcancel* cancel_ = nullptr;
  std::mutex cancel_mu_;  // cancel() on any thread; close() takes it too
  bool closed_ = false;
  bool broken_ = false;  // COPY BOTH: only discarding the connection ends it
  bool in_flight_ = false;
  bool just_sent_ = false;  // nothing read since the last send (see poll_result)
  bool copy_in_abandoned_ = false;
  bool copy_out_draining_ = false;
  const void* holder_ = nullptr;
  db::IoInterest interest_;
  std::vector<std::string> deallocate_;
  uint64_t statements_ = 0;
  std::string statement_prefix_;
  db::TxState last_tx_ = db::TxState::idle;
  std::optional<db::TxState> relay_tx_;  // what the relay's last ReadyForQuery said
  db::EventSink* sink_ = nullptr;
  std::vector<std::optional<std::string>> reported_;  // by kReportedParameters index
  std::vector<uint8_t> watched_;  // the indexes deliver() looks up: those that can change
  LibpqExtras extras_;
  enum class BindSeen : uint8_t { off, watching, bound, refused };
  BindSeen bind_seen_ = BindSeen::off;  // see watch_bind()
};
using SessionPtr = std::shared_ptr<Session>;

}  // namespace wirepool::postgresql
