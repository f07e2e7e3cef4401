#pragma once
// The driver contract: a C++ rendering of the seed's e.db (see docs/architecture.md).
//
// Four handles (Connection, Statement, Rows, Transaction) over the value
// vocabulary of sql/types.hpp, and optional side channels. Blocking drivers
// run on the server's bounded executor; non-blocking ones answer would_block
// instead of waiting (ConnectionImpl). Connection::cancel() may be called from
// any thread at any time.
//
// A handle is a thin owner of a driver object. Closing, committing or rolling
// back empties the handle, and an empty handle answers Errc::closed without
// reaching the driver, so a double close or a query after commit behaves the
// same under every driver and no driver has to write that logic.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sql/lexer.hpp"
#include "sql/types.hpp"

namespace wirepool::db {

/// How results are wanted.
struct QueryOptions {
  /// PostgreSQL backends (Capabilities::pg_native): every value comes back as
  /// the backend's own bytes in the format `formats` asks for (empty = all text,
  /// one = all columns, else one per column), as a ValueView of kind Bytes
  /// (Null for NULL), and each Column's NativeType carries the OID, typmod,
  /// table OID, column number and type size PostgreSQL reported. A PostgreSQL
  /// client then receives exactly what PostgreSQL sent. Other drivers ignore it.
  bool native = false;
  std::vector<int16_t> formats;
};

/// What a driver can do. Reported once per connection.
struct Capabilities {
  sql::Dialect dialect = sql::Dialect::ansi;
  bool multi_statement = false;   ///< query() accepts several statements in one text
  bool session_settings = false;  ///< the backend keeps SET/SHOW itself (PostgreSQL)
  bool notices = false;
  bool notifications = false;
  bool copy = false;
  bool blocking = true;  ///< calls block: run them on the bounded executor
  /// Honours QueryOptions::native and native parameters (PostgreSQL).
  bool pg_native = false;
  /// Statement::execute_batch sends the rows to the backend together (ODBC
  /// parameter arrays) rather than one execution each; the front end batches
  /// pipelined executions only for such drivers.
  bool param_arrays = false;
  /// execute_batch reports each row's affected count; false: only the total.
  bool batch_row_counts = true;
};

/// A socket event a non-blocking connection waits for.
struct IoInterest {
  int fd = -1;
  bool read = false;
  bool write = false;
  bool none() const { return fd < 0 || (!read && !write); }
};

// ---------------------------------------------------------------------------
// Side channels (optional per driver; Unsupported where a backend has none)

struct Notice {
  std::string severity;  ///< "NOTICE", "WARNING", "INFO", ...
  std::string sqlstate;
  std::string message;
  std::string detail;
  std::string hint;
  std::string fields;  ///< as Error::fields
};
struct ParameterChange {
  std::string name;
  std::string value;
};
struct Notification {
  int32_t pid = 0;
  std::string channel;
  std::string payload;
};
/// Receives what a backend reports besides results. Called on the thread that is
/// running a driver call on the connection.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_notice(const Notice&) {}
  virtual void on_parameter(const ParameterChange&) {}
  virtual void on_notification(const Notification&) {}
};

/// A COPY stream (PostgreSQL COPY FROM STDIN / TO STDOUT).
class CopyStreamImpl {
 public:
  virtual ~CopyStreamImpl() = default;
  virtual bool is_input() const = 0;
  /// The overall format (0 text, 1 binary) and the per-column formats, as
  /// PostgreSQL's CopyInResponse / CopyOutResponse carry them.
  virtual int16_t format() const { return 0; }
  virtual std::vector<int16_t> column_formats() const { return {}; }
  /// COPY FROM STDIN: send a chunk of data.
  virtual Status write(std::string_view data) = 0;
  /// COPY TO STDOUT: the next chunk, or nullopt at the end.
  virtual Result<std::optional<std::string>> read() = 0;
  /// Finish (or abort with `error_message`) and report what was copied.
  virtual Result<CommandInfo> finish(std::optional<std::string> error_message) = 0;
};

// ---------------------------------------------------------------------------
// Driver-side interfaces. Drivers implement these; callers use the handles below.

class RowsImpl {
 public:
  virtual ~RowsImpl() = default;
  /// Columns of the current result (empty for a statement that returns no rows).
  virtual std::span<const Column> columns() const = 0;
  /// Fills `row` (columns().size() values) with the library's own bytes, valid
  /// until the next call on this Rows. Answers false after the last row.
  virtual Result<bool> next_borrowed(std::span<ValueView> row) = 0;
  /// Fills a caller-owned row. The default copies what next_borrowed lends.
  virtual Result<bool> next(std::span<Value> row);
  /// Multi-statement text: finish the current result and advance to the next
  /// statement's. Answers false when there is none.
  virtual Result<bool> next_result() = 0;
  /// What the current statement did; complete once next() answered false.
  virtual CommandInfo command() const = 0;
  virtual Status close() = 0;

