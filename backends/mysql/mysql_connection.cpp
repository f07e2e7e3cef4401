// The MySQL/MariaDB connection, statement and readers (libmysqlclient API;
// Debian builds against MariaDB Connector/C 3.3).
//
// Blocking calls, run by the server on its bounded executor (docs/mysql.md
// says why, with the measurement). Statements without parameters use the text
// protocol (mysql_real_query + mysql_use_result); statements with parameters
// run as server-side prepared statements over the binary protocol, fetched
// unbuffered (no mysql_stmt_store_result). Either way rows stream: nothing
// buffers a whole result, and while a result is being read the connection
// belongs to its reader, so every other call answers Busy (55000) until the
// reader is exhausted or closed, as MySQL's protocol requires ("Commands out of
// sync" otherwise).
//
// Every object a connection hands out shares its Session, so one that outlives
// Connection::close() answers closed instead of touching a closed handle.

#include "backends/mysql/mysql_connection.hpp"

#include <mysql.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "backends/mysql/mysql_errors.hpp"
#include "backends/mysql/mysql_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::mysql {

namespace {

using db::Error;
using db::Result;
using db::Status;
using sql::Dialect;

Error protocol_error(std::string sqlstate, std::string message) {
  Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

Error count_mismatch(size_t supplied, int required) {
  // PostgreSQL's wording and SQLSTATE (protocol_violation) for the same mistake.
  return protocol_error("08P01", "bind message supplies " + std::to_string(supplied) +
                                     " parameters, but the statement requires " +
                                     std::to_string(required));
}

Error busy_error() {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "55000";  // object_not_in_prerequisite_state
  e.message = "another command is already in progress on this connection";
  return e;
}

/// What a row packet may hold beside one value of max_value_size bytes: the
/// other columns and the length prefixes. A larger packet is refused unread.
constexpr uint64_t kRowHeadroom = 64 << 10;
/// The largest packet the MySQL protocol and Connector/C accept (1 GiB).
constexpr uint64_t kMaxPacket = 1ull << 30;

/// MYSQL_OPT_MAX_ALLOWED_PACKET for a max_value_size: a row packet above it
/// fails with CR_NET_PACKET_TOO_LARGE before the library allocates it.
unsigned long packet_cap(uint64_t max_value_size) {
  return static_cast<unsigned long>(std::min(max_value_size + kRowHeadroom, kMaxPacket));
}

/// Sets the options every connection (and the cancel side connection) uses.
void set_common_options(MYSQL* m, const ConnectInfo& info, unsigned timeout,
                        unsigned write_timeout) {
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  // Writes never wait for a query to run, so they can be bounded; reads can
  // (SELECT SLEEP(60) is legal): those are bounded by TCP keepalive and the
  // server's query_timeout handling through cancel().
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");  // the contract's Text is UTF-8
  const my_bool off = 0;
  // A silent reconnect would lose the session (transaction, prepared statements).
  mysql_options(m, MYSQL_OPT_RECONNECT, &off);
  // The server must never read files of the proxy's host (LOAD DATA LOCAL).
  const unsigned no_local = 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &no_local);
  if (info.max_value_size != 0) {
    const unsigned long cap = packet_cap(info.max_value_size);
    mysql_options(m, MYSQL_OPT_MAX_ALLOWED_PACKET, &cap);
  }
  if (!info.tls_ca.empty()) {
    mysql_options(m, MYSQL_OPT_SSL_CA, info.tls_ca.c_str());
    const my_bool verify = 1;  // the chain and the host name
    mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    mysql_options(m, MARIADB_OPT_TLS_VERSION, "TLSv1.3");
  }
}

/// @@global.read_only of a connected server; nullopt when the query fails.
std::optional<bool> read_only_of(MYSQL* m) {
  if (mysql_query(m, "SELECT @@global.read_only") != 0) return std::nullopt;
  MYSQL_RES* res = mysql_store_result(m);
  if (res == nullptr) return std::nullopt;
  std::optional<bool> out;
  if (MYSQL_ROW row = mysql_fetch_row(res); row != nullptr && row[0] != nullptr)
    out = std::string_view(row[0]) != "0";
  mysql_free_result(res);
  return out;
}

bool real_connect(MYSQL* m, const ConnectInfo& info, unsigned long flags) {
  const bool unix_socket = !info.socket.empty();
  return mysql_real_connect(m, unix_socket ? "localhost" : info.host.c_str(),
                            info.user.empty() ? nullptr : info.user.c_str(), info.password.c_str(),
                            info.dbname.empty() ? nullptr : info.dbname.c_str(),
                            unix_socket ? 0 : info.port,
                            unix_socket ? info.socket.c_str() : nullptr, flags) != nullptr;
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

void Session::close() {
  std::lock_guard lock(cancel_mu);
  if (closed) return;
  if (active) active->abandon();
  active = nullptr;
  closed = true;
  mysql_close(mysql);  // detaches the statements still open
  // Detached: closing them now frees memory without touching the wire.
  for (MYSQL_STMT* s : deferred_close)
    mysql_stmt_close(s);
  deferred_close.clear();
}

/// A value read as the server's bytes (text, bytes, decimal), which
/// server.max_value_size bounds.
bool is_string(Read r) {
  return r == Read::text || r == Read::bytes || r == Read::decimal;
}

int64_t affected_of(my_ulonglong n) {
  return n == static_cast<my_ulonglong>(-1) ? -1 : static_cast<int64_t>(n);
}

// ---- text protocol ----------------------------------------------------------

/// A reader of mysql_real_query's results, one per statement of the text.
class TextRows final : public ReaderBase {
 public:
  explicit TextRows(SessionPtr s) : session_(std::move(s)) {}
  ~TextRows() override { (void)close(); }

  std::optional<Error> start(std::string_view text) {
    MYSQL* m = session_->mysql;
    // The caller's text may be gone before the later results are read: the
    // verbs of multi-statement text come from a copy.
    text_.assign(text);
    pieces_ = sql::split_statements(text_, Dialect::mysql);
    was_in_trans_ = session_->in_trans();
    if (mysql_real_query(m, text_.data(), text_.size()) != 0) {
      return session_->error(was_in_trans_);
    }
    session_->active = this;
    if (auto e = load()) {
      finish_all();
      return e;
    }
    return std::nullopt;
  }

  std::span<const db::Column> columns() const override { return columns_; }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (session_->closed) return Error::closed();
    if (res_ == nullptr) return false;
    if (row.size() < columns_.size()) {
      return protocol_error("22023", "row has " + std::to_string(row.size()) +
                                         " values, the result has " +
                                         std::to_string(columns_.size()) + " columns");
    }
    MYSQL_ROW r = mysql_fetch_row(res_);
    if (r == nullptr) {
      if (mysql_errno(session_->mysql) != 0) {
        Error e = session_->error(was_in_trans_);
        finish_all();
        return e;
      }
      mysql_free_result(res_);
      res_ = nullptr;
      if (!mysql_more_results(session_->mysql)) session_->release(this);
      return false;
    }
    const unsigned long* lengths = mysql_fetch_lengths(res_);
    const uint64_t limit = session_->info.max_value_size;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (limit != 0 && r[i] != nullptr && lengths[i] > limit && is_string(reads_[i])) {
        finish_all();  // the row was read whole: the connection stays usable
        return Error::value_too_large(limit);
      }
      row[i] = value_of(i, r[i], lengths[i]);
    }
    return true;
  }