 protected:
  std::vector<ValueView> scratch_;  // for the default next()
};

/// What Statement::execute_batch did.
struct BatchInfo {
  /// Rows affected by each parameter row, in order; empty when the driver
  /// reports only the total (Capabilities::batch_row_counts false).
  std::vector<int64_t> affected;
  int64_t total = 0;  ///< rows affected by the whole batch
};

class StatementImpl {
 public:
  virtual ~StatementImpl() = default;
  /// Parameters as the backend typed them (may be fewer than the markers when unknown).
  virtual std::span<const ParamInfo> params() const = 0;
  /// Result columns, as far as they are known before execution.
  virtual std::span<const Column> columns() const = 0;
  virtual Result<std::unique_ptr<RowsImpl>> query(Params params, const QueryOptions& options) = 0;
  /// Runs a statement that returns no rows (INSERT, UPDATE, DELETE) once per
  /// parameter row (blocking connections). A driver with
  /// Capabilities::param_arrays leaves none of the rows of a failed batch
  /// behind inside a transaction (outside one the caller brackets the batch
  /// with one). The default runs query() per row and stops at the first
  /// error, the rows before it done.
  virtual Result<BatchInfo> execute_batch(std::span<const Params> rows);
  virtual Status close() = 0;
};

/// Options for Connection::begin. `native_sql` is the client's own statement
/// ("BEGIN ISOLATION LEVEL SERIALIZABLE", "BEGIN IMMEDIATE"); a driver uses it
/// where its dialect accepts it and otherwise starts a plain transaction.
struct BeginOptions {
  std::string native_sql;
};

/// A connection to a backend.
///
/// Blocking connections (Capabilities::blocking) wait inside their calls; the
/// server runs them on its bounded executor. Non-blocking connections never
/// wait: a call that would answers Errc::would_block, io_interest() names the
/// socket event that lets it go on, and the caller waits for that event (on its
/// event loop) and makes the *same* call again; the driver resumes the
/// operation where it stopped. Calls on the handles a connection returned (Rows,
/// Statement, CopyStream) behave the same, and a handle stays open while its
/// close answers would_block.
class ConnectionImpl {
 public:
  virtual ~ConnectionImpl() = default;
  virtual Capabilities capabilities() const = 0;
  /// Runs the (first) statement and returns its reader. Statements that return
  /// no rows finish here; their Rows has no columns. Bad SQL fails here, not at
  /// the first row.
  virtual Result<std::unique_ptr<RowsImpl>> query(std::string_view sql, Params params,
                                                  const QueryOptions& options) = 0;
  /// Prepares a statement. `param_types` are the caller's hints (may be empty).
  virtual Result<std::unique_ptr<StatementImpl>> prepare(std::string_view sql,
                                                         std::span<const ParamInfo> hints) = 0;
  virtual Status begin(const BeginOptions& options) = 0;
  /// Commit. A transaction in which a statement failed answers an error, never
  /// a false success.
  virtual Status commit() = 0;
  virtual Status rollback() = 0;
  virtual TxState tx_state() const = 0;
  /// Interrupt the running call. Any thread, any time; harmless when idle. It may
  /// block briefly (PostgreSQL's PQcancel opens a connection): not on an event loop.
  virtual void cancel() noexcept = 0;
  /// Non-blocking connections: what the call that answered would_block waits for.
  virtual IoInterest io_interest() const { return {}; }
  /// What the backend reported about itself at connection time and since
  /// (PostgreSQL's ParameterStatus: server_version, TimeZone, ...). Empty when
  /// the backend reports nothing.
  virtual std::vector<std::pair<std::string, std::string>> server_parameters() const { return {}; }
  /// Bring the session back to a clean state before another client uses it.
  /// `reset_query` is the configured one (may be empty).
  virtual Status reset(std::string_view reset_query);
  /// A cheap liveness check (no round trip where the library can tell). It
  /// also takes what the backend sent unasked (notifications) to the event sink.
  virtual bool alive() const { return true; }
  /// The server's id for this session (PostgreSQL's backend pid, MySQL's
  /// connection id), 0 when the backend has none. Read when the connection opens.
  virtual int64_t server_pid() const { return 0; }
  /// The driver's socket, -1 when it has none: for getsockname (SHOW SERVERS),
  /// and watched for readability while idle where the backend speaks unasked
  /// (PostgreSQL's NotificationResponse).
  virtual int socket_fd() const { return -1; }
  virtual Status set_event_sink(EventSink* sink);
  virtual Result<std::unique_ptr<CopyStreamImpl>> copy(std::string_view sql);
  /// The columns of a portal the client opened with SQL (DECLARE … CURSOR),
  /// each with the format its values come in (NativeType::pg_format).
  /// Backends without such portals answer 34000.
  virtual Result<std::vector<Column>> describe_portal(std::string_view name);
  virtual Status close() = 0;

  // Protocol relay: a PostgreSQL front end over a PostgreSQL backend may send
  // the client's protocol messages to the server and its answers back itself
  // (docs/protocol-postgres.md, "The relay"). Drivers that cannot say no.
  /// The socket of an idle plaintext connection (nothing in flight, no reader,
  /// nothing queued) for the caller to write to and read from until the
  /// server's ReadyForQuery; -1 when the connection cannot be relayed now.
  virtual int relay_socket() { return -1; }
  /// The relay exchange ended: the last ReadyForQuery said `state`. `broken`:
  /// the link failed mid-exchange (the connection answers connection errors after).
  virtual void relay_done(TxState /*state*/, bool /*broken*/) {}
};

// ---------------------------------------------------------------------------
// Handles

class Rows {
 public:
  Rows() = default;
  explicit Rows(std::unique_ptr<RowsImpl> impl) : impl_(std::move(impl)) {}
  bool is_open() const { return impl_ != nullptr; }
  std::span<const Column> columns() const;
  Result<bool> next(std::span<Value> row);
  Result<bool> next_borrowed(std::span<ValueView> row);
  Result<bool> next_result();
  CommandInfo command() const;
  Status close();

 private:
  std::unique_ptr<RowsImpl> impl_;
};

class Statement {
 public:
  Statement() = default;
  explicit Statement(std::unique_ptr<StatementImpl> impl) : impl_(std::move(impl)) {}
  bool is_open() const { return impl_ != nullptr; }
  std::span<const ParamInfo> params() const;
  std::span<const Column> columns() const;
  Result<Rows> query(Params params = {}, const QueryOptions& options = {});
  /// Runs to completion and reports what the statement did (blocking connections).
  Result<CommandInfo> execute(Params params = {});
  /// One execution per parameter row, as a batch (StatementImpl::execute_batch).
  Result<BatchInfo> execute_batch(std::span<const Params> rows);
  Status close();

 private:
  std::unique_ptr<StatementImpl> impl_;
};

class Connection;

/// A transaction on a connection. It must not outlive its Connection; commit
/// and rollback empty it.
class Transaction {
 public:
  Transaction() = default;
  explicit Transaction(ConnectionImpl* conn) : conn_(conn) {}
  bool is_open() const { return conn_ != nullptr; }
  Result<Rows> query(std::string_view sql, Params params = {}, const QueryOptions& options = {});
  Result<CommandInfo> execute(std::string_view sql, Params params = {});
  Result<Statement> prepare(std::string_view sql, std::span<const ParamInfo> hints = {});
  Status commit();
  Status rollback();

 private:
  ConnectionImpl* conn_ = nullptr;
};

class Connection {
 public:
  Connection() = default;
  explicit Connection(std::unique_ptr<ConnectionImpl> impl) : impl_(std::move(impl)) {}
  bool is_open() const { return impl_ != nullptr; }
  Capabilities capabilities() const;
  Result<Rows> query(std::string_view sql, Params params = {}, const QueryOptions& options = {});
  Result<CommandInfo> execute(std::string_view sql, Params params = {});
  Result<Statement> prepare(std::string_view sql, std::span<const ParamInfo> hints = {});
  Result<Transaction> begin(const BeginOptions& options = {});
  TxState tx_state() const;
  void cancel() noexcept;
  Status reset(std::string_view reset_query);
  bool alive() const;
  Status set_event_sink(EventSink* sink);
  Status close();
  /// For drivers and the server's plumbing; not for application code.
  ConnectionImpl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<ConnectionImpl> impl_;
};

/// True when `r` is Errc::would_block (a non-blocking connection must wait).
template <class T>
bool is_would_block(const Result<T>& r) {
  return !r.ok() && r.error().code == Errc::would_block;
}

/// Waits (poll(2)) for what a non-blocking connection's io_interest() names, at
/// most `timeout`. False on timeout or a poll error. For blocking contexts only:
/// tests, and executor jobs such as opening, resetting and closing.
bool wait_io(const ConnectionImpl& conn, std::chrono::milliseconds timeout);
/// Errc::connection, "no answer from the backend within <timeout> ms": out of
/// line, so that call_blocking's loop stays a few instructions long.
Error no_answer(std::chrono::milliseconds timeout);