  Result<bool> next_result() override {
    if (session_->closed) return Error::closed();
    if (res_ != nullptr) {
      mysql_free_result(res_);  // reads and drops the rest of an unbuffered result
      res_ = nullptr;
    }
    if (session_->active != this) return false;
    if (!mysql_more_results(session_->mysql)) {
      session_->release(this);
      return false;
    }
    ++index_;
    const int rc = mysql_next_result(session_->mysql);
    if (rc < 0) {
      session_->release(this);
      return false;
    }
    if (rc > 0) {
      Error e = session_->error(was_in_trans_);
      finish_all();
      return e;
    }
    if (auto e = load()) {
      finish_all();
      return *e;
    }
    return true;
  }

  db::CommandInfo command() const override { return info_; }

  Status close() override {
    if (session_->closed) return {};
    finish_all();
    return {};
  }

  void abandon() override {
    if (res_ != nullptr) {
      mysql_free_result(res_);
      res_ = nullptr;
    }
  }

 private:
  /// The current result: its columns and reader, or what a statement without rows did.
  std::optional<Error> load() {
    MYSQL* m = session_->mysql;
    columns_.clear();
    reads_.clear();
    info_ = db::CommandInfo{};
    if (index_ < pieces_.size()) info_.verb = sql::command_verb(pieces_[index_], Dialect::mysql);
    if (mysql_field_count(m) == 0) {
      info_.affected = affected_of(mysql_affected_rows(m));
      const my_ulonglong id = mysql_insert_id(m);
      if (id > 0) info_.last_insert_id = static_cast<int64_t>(id);
      if (info_.verb == "SELECT" || info_.verb.empty()) info_.affected = -1;
      if (!mysql_more_results(m)) session_->release(this);
      return std::nullopt;
    }
    res_ = mysql_use_result(m);
    if (res_ == nullptr) return session_->error(was_in_trans_);
    const unsigned n = mysql_num_fields(res_);
    MYSQL_FIELD* fields = mysql_fetch_fields(res_);
    columns_.reserve(n);
    reads_.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      ColumnType t = classify(fields[i]);
      reads_.push_back(t.read);
      columns_.push_back(std::move(t.column));
    }
    return std::nullopt;
  }

  /// Drops every result still on the wire.
  void finish_all() {
    if (session_->closed) return;
    if (res_ != nullptr) {
      mysql_free_result(res_);
      res_ = nullptr;
    }
    if (session_->active == this) {
      while (mysql_more_results(session_->mysql)) {
        if (mysql_next_result(session_->mysql) != 0) break;
        if (MYSQL_RES* r = mysql_use_result(session_->mysql)) mysql_free_result(r);
      }
      session_->release(this);
    }
  }

  db::ValueView value_of(size_t i, const char* p, unsigned long len) {
    if (p == nullptr) return {};
    const std::string_view s(p, len);
    switch (reads_[i]) {
      case Read::null:
        return {};
      case Read::boolean:
        if (auto v = parse_i64(s)) return db::ValueView::boolean(*v != 0);
        break;
      case Read::i64:
        if (auto v = parse_i64(s)) return db::ValueView::int64(*v);
        break;
      case Read::u64:
        if (auto v = parse_u64(s)) return db::ValueView::uint64(*v);
        break;
      case Read::bit:
        return db::ValueView::uint64(bits_value(s));
      case Read::f32:
      case Read::f64:
        if (auto v = parse_f64(s)) return db::ValueView::float64(*v);
        break;
      case Read::decimal:
        return db::ValueView::decimal(s);
      case Read::date:
      case Read::datetime:
      case Read::timestamp:
        if (auto v = parse_datetime(s)) return db::ValueView::time(*v);
        return {};  // a zero date: no Time holds it
      case Read::time_text:
      case Read::text:
        return db::ValueView::text(s);
      case Read::bytes:
        return db::ValueView::bytes(s);
    }
    return db::ValueView::text(s);  // not what the type promised: the server's text
  }

  SessionPtr session_;
  std::string text_;
  std::vector<std::string_view> pieces_;  // into text_
  size_t index_ = 0;
  MYSQL_RES* res_ = nullptr;
  std::vector<db::Column> columns_;
  std::vector<Read> reads_;
  db::CommandInfo info_;
  bool was_in_trans_ = false;
};

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
                                      std::string_view original) {
  MYSQL_STMT* stmt = mysql_stmt_init(s->mysql);
  if (stmt == nullptr) return s->error(s->in_trans());
  auto p = std::make_shared<Prepared>(s, stmt);
  p->text = std::move(q.text);
  p->slots = std::move(q.slots);
  p->required = q.required;
  p->verb = sql::command_verb(original, Dialect::mysql);
  const bool was = s->in_trans();
  if (mysql_stmt_prepare(stmt, p->text.data(), p->text.size()) != 0) {
    return s->stmt_error(stmt, was);
  }
  p->describe();
  return p;
}

/// Binds `params` to the ?s of `p` (slot order). Answers an error for a value
/// the binary protocol cannot carry.
void bind_param(MYSQL_BIND& b, ParamCell& c, const db::Param& param) {
  const db::Value& v = param.value;
  std::memset(&b, 0, sizeof b);
  switch (v.kind) {
    case db::Kind::Null:
      b.buffer_type = MYSQL_TYPE_NULL;
      break;
    case db::Kind::Bool:
      c.i = v.b ? 1 : 0;
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = &c.i;
      break;
    case db::Kind::I64:
      c.i = v.i64;
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = &c.i;
      break;
    case db::Kind::U64:
      c.i = static_cast<int64_t>(v.u64);
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = &c.i;
      b.is_unsigned = 1;
      break;
    case db::Kind::F64:
      c.f = v.f64;
      b.buffer_type = MYSQL_TYPE_DOUBLE;
      b.buffer = &c.f;
      break;
    case db::Kind::Text:
    case db::Kind::Decimal:
    case db::Kind::Bytes:
      // Untyped text (a PostgreSQL client's OID 0) is sent as a string too: the
      // server converts it where the context needs another type.
      c.length = static_cast<unsigned long>(v.str.size());
      b.buffer_type = v.kind == db::Kind::Bytes     ? MYSQL_TYPE_BLOB
                      : v.kind == db::Kind::Decimal ? MYSQL_TYPE_NEWDECIMAL
                                                    : MYSQL_TYPE_STRING;
      b.buffer = const_cast<char*>(v.str.data());
      b.buffer_length = c.length;
      b.length = &c.length;
      break;
    case db::Kind::Time:
      c.t = mysql_time_of(v.micros);  // UTC, as the session's time_zone
      b.buffer_type = MYSQL_TYPE_DATETIME;
      b.buffer = &c.t;
      break;
  }
}