/// Calls `f()` until it stops answering would_block, waiting with wait_io()
/// in between: a non-blocking connection used from a blocking context. After
/// `timeout` without progress it answers Errc::connection (08006).
template <class F>
auto call_blocking(const ConnectionImpl& conn, F f,
                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  for (;;) {
    auto r = f();
    if (!is_would_block(r)) [[likely]]
      return r;
    if (!wait_io(conn, timeout)) return decltype(r)(no_answer(timeout));
  }
}

/// Drains a reader and reports its command (used by execute(); blocking
/// connections only, since would_block cannot resume a drain).
Result<CommandInfo> drain(Rows& rows);

// ---------------------------------------------------------------------------
// Drivers

/// `base` followed by 64 random bits in hex and '_': a prefix for the names
/// wirepool gives prepared statements on a backend connection, so that no
/// other session on that connection can guess them.
std::string random_statement_prefix(std::string_view base);

/// What a database entry of the configuration hands its driver.
struct OpenOptions {
  std::string connection;  ///< driver-specific: path, conninfo, ODBC string
  std::string password;    ///< from password_env / password_file, may be empty
  /// The role to log in as instead of the connection's, empty = the connection's:
  /// a postgresql database's auth_user lookups, and each user pool's role under
  /// auth.mode passthrough (`password` is then that role's). Every driver but
  /// sqlite (no logins) takes it in place of its connection's user and password.
  std::string user;
  std::map<std::string, std::string> options;  ///< driver-specific knobs (validated by the driver)
  std::string base_dir;                        ///< relative paths are relative to this (state_dir)
  std::string tls_ca;                 ///< PEM file of the only trusted root, empty = no TLS
  std::vector<std::string> tls_pins;  ///< SHA-256 of accepted public keys (hex, lower case)
  /// Largest text or bytes value the driver may materialise (server.max_value_size);
  /// a larger one fails its statement with Error::value_too_large(). 0 = no limit.
  uint64_t max_value_size = 0;
  /// Several hosts (docs/high-availability.md): connect to this one only,
  /// instead of what `connection` names. Empty = as `connection` says.
  std::string host;
  int port = 0;  ///< with `host`; 0 = the connection's or the driver's default
  /// Refuse a server that does not accept writes (libpq target_session_attrs=read-write).
  bool read_write = false;
  /// The probe's bound for connecting and answering (Driver::probe).
  std::chrono::milliseconds probe_timeout{3000};
};

/// One server of a database entry with several hosts.
struct HostPort {
  std::string host;
  int port = 0;  ///< 0 = the driver's default
  bool operator==(const HostPort&) const = default;
};

/// What Driver::probe learnt of a server.
struct HostProbe {
  bool read_only = false;
  /// The timeline it writes on (PostgreSQL); 0 when unknown or read-only.
  uint32_t timeline = 0;
  /// Read-only: how far its replay is behind its primary (PostgreSQL: the
  /// last replayed commit's age while WAL waits to be replayed; MariaDB:
  /// Seconds_Behind_Master); nullopt when unknown (not replicating).
  std::optional<std::chrono::milliseconds> lag;
  /// PostgreSQL: the WAL position written (read-write) or replayed (read-only); 0 = unknown.
  uint64_t lsn = 0;
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string_view name() const = 0;
  /// Checks `options` keys and values; answers one message per problem, keyed by option.
  virtual std::vector<std::pair<std::string, std::string>> validate(const OpenOptions& o) const = 0;
  virtual Result<Connection> open(const OpenOptions& options) const = 0;
  /// `connection` with secrets replaced by "***", for log lines.
  virtual std::string redact(std::string_view connection) const { return std::string(connection); }
  /// The hosts `connection` names when it names several (libpq's `host=a,b
  /// port=p1,p2`); empty when it names one or the driver has no such form.
  virtual std::vector<HostPort> hosts(const OpenOptions& o) const {
    (void)o;
    return {};
  }
  /// Connects to `o.host` (blocking, bounded by o.probe_timeout) and asks
  /// whether it accepts writes and, if not, how far behind it replays.
  /// Drivers without it answer Errc::unsupported.
  virtual Result<HostProbe> probe(const OpenOptions& o) const {
    (void)o;
    return Error::unsupported("this driver has no health probe");
  }
};

/// The drivers built into this binary, by configuration name ("sqlite", ...);
/// nullptr for an unknown or not-yet-available one.
const Driver* find_driver(std::string_view name);
/// Names of the drivers this binary has.
std::vector<std::string_view> driver_names();

}  // namespace wirepool::db