/// Storage for one result column of the binary protocol.
struct Cell {
  std::string buf;
  unsigned long length = 0;
  my_bool is_null = 0;
  my_bool error = 0;
  int64_t i = 0;
  double f = 0;
  float f32 = 0;
  MYSQL_TIME t{};
};

class StmtRows final : public ReaderBase {
 public:
  StmtRows(SessionPtr s, PreparedPtr p) : session_(std::move(s)), p_(std::move(p)) {}
  ~StmtRows() override { (void)close(); }

  std::optional<Error> start(db::Params params) {
    if (auto e = p_->refresh()) return e;
    MYSQL_STMT* stmt = p_->stmt;
    info_.verb = p_->verb;
    was_in_trans_ = session_->in_trans();
    // Values in slot order: "$2 $1 $2" binds params 1, 0, 1.
    const size_t n = p_->slots.size();
    std::vector<MYSQL_BIND>& binds = p_->param_binds;
    std::vector<ParamCell>& cells = p_->param_cells;
    binds.resize(n);
    cells.resize(n);
    for (size_t i = 0; i < n; ++i) {
      bind_param(binds[i], cells[i], params[static_cast<size_t>(p_->slots[i])]);
    }
    // Bound on every execution: the values live in the caller's parameters.
    if (n > 0 && mysql_stmt_bind_param(stmt, binds.data()) != 0) {
      return session_->stmt_error(stmt, was_in_trans_);
    }
    if (mysql_stmt_execute(stmt) != 0) return session_->stmt_error(stmt, was_in_trans_);
    // A CALL can answer several results: the wire stays this reader's until the last.
    session_->active = this;
    if (auto e = load()) {
      drain();
      return e;
    }
    return std::nullopt;
  }

  /// The current result: bound for fetching, or what a statement without rows did.
  std::optional<Error> load() {
    MYSQL_STMT* stmt = p_->stmt;
    const unsigned fields = mysql_stmt_field_count(stmt);
    if (fields == 0) {
      info_.affected = affected_of(mysql_stmt_affected_rows(stmt));
      const my_ulonglong id = mysql_stmt_insert_id(stmt);
      if (id > 0) info_.last_insert_id = static_cast<int64_t>(id);
      if (info_.verb == "SELECT") info_.affected = -1;
      columns_.clear();
      if (!mysql_more_results(session_->mysql)) session_->release(this);
      return std::nullopt;
    }
    // The metadata the execution sent: at prepare time MariaDB types "? + 0" as
    // DOUBLE and a bare "?" as NULL; the bound values settle them.
    p_->describe_executed();
    columns_.clear();
    reads_.clear();
    for (const ColumnType& t : p_->types) {
      columns_.push_back(t.column);
      reads_.push_back(t.read);
    }
    cells_.assign(fields, Cell{});
    binds_.assign(fields, MYSQL_BIND{});
    for (size_t i = 0; i < fields; ++i)
      bind_column(i, p_->types[i].column.native.length);
    if (mysql_stmt_bind_result(stmt, binds_.data()) != 0) {
      return session_->stmt_error(stmt, was_in_trans_);
    }
    fetching_ = true;
    return std::nullopt;
  }

  std::span<const db::Column> columns() const override { return columns_; }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (session_->closed) return Error::closed();
    if (!fetching_) return false;
    if (row.size() < columns_.size()) {
      return protocol_error("22023", "row has " + std::to_string(row.size()) +
                                         " values, the result has " +
                                         std::to_string(columns_.size()) + " columns");
    }
    MYSQL_STMT* stmt = p_->stmt;
    const int rc = mysql_stmt_fetch(stmt);
    if (rc == MYSQL_NO_DATA) {
      finish();
      return false;
    }
    if (rc == 1) {
      Error e = session_->stmt_error(stmt, was_in_trans_);
      drain();
      return e;
    }
    // The length of each value is known before it is copied out of the row.
    if (const uint64_t limit = session_->info.max_value_size; limit != 0) {
      for (size_t i = 0; i < cells_.size(); ++i) {
        const Cell& c = cells_[i];
        if (binds_[i].buffer_type == MYSQL_TYPE_BLOB && !c.is_null && c.length > limit) {
          drain();
          return Error::value_too_large(limit);
        }
      }
    }
    if (rc == MYSQL_DATA_TRUNCATED) {
      // A value longer than its buffer: grow the buffer, read the column again,
      // and keep the larger buffer bound for the rows that follow.
      bool rebind = false;
      for (size_t i = 0; i < cells_.size(); ++i) {
        Cell& c = cells_[i];
        if (!c.error || c.is_null || c.length <= c.buf.size()) continue;
        c.buf.resize(c.length);
        binds_[i].buffer = c.buf.data();
        binds_[i].buffer_length = static_cast<unsigned long>(c.buf.size());
        if (mysql_stmt_fetch_column(stmt, &binds_[i], static_cast<unsigned>(i), 0) != 0) {
          Error e = session_->stmt_error(stmt, was_in_trans_);
          drain();
          return e;
        }
        rebind = true;
      }
      if (rebind) (void)mysql_stmt_bind_result(stmt, binds_.data());
    }
    for (size_t i = 0; i < cells_.size(); ++i)
      row[i] = value_of(i);
    return true;
  }

  Result<bool> next_result() override {
    if (session_->closed) return Error::closed();
    finish();
    if (session_->active != this) return false;
    if (!mysql_more_results(session_->mysql)) {
      session_->release(this);
      return false;
    }
    info_ = db::CommandInfo{};
    info_.verb = p_->verb;
    const int rc = mysql_stmt_next_result(p_->stmt);
    if (rc < 0) {
      session_->release(this);
      return false;
    }
    if (rc > 0) {
      Error e = session_->stmt_error(p_->stmt, was_in_trans_);
      drain();
      return e;
    }
    if (auto e = load()) {
      drain();
      return *e;
    }
    return true;
  }

  db::CommandInfo command() const override { return info_; }

  Status close() override {
    if (session_->closed) return {};
    drain();
    return {};
  }

  void abandon() override { fetching_ = false; }

 private:
  void bind_column(size_t i, int64_t declared_length) {
    MYSQL_BIND& b = binds_[i];
    Cell& c = cells_[i];
    std::memset(&b, 0, sizeof b);
    b.is_null = &c.is_null;
    b.error = &c.error;
    b.length = &c.length;
    switch (reads_[i]) {
      case Read::boolean:
      case Read::i64:
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &c.i;
        return;
      case Read::u64:
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &c.i;
        b.is_unsigned = 1;
        return;
      case Read::f32:
        b.buffer_type = MYSQL_TYPE_FLOAT;
        b.buffer = &c.f32;
        return;
      case Read::f64:
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        b.buffer = &c.f;
        return;
      case Read::date:
      case Read::datetime:
      case Read::timestamp:
        b.buffer_type = MYSQL_TYPE_DATETIME;
        b.buffer = &c.t;
        b.buffer_length = sizeof c.t;
        return;
      case Read::time_text:
        b.buffer_type = MYSQL_TYPE_TIME;
        b.buffer = &c.t;
        b.buffer_length = sizeof c.t;
        return;
      default: {
        // Strings, decimals, blobs, bits: raw bytes. Start at the declared length
        // (bounded); longer values grow the buffer on the row that needs it.
        const int64_t want = declared_length > 0 ? declared_length : 256;
        c.buf.resize(static_cast<size_t>(std::clamp<int64_t>(want, 16, 1024)));
        b.buffer_type = MYSQL_TYPE_BLOB;
        b.buffer = c.buf.data();
        b.buffer_length = static_cast<unsigned long>(c.buf.size());
        return;
      }
    }
  }

  db::ValueView value_of(size_t i) const {
    const Cell& c = cells_[i];
    if (c.is_null) return {};
    const std::string_view s(c.buf.data(), std::min<size_t>(c.length, c.buf.size()));
    switch (reads_[i]) {
      case Read::null:
        return {};
      case Read::boolean:
        return db::ValueView::boolean(c.i != 0);
      case Read::i64:
        return db::ValueView::int64(c.i);
      case Read::u64:
        return db::ValueView::uint64(static_cast<uint64_t>(c.i));
      case Read::f32:
        return db::ValueView::float64(widen_float(c.f32));
      case Read::f64:
        return db::ValueView::float64(c.f);
      case Read::date:
      case Read::datetime:
      case Read::timestamp:
        if (auto v = micros_of(c.t)) return db::ValueView::time(*v);
        return {};
      case Read::time_text:
        time_text_ = format_time_of_day(c.t);
        return db::ValueView::text(time_text_);
      case Read::decimal:
        return db::ValueView::decimal(s);
      case Read::text:
        return db::ValueView::text(s);
      case Read::bytes:
        return db::ValueView::bytes(s);
      case Read::bit:
        return db::ValueView::uint64(bits_value(s));
    }
    return {};
  }

  /// The current result is exhausted (or dropped): reads what is left of it.
  void finish() {
    if (!fetching_) return;
    fetching_ = false;
    if (session_->closed) return;
    mysql_stmt_free_result(p_->stmt);  // reads and drops the rest of the rows
    if (!mysql_more_results(session_->mysql)) session_->release(this);
  }

  /// Drops every result still on the wire and lets the connection go.
  void drain() {
    finish();
    if (session_->closed || session_->active != this) return;
    while (mysql_more_results(session_->mysql)) {
      if (mysql_stmt_next_result(p_->stmt) != 0) break;
      mysql_stmt_free_result(p_->stmt);
    }
    session_->release(this);
  }

  SessionPtr session_;
  PreparedPtr p_;
  std::vector<db::Column> columns_;
  std::vector<Read> reads_;
  std::vector<Cell> cells_;
  std::vector<MYSQL_BIND> binds_;
  mutable std::string time_text_;
  db::CommandInfo info_;
  bool fetching_ = false;
  bool was_in_trans_ = false;
};

/// Checks the caller's parameters against what the text uses.
std::optional<Error> check_params(db::Params params, int required) {
  for (const auto& p : params) {
    if (!p.name.empty()) {
      return protocol_error(
          "42P02", "the mysql driver binds positional parameters only, got \"" + p.name + "\"");
    }
  }
  if (params.size() != static_cast<size_t>(required)) {
    return count_mismatch(params.size(), required);
  }
  return std::nullopt;
}

Result<std::unique_ptr<db::RowsImpl>> run_text(const SessionPtr& s, std::string_view text) {
  auto rows = std::make_unique<TextRows>(s);
  if (auto e = rows->start(text)) return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

Result<std::unique_ptr<db::RowsImpl>> run_prepared(const SessionPtr& s, PreparedPtr p,
                                                   db::Params params) {
  auto rows = std::make_unique<StmtRows>(s, std::move(p));
  if (auto e = rows->start(params)) return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

Error multiple_commands() {
  // PostgreSQL's answer to the same request.
  return protocol_error("42601", "cannot insert multiple commands into a prepared statement");
}

// ---- prepared statement -----------------------------------------------------

class MysqlStatement final : public db::StatementImpl {
 public:
  /// `p` is null for a statement the text protocol runs (no parameters).
  MysqlStatement(SessionPtr s, PreparedPtr p, std::string text, int required,
                 std::span<const db::ParamInfo> hints)
      : session_(std::move(s)), p_(std::move(p)), text_(std::move(text)), required_(required) {
    // As PostgreSQL: a statement has as many parameters as its highest $N or
    // as the client declared types for, whichever is more; an unused one is
    // still supplied by every execution.
    params_.resize(std::max(static_cast<size_t>(required_), hints.size()));
    for (size_t i = 0; i < hints.size(); ++i)
      params_[i] = hints[i];
    if (p_) {
      for (const auto& t : p_->types)
        columns_.push_back(t.column);
    }
  }

  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params, const db::QueryOptions&) override {
    if (session_->closed) return Error::closed();
    if (session_->active) return busy_error();
    if (auto e = check_params(params, static_cast<int>(params_.size()))) return *e;
    // Without parameters, the text protocol (see the file comment).
    if (required_ == 0 || !p_) return run_text(session_, text_);
    return run_prepared(session_, p_, params);
  }

  Status close() override {
    p_.reset();  // closed on the server now, or when the wire is free
    return {};
  }

 private:
  SessionPtr session_;
  PreparedPtr p_;
  std::string text_;
  int required_ = 0;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
};

// ---- connection -------------------------------------------------------------

class MysqlConnection final : public db::ConnectionImpl {
 public:
  explicit MysqlConnection(SessionPtr s) : session_(std::move(s)) {}
  ~MysqlConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = Dialect::mysql;
    c.multi_statement = true;
    c.blocking = true;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions&) override {
    if (auto e = usable()) return *e;
    sql::QuestionText q = sql::to_question_markers(text, Dialect::mysql);
    if (!q.error.empty()) return protocol_error("42601", q.error);
    if (auto e = check_params(params, q.required)) return *e;
    if (q.slots.empty()) return run_text(session_, text);
    if (sql::split_statements(text, Dialect::mysql).size() > 1) return multiple_commands();
    auto p = prepare_on_server(session_, std::move(q), text);
    if (!p.ok()) return p.take_error();
    return run_prepared(session_, std::move(p.value()), params);
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    if (auto e = usable()) return *e;
    if (sql::split_statements(text, Dialect::mysql).size() > 1) return multiple_commands();
    sql::QuestionText q = sql::to_question_markers(text, Dialect::mysql);
    if (!q.error.empty()) return protocol_error("42601", q.error);
    const int required = q.required;
    PreparedPtr p;
    if (!sql::is_blank(text, Dialect::mysql)) {
      auto r = prepare_on_server(session_, std::move(q), text);
      if (r.ok()) {
        p = std::move(r.value());
      } else if (r.error().vendor_code != 1295 || required > 0) {
        // 1295: "not supported in the prepared statement protocol yet"; without
        // parameters the text protocol runs it anyway.
        return r.take_error();
      }
    }
    return std::unique_ptr<db::StatementImpl>(std::make_unique<MysqlStatement>(
        session_, std::move(p), std::string(text), required, hints));
  }

  /// START TRANSACTION, with the isolation level and access mode of the
  /// client's BEGIN where it names them (MySQL sets them with SET TRANSACTION).
  Status begin(const db::BeginOptions& options) override {
    if (auto e = usable()) return *e;
    session_->tx_aborted = false;
    const auto words = sql::leading_words(options.native_sql, Dialect::mysql, 8);
    std::string level;
    bool read_only = false;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "ISOLATION" && words[i + 1] == "LEVEL" && i + 2 < words.size()) {
        level = words[i + 2];
        if ((level == "READ" || level == "REPEATABLE") && i + 3 < words.size()) {
          level += " " + words[i + 3];
        }
      }
      if (words[i] == "READ" && words[i + 1] == "ONLY" && (i == 0 || words[i - 1] != "ISOLATION"))
        read_only = true;
    }
    if (level == "SERIALIZABLE" || level == "REPEATABLE READ" || level == "READ COMMITTED" ||
        level == "READ UNCOMMITTED") {
      const std::string set = "SET TRANSACTION ISOLATION LEVEL " + level;
      if (Status st = session_->exec(set); !st.ok()) return st;
    }
    return session_->exec(read_only ? "START TRANSACTION READ ONLY" : "START TRANSACTION");
  }

  /// A transaction the server rolled back (a deadlock) answers 40P01 rather
  /// than a COMMIT that succeeds with nothing to commit.
  Status commit() override {
    if (auto e = usable()) return *e;
    if (session_->tx_aborted) {
      session_->tx_aborted = false;
      (void)session_->exec("ROLLBACK");  // ends what the server may still hold open
      Error e;
      e.code = db::Errc::busy;
      e.sqlstate = "40P01";
      e.message = "the transaction was rolled back by the server (deadlock); nothing committed";
      return e;
    }
    return session_->exec("COMMIT");
  }

  Status rollback() override {
    if (auto e = usable()) return *e;
    session_->tx_aborted = false;
    return session_->exec("ROLLBACK");
  }

  db::TxState tx_state() const override {
    if (session_->closed || session_->broken) return db::TxState::idle;
    if (session_->tx_aborted) return db::TxState::failed;
    return session_->in_trans() ? db::TxState::in_transaction : db::TxState::idle;
  }

  /// KILL QUERY <thread id> on a side connection, bounded by a 2 s timeout.
  void cancel() noexcept override {
    ConnectInfo info;
    unsigned long id = 0;
    {
      std::lock_guard lock(session_->cancel_mu);
      if (session_->closed) return;
      info = session_->info;
      id = session_->thread_id;
    }
    MYSQL* side = mysql_init(nullptr);
    if (side == nullptr) return;
    info.connect_timeout = 2;
    set_common_options(side, info, 2, 2);
    const unsigned read_timeout = 2;
    mysql_options(side, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
    if (real_connect(side, info, 0)) {
      const std::string kill = "KILL QUERY " + std::to_string(id);
      (void)mysql_real_query(side, kill.data(), kill.size());
    }
    mysql_close(side);
  }

  Status reset(std::string_view reset_query) override {
    if (session_->closed) return Error::closed();
    if (session_->broken) return Error::connection("the connection to the backend was lost");
    if (session_->active) {
      // A reader left open by the last client: drop what is left of its results.
      (void)session_->active->close();
    }
    // COM_RESET_CONNECTION: rolls back, drops temporary tables, user variables,
    // session variables and the server's prepared statements, so the next client
    // finds a clean session (the statements of this connection are prepared
    // again when next used). Session variables return to the server's defaults:
    // the time zone is set to UTC again.
    session_->tx_aborted = false;
    if (mysql_reset_connection(session_->mysql) != 0) return session_->error(false);
    ++session_->generation;
    if (Status st = session_->exec("SET time_zone = '+00:00'"); !st.ok()) return st;
    return ConnectionImpl::reset(reset_query);
  }

  int64_t server_pid() const override { return static_cast<int64_t>(session_->thread_id); }
  int socket_fd() const override {
    return session_->closed ? -1 : static_cast<int>(mysql_get_socket(session_->mysql));
  }

  /// No round trip: an idle connection on which the server has sent something
  /// (its error before closing an idle session) or which the peer closed.
  bool alive() const override {
    if (session_->closed || session_->broken) return false;
    if (session_->active) return true;
    pollfd p{};
    p.fd = static_cast<int>(mysql_get_socket(session_->mysql));
    p.events = POLLIN;
    if (p.fd < 0) return false;
    const int rc = ::poll(&p, 1, 0);
    return rc == 0;
  }

  Status close() override {
    session_->close();
    return {};
  }

 private:
  std::optional<Error> usable() const {
    if (session_->closed) return Error::closed();
    if (session_->broken) return Error::connection("the connection to the backend was lost");
    if (session_->active) return busy_error();
    return std::nullopt;
  }

  SessionPtr session_;
};

void set_keepalive(MYSQL* m) {
  const int fd = static_cast<int>(mysql_get_socket(m));
  if (fd < 0) return;
  // A vanished server is noticed in about a minute: 30 s idle, then 3 probes 10 s
  // apart (as the PostgreSQL driver asks libpq). Unix sockets refuse the TCP ones.
  const int on = 1, idle = 30, interval = 10, count = 3;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0) return;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

}  // namespace

Result<db::Connection> open_connection(const ConnectInfo& info) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Error::connection("mysql_init failed: out of memory");
  set_common_options(m, info, info.connect_timeout, 30);
  // TIMESTAMP values cross in UTC: Time is microseconds since the epoch.
  mysql_options(m, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  // Multi-statement text returns each result in turn; FOUND_ROWS makes UPDATE
  // report the rows it matched, as PostgreSQL does, not only those it changed.
  const unsigned long flags = CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS | CLIENT_FOUND_ROWS;
  if (!real_connect(m, info, flags)) {
    Error e = map_error(mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
    e.code = db::Errc::connection;
    mysql_close(m);
    return e;
  }
  if (info.read_write) {
    // MariaDB has no target_session_attrs: a server made read-only since its
    // last probe is refused here, as libpq refuses one for PostgreSQL.
    const auto ro = read_only_of(m);
    if (!ro || *ro) {
      Error e =
          Error::connection(ro ? "the server is read-only (@@read_only = 1)"
                               : "could not read @@read_only: " + std::string(mysql_error(m)));
      e.sqlstate = ro ? "25006" : "08006";
      mysql_close(m);
      return e;
    }
  }
  set_keepalive(m);
  auto session = std::make_shared<Session>(m, info);
  return db::Connection(std::make_unique<MysqlConnection>(std::move(session)));
}

Result<db::HostProbe> probe_host(const ConnectInfo& info, std::chrono::milliseconds timeout) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Error::connection("mysql_init failed: out of memory");
  std::unique_ptr<MYSQL, decltype(&mysql_close)> owned(m, &mysql_close);
  const unsigned secs = static_cast<unsigned>(std::max<int64_t>(1, (timeout.count() + 999) / 1000));
  set_common_options(m, info, secs, secs);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &secs);
  if (!real_connect(m, info, 0)) {
    Error e = map_error(mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
    e.code = db::Errc::connection;
    return e;
  }
  db::HostProbe out;
  const auto ro = read_only_of(m);
  if (!ro) {
    Error e = Error::connection("could not read @@read_only: " + std::string(mysql_error(m)));
    e.sqlstate = "08006";
    return e;
  }
  out.read_only = *ro;
  if (!out.read_only) return out;
  // A replica: Seconds_Behind_Master is NULL while its SQL thread is stopped.
  if (mysql_query(m, "SHOW SLAVE STATUS") != 0) return out;  // no privilege: lag unknown
  MYSQL_RES* res = mysql_store_result(m);
  if (res == nullptr) return out;
  std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> rows(res, &mysql_free_result);
  const unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  if (MYSQL_ROW row = mysql_fetch_row(res)) {
    for (unsigned i = 0; i < n; ++i) {
      if (std::string_view(fields[i].name) == "Seconds_Behind_Master" && row[i] != nullptr)
        out.lag = std::chrono::seconds(std::strtoll(row[i], nullptr, 10));
    }
  }
  return out;
}

}  // namespace wirepool::mysql
