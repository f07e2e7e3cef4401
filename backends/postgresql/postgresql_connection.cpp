// The PostgreSQL connection, prepared statement, reader and COPY stream.
//
// Every call is non-blocking (libpq's asynchronous API on a non-blocking
// socket). A call that would wait answers would_block; the caller waits for
// io_interest() and repeats the same call, which resumes where it stopped:
//   - connection-level calls keep their progress in Session::op (stage enums
//     below), created by the first call and dropped when the call answers;
//   - a Rows or COPY stream keeps its own (Phase, flags), and only changes it
//     once a step has completed, so a repeated call continues the same step.
// A query steps to its first result before returning (bad SQL fails at
// query()), and rows then stream one PGresult at a time (single-row mode, or
// 256-row chunks with libpq 17+); next_borrowed lends PQgetvalue's bytes.

#include "backends/postgresql/postgresql_connection.hpp"

#include <libpq-fe.h>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "backends/postgresql/postgresql_errors.hpp"
#include "backends/postgresql/postgresql_options.hpp"
#include "backends/postgresql/postgresql_session.hpp"
#include "backends/postgresql/postgresql_tls.hpp"
#include "backends/postgresql/postgresql_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::postgresql {

namespace {

using db::Errc;
using db::Error;
using db::Result;
using db::Status;
using sql::Dialect;
/// One step of a resumable call: nullopt = done, else would_block or the error.
using Step = std::optional<Error>;

bool is_error_status(int s) {
  return s == PGRES_BAD_RESPONSE || s == PGRES_NONFATAL_ERROR || s == PGRES_FATAL_ERROR;
}

bool is_row_chunk(int s) {
  return s == PGRES_SINGLE_TUPLE || s == kPgresTuplesChunk;
}

/// True when `text` holds more than one statement (it then runs on the simple
/// protocol, which the extended protocol's single Parse cannot).
bool several_statements(std::string_view text) {
  if (text.find(';') == std::string_view::npos) return false;
  return sql::split_statements(text, Dialect::postgres).size() > 1;
}

Error invalid(std::string sqlstate, std::string message) {
  Error e;
  e.code = Errc::invalid_query;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

// ---- connection-level calls in flight -------------------------------------------

/// The op of the call (kind, key) in flight, or a fresh one replacing (and so
/// abandoning) any other: its command's results are drained by settle().
template <class Op>
Op& resume(Session& s, OpKind kind, std::string_view key) {
  auto* op = dynamic_cast<Op*>(s.op.get());
  if (op == nullptr || op->kind != kind || op->key != key) {
    auto fresh = std::make_unique<Op>();
    fresh->kind = kind;
    fresh->key = std::string(key);
    op = fresh.get();
    s.op = std::move(fresh);
  }
  return *op;
}

/// A call that answers anything but would_block is over: its op goes.
Error end_call(Session& s, Error e) {
  if (e.code != Errc::would_block) s.op.reset();
  return e;
}

// ---- reader -------------------------------------------------------------------

class PgRows final : public db::RowsImpl {
 public:
  PgRows(SessionPtr session, bool native) : session_(std::move(session)), native_(native) {}
  ~PgRows() override {
    clear_cur();
    if (next_) PQclear(next_);
    // A command still in flight is drained by the session's next call.
    session_->release(this);
  }

  /// The rest of the call that sent the query: its first result, then (for a
  /// statement that returned no rows) the one after it, so that the
  /// transaction state is current when query() answers.
  Step start() {
    if (!started_) {
      PGresult* r = nullptr;
      if (auto e = session_->poll_result(r)) return e;
      started_ = true;
      const bool bound = session_->bound();
      if (r == nullptr) {
        phase_ = Phase::done;
        session_->command_done();
        return std::nullopt;
      }
      begin_statement(r);
      if (pending_ && !bound) pending_->before_bind = true;
    }
    if (phase_ == Phase::draining) return finish_failure();
    if (phase_ == Phase::ended) return lookahead();
    return std::nullopt;
  }

  std::span<const db::Column> columns() const override { return columns_; }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (!attached()) return Error::closed("result");
    if (row.size() < columns_.size()) {
      return invalid("22023", "row has " + std::to_string(row.size()) + " values, the result has " +
                                  std::to_string(columns_.size()) + " columns");
    }
    for (;;) {
      if (cur_ != nullptr && row_ < nrows_) {
        const int r = row_++;
        if (auto e = fill(row, r)) return *e;
        return true;
      }
      switch (phase_) {
        case Phase::rows:
          if (auto e = pump()) return *e;
          continue;
        case Phase::ended:
          clear_cur();
          if (auto e = lookahead()) return *e;
          return false;
        case Phase::ready_next:
        case Phase::done:
          clear_cur();
          return false;
        case Phase::draining:
          return *finish_failure();
      }
    }
  }

  Result<bool> next_result() override {
    if (!attached()) return Error::closed("result");
    for (;;) {
      switch (phase_) {
        case Phase::rows:  // the rest of this statement's rows are skipped
          clear_cur();
          if (auto e = pump()) return *e;
          continue;
        case Phase::ended:
          clear_cur();
          if (auto e = lookahead()) return *e;
          continue;
        case Phase::draining:
          return *finish_failure();
        case Phase::done:
          clear_cur();
          return false;
        case Phase::ready_next: {
          clear_cur();
          PGresult* r = next_;
          next_ = nullptr;
          begin_statement(r);
          if (phase_ == Phase::draining) return *finish_failure();
          return true;
        }
      }
    }
  }

  db::CommandInfo command() const override { return info_; }

  Status close() override {
    clear_cur();
    if (next_) {
      PQclear(next_);
      next_ = nullptr;
    }
    if (attached() && phase_ != Phase::done) {
      Exchange rest;
      if (auto e = session_->collect(rest)) {
        if (e->code == Errc::would_block) return *e;
        session_->release(this);
        return *e;
      }
      phase_ = Phase::done;
    }
    session_->release(this);
    return {};
  }

  int held_rows() const { return cur_ ? PQntuples(cur_) : 0; }

 private:
  /// rows: the statement's rows are arriving; ended: its last result was
  /// read, not yet what follows; ready_next: `next_` holds the next
  /// statement's first result; draining: `pending_` is the error to answer
  /// once the command has been read to its end; done: the command is over.
  enum class Phase : uint8_t { rows, ended, ready_next, draining, done };

  bool attached() const { return !session_->closed() && session_->holder() == this; }

  void clear_cur() {
    if (cur_) PQclear(cur_);
    cur_ = nullptr;
    row_ = nrows_ = 0;
  }
  void set_cur(PGresult* r) {
    clear_cur();
    cur_ = r;
    nrows_ = PQntuples(r);
  }

  void describe(const PGresult* r) {
    const int n = PQnfields(r);
    columns_.clear();
    reads_.clear();
    columns_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const Oid type = PQftype(r, i);
      columns_.push_back(make_column(PQfname(r, i), type, PQfmod(r, i), PQftable(r, i),
                                     static_cast<int16_t>(PQftablecol(r, i)),
                                     static_cast<int16_t>(PQfsize(r, i)),
                                     static_cast<int16_t>(PQfformat(r, i))));
      reads_.push_back(read_for_oid(type));
    }
    scratch_.resize(static_cast<size_t>(n));
  }

  void set_command(const PGresult* r) {
    info_ = {};
    const char* tag = PQcmdStatus(const_cast<PGresult*>(r));
    info_.tag = tag ? tag : "";
    auto [verb, affected] = parse_command_tag(info_.tag);
    info_.verb = std::move(verb);
    info_.affected = affected;
  }

  /// The first result of a statement.
  void begin_statement(PGresult* r) {
    info_ = {};
    const int st = PQresultStatus(r);
    if (is_row_chunk(st)) {
      describe(r);
      set_cur(r);
      phase_ = Phase::rows;
      return;
    }
    switch (st) {
      case PGRES_TUPLES_OK:  // no rows, or every row (when no row mode could be set)
        describe(r);
        set_command(r);
        set_cur(r);
        phase_ = Phase::ended;
        return;
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        columns_.clear();
        set_command(r);
        PQclear(r);
        phase_ = Phase::ended;
        return;
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
        session_->abandon_copy(st == PGRES_COPY_IN);
        pending_ = Error::unsupported("COPY FROM STDIN and COPY TO STDOUT run through copy()");
        break;
      default:
        pending_ =
            is_error_status(st)
                ? session_->result_error(r)
                : Error::unsupported("unexpected result from PostgreSQL: " +
                                     std::string(PQresStatus(static_cast<ExecStatusType>(st))));
        break;
    }
    PQclear(r);
    columns_.clear();
    phase_ = Phase::draining;
  }

  /// Reads the next result of the statement whose rows are arriving.
  Step pump() {
    PGresult* r = nullptr;
    if (auto e = session_->poll_result(r)) return e;
    clear_cur();
    if (r == nullptr) {  // the command ended without a last result: nothing more
      phase_ = Phase::done;
      session_->command_done();
      return std::nullopt;
    }
    const int st = PQresultStatus(r);
    if (is_row_chunk(st)) {
      set_cur(r);
    } else if (is_error_status(st)) {
      pending_ = session_->result_error(r);
      PQclear(r);
      phase_ = Phase::draining;
    } else {
      set_command(r);
      set_cur(r);  // TUPLES_OK: zero rows in row mode
      phase_ = Phase::ended;
    }
    return std::nullopt;
  }

  /// After a statement's last result: the next statement's first, or the end.
  Step lookahead() {
    PGresult* r = nullptr;
    if (auto e = session_->poll_result(r)) return e;
    if (r == nullptr) {
      phase_ = Phase::done;
      session_->command_done();
    } else {
      next_ = r;
      phase_ = Phase::ready_next;
    }
    return std::nullopt;
  }

  /// Reads the failed command to its end, then answers its error.
  Step finish_failure() {
    Exchange rest;
    auto e = session_->collect(rest);
    if (e && e->code == Errc::would_block) return e;
    phase_ = Phase::done;
    Error err = pending_ ? std::move(*pending_) : Error::connection("command failed");
    pending_.reset();
    if (e) err.code = Errc::connection;  // the link went down with it
    return err;
  }

  Step fill(std::span<db::ValueView> row, int r) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      const int c = static_cast<int>(i);
      db::ValueView& out = row[i];
      // A NULL has length 0: only an empty value asks whether it is one.
      const int len = PQgetlength(cur_, r, c);
      if (len == 0 && PQgetisnull(cur_, r, c)) {
        out = db::ValueView{};
        continue;
      }
      const std::string_view bytes(PQgetvalue(cur_, r, c), static_cast<size_t>(len));
      if (native_) {
        out = db::ValueView::bytes(bytes);
        continue;
      }
      const db::NativeType& n = columns_[i].native;
      if (n.pg_format == 1 && decode_binary_fast(reads_[i], bytes, out)) continue;
      if (auto e = decode_value(reads_[i], n.pg_oid, n.pg_format, bytes, scratch_[i], out)) {
        return e;
      }
    }
    return std::nullopt;
  }

  SessionPtr session_;
  bool native_;
  bool started_ = false;
  Phase phase_ = Phase::rows;
  PGresult* cur_ = nullptr;  // the rows being handed out (one row, or one chunk)
  int row_ = 0;
  int nrows_ = 0;
  PGresult* next_ = nullptr;
  std::optional<Error> pending_;
  std::vector<db::Column> columns_;
  std::vector<Read> reads_;
  std::vector<std::string> scratch_;  // values built for the current row (numeric, uuid)
  db::CommandInfo info_;
};

struct QueryOp : PendingOp {
  enum class Stage : uint8_t { settle, send, start } stage = Stage::settle;
  std::unique_ptr<PgRows> rows;
};

/// The shared part of Connection::query and Statement::query. `send(conn, key,
/// extended)` encodes the parameters and sends the command (or answers an
/// error), setting `extended` when it sent Bind and Execute.
template <class Send>
Result<std::unique_ptr<db::RowsImpl>> run_query(const SessionPtr& sp, OpKind kind,
                                                std::string_view key, bool native, Send&& send) {
  Session& s = *sp;
  if (auto e = s.enter()) return *e;
  QueryOp& op = resume<QueryOp>(s, kind, key);
  if (op.stage == QueryOp::Stage::settle) {
    if (auto e = s.settle()) return end_call(s, *e);
    op.stage = QueryOp::Stage::send;
  }
  if (op.stage == QueryOp::Stage::send) {
    bool extended = false;  // Bind and Execute went out: watch for BindComplete
    if (auto e = send(s.conn(), op.key, extended)) return end_call(s, *e);
    s.sent();
    if (extended) s.watch_bind();
    (void)select_row_mode(s.conn(), s.extras());
    op.rows = std::make_unique<PgRows>(sp, native);
    op.stage = QueryOp::Stage::start;
  }
  if (auto e = op.rows->start()) return end_call(s, *e);
  std::unique_ptr<PgRows> rows = std::move(op.rows);
  s.op.reset();
  s.hold(rows.get());
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

std::optional<Error> refuse_named(db::Params params) {
  for (const auto& p : params) {
    if (!p.name.empty()) {
      return invalid("42P02", "parameter \"" + p.name +
                                  "\" has a name: the postgresql driver binds positional "
                                  "parameters ($1, $2, ...) only");
    }
  }
  return std::nullopt;
}

// ---- simple commands (BEGIN, COMMIT, ROLLBACK, reset) ---------------------------

struct CommandOp : PendingOp {
  enum class Stage : uint8_t { settle, send, collect } stage = Stage::settle;
  bool was_failed = false;  // PQTRANS_INERROR when the command was sent
  Exchange x;
};

struct CommandOutcome {
  std::string tag;
  bool was_failed = false;
};

/// Runs one statement to its end. `simple`: the simple protocol (several
/// statements allowed); else the extended one (exactly one statement).
Result<CommandOutcome> run_command(Session& s, OpKind kind, const std::string& text, bool simple) {
  if (auto e = s.enter()) return *e;
  CommandOp& op = resume<CommandOp>(s, kind, text);
  if (op.stage == CommandOp::Stage::settle) {
    if (auto e = s.settle()) return end_call(s, *e);
    op.stage = CommandOp::Stage::send;
  }
  if (op.stage == CommandOp::Stage::send) {
    op.was_failed = s.tx_state() == db::TxState::failed;
    const int ok = simple ? PQsendQuery(s.conn(), text.c_str())
                          : PQsendQueryParams(s.conn(), text.c_str(), 0, nullptr, nullptr, nullptr,
                                              nullptr, 0);
    if (ok == 0) return end_call(s, s.send_failed());
    s.sent();
    op.stage = CommandOp::Stage::collect;
  }
  if (auto e = s.collect(op.x)) return end_call(s, *e);
  if (op.x.error) return end_call(s, std::move(*op.x.error));
  CommandOutcome out{std::move(op.x.tag), op.was_failed};
  s.op.reset();
  return out;
}

/// Is `text` one of PostgreSQL's own ways to start a transaction?
bool is_pg_begin(std::string_view text) {
  if (text.empty() || several_statements(text)) return false;
  const auto w = sql::leading_words(text, Dialect::postgres, 2);
  if (w.empty()) return false;
  if (w[0] == "START") return w.size() == 2 && w[1] == "TRANSACTION";
  if (w[0] != "BEGIN") return false;
  if (w.size() == 1) return true;
  for (const char* ok : {"TRANSACTION", "WORK", "ISOLATION", "READ", "DEFERRABLE", "NOT"}) {
    if (w[1] == ok) return true;
  }
  return false;
}

// ---- prepared statement ---------------------------------------------------------

class PgStatement final : public db::StatementImpl {
 public:
  PgStatement(SessionPtr session, std::string name, const PGresult* described)
      : session_(std::move(session)), name_(std::move(name)) {
    const int np = PQnparams(described);
    for (int i = 0; i < np; ++i) {
      const Oid type = PQparamtype(described, i);
      db::ParamInfo p;
      p.kind = read_for_oid(type) == Read::other ? db::Kind::Null : kind_for_oid(type);
      p.native.name = std::string(type_name(type));
      p.native.pg_oid = type;
      params_.push_back(std::move(p));
    }
    const int nf = PQnfields(described);
    for (int i = 0; i < nf; ++i) {
      columns_.push_back(make_column(PQfname(described, i), PQftype(described, i),
                                     PQfmod(described, i), PQftable(described, i),
                                     static_cast<int16_t>(PQftablecol(described, i)),
                                     static_cast<int16_t>(PQfsize(described, i)), 0));
    }
  }
  ~PgStatement() override {
    if (!queued_ && !session_->closed()) session_->queue_deallocate(name_);
  }

  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params,
                                              const db::QueryOptions& options) override {
    if (queued_) return Error::closed("statement");
    const int format = result_format_for(options);
    return run_query(session_, OpKind::statement_query, name_, options.native,
                     [&](PGconn* conn, const std::string& name, bool& extended) -> Step {
                       if (auto e = refuse_named(params)) return e;
                       ParamBuffer& buf = ParamBuffer::reused();
                       for (size_t i = 0; i < params.size(); ++i) {
                         const uint32_t type = i < params_.size() ? params_[i].native.pg_oid : 0;
                         if (auto e = buf.add_typed(params[i], type)) return e;
                       }
                       buf.finish();
                       if (PQsendQueryPrepared(conn, name.c_str(), buf.count(), buf.values(),
                                               buf.lengths(), buf.formats(), format) == 0) {
                         return session_->send_failed();
                       }
                       extended = true;
                       return std::nullopt;
                     });
  }

  /// Deallocates now when the connection is free, else when it next is.
  Status close() override {
    if (session_->closed()) return {};
    if (!queued_) {
      session_->queue_deallocate(name_);
      queued_ = true;
    }
    // A reader or another call in flight: the DEALLOCATE waits for the next call.
    if (session_->holder() != nullptr || session_->op != nullptr) return {};
    if (session_->enter(false)) return {};  // the link is down: the statement went with it
    if (auto e = session_->settle()) return *e;
    return {};
  }

 private:
  SessionPtr session_;
  std::string name_;
  bool queued_ = false;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
};

struct PrepareOp : PendingOp {
  enum class Stage : uint8_t {
    settle,
    send_prepare,
    collect_prepare,
    send_describe,
    collect_describe
  } stage = Stage::settle;
  std::string name;
  Exchange prepared;
  Exchange described;
};

// ---- COPY -------------------------------------------------------------------------

class PgCopy final : public db::CopyStreamImpl {
 public:
  /// `response`: the COPY_IN / COPY_OUT result, for its formats.
  PgCopy(SessionPtr session, const PGresult* response)
      : session_(std::move(session)), input_(PQresultStatus(response) == PGRES_COPY_IN) {
    format_ = static_cast<int16_t>(PQbinaryTuples(response) ? 1 : 0);
    const int n = PQnfields(response);
    for (int i = 0; i < n; ++i)
      column_formats_.push_back(static_cast<int16_t>(PQfformat(response, i)));
  }
  ~PgCopy() override {
    if (attached() && !done_) {
      if (input_ && !end_sent_) session_->abandon_copy(true);
      if (!input_ && !ended_) session_->abandon_copy(false);
    }
    session_->release(this);
  }

  bool is_input() const override { return input_; }
  int16_t format() const override { return format_; }
  std::vector<int16_t> column_formats() const override { return column_formats_; }

  Status write(std::string_view data) override {
    if (!attached() || done_) return Error::closed("COPY stream");
    if (!input_ || end_sent_) return invalid("25000", "this COPY stream does not take data");
    if (data.size() > static_cast<size_t>(INT_MAX)) {
      return invalid("54000", "COPY data chunk is too large");
    }
    PGconn* conn = session_->conn();
    const int r = PQputCopyData(conn, data.data(), static_cast<int>(data.size()));
    if (r < 0) return session_->send_failed();
    if (r == 0) return session_->would_block(true, true);  // libpq's buffer is full
    if (PQflush(conn) < 0) return session_->lost();        // 1: the rest goes with the next call
    return {};
  }

  Result<std::optional<std::string>> read() override {
    if (input_) return invalid("25000", "this COPY stream sends data: it has nothing to read");
    if (done_) return std::optional<std::string>();
    if (!attached()) return Error::closed("COPY stream");
    PGconn* conn = session_->conn();
    bool consumed = false;
    while (!ended_) {
      char* buf = nullptr;
      const int n = PQgetCopyData(conn, &buf, 1);
      if (n > 0) {
        std::string chunk(buf, static_cast<size_t>(n));
        PQfreemem(buf);
        return std::optional<std::string>(std::move(chunk));
      }
      if (n == 0) {
        if (consumed) return session_->would_block(true, false);
        if (PQconsumeInput(conn) == 0) return session_->lost();
        consumed = true;
        continue;
      }
      if (n == -2) return session_->send_failed();
      ended_ = true;  // -1: the data is over; the command's result follows
    }
    if (auto e = end()) return *e;
    return std::optional<std::string>();
  }

  Result<db::CommandInfo> finish(std::optional<std::string> error_message) override {
    if (done_) return info_;  // read() reached the end
    if (!attached()) return Error::closed("COPY stream");
    if (input_ && !end_sent_) {
      const int r =
          PQputCopyEnd(session_->conn(), error_message ? error_message->c_str() : nullptr);
      if (r < 0) return session_->send_failed();
      if (r == 0) return session_->would_block(true, true);
      end_sent_ = true;
    }
    if (!input_ && !ended_) {
      session_->abandon_copy(false);  // the unread data is discarded
      ended_ = true;
    }
    if (auto e = end()) return *e;
    return info_;
  }

 private:
  bool attached() const { return !session_->closed() && session_->holder() == this; }

  /// Reads the COPY's own result; the stream is then over.
  Step end() {
    if (auto e = session_->collect(x_)) {
      if (e->code == Errc::would_block) return e;
      done_ = true;
      session_->release(this);
      return e;
    }
    done_ = true;
    session_->release(this);
    if (x_.error) return std::move(*x_.error);
    info_.tag = x_.tag;
    auto [verb, affected] = parse_command_tag(x_.tag);
    info_.verb = std::move(verb);
    info_.affected = affected;
    return std::nullopt;
  }

  SessionPtr session_;
  bool input_;
  int16_t format_ = 0;  // CopyInResponse / CopyOutResponse: overall and per column
  std::vector<int16_t> column_formats_;
  bool end_sent_ = false;  // FROM STDIN: PQputCopyEnd went out
  bool ended_ = false;     // TO STDOUT: the data is over
  bool done_ = false;
  Exchange x_;
  db::CommandInfo info_;
};

struct CopyOp : PendingOp {
  enum class Stage : uint8_t { settle, send, first, failing } stage = Stage::settle;
  std::optional<Error> error;
  Exchange rest;
};

struct ResetOp : PendingOp {
  enum class Stage : uint8_t {
    settle,
    rollback_send,
    rollback_collect,
    query_send,
    query_collect
  } stage = Stage::settle;
  Exchange x;
};

// ---- connection -------------------------------------------------------------------

class PgConnection final : public db::ConnectionImpl {
 public:
  explicit PgConnection(SessionPtr session) : session_(std::move(session)) {}
  ~PgConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = Dialect::postgres;
    c.multi_statement = true;
    c.session_settings = true;
    c.notices = true;
    c.notifications = true;
    c.copy = true;
    c.blocking = false;
    c.pg_native = true;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions& options) override {
    const int format = result_format_for(options);
    return run_query(
        session_, OpKind::query, text, options.native,
        [&](PGconn* conn, const std::string& sql, bool& extended) -> Step {
          if (auto e = refuse_named(params)) return e;
          if (params.empty() && several_statements(sql)) {
            // The simple protocol: several statements, text results.
            if (PQsendQuery(conn, sql.c_str()) == 0) return session_->send_failed();
            return std::nullopt;
          }
          ParamBuffer& buf = ParamBuffer::reused();
          for (const auto& p : params) {
            if (auto e = buf.add_natural(p)) return e;
          }
          buf.finish();
          if (PQsendQueryParams(conn, sql.c_str(), buf.count(), buf.types(), buf.values(),
                                buf.lengths(), buf.formats(), format) == 0) {
            return session_->send_failed();
          }
          extended = true;
          return std::nullopt;
        });
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    Session& s = *session_;
    if (auto e = s.enter()) return *e;
    PrepareOp& op = resume<PrepareOp>(s, OpKind::prepare, text);
    using Stage = PrepareOp::Stage;
    if (op.stage == Stage::settle) {
      if (auto e = s.settle()) return end_call(s, *e);
      op.stage = Stage::send_prepare;
    }
    if (op.stage == Stage::send_prepare) {
      op.name = s.next_statement_name();
      std::vector<Oid> types;
      for (const auto& h : hints)
        types.push_back(h.native.pg_oid);
      if (PQsendPrepare(s.conn(), op.name.c_str(), op.key.c_str(), static_cast<int>(types.size()),
                        types.empty() ? nullptr : types.data()) == 0) {
        return end_call(s, s.send_failed());
      }
      s.sent();
      op.stage = Stage::collect_prepare;
    }
    if (op.stage == Stage::collect_prepare) {
      if (auto e = s.collect(op.prepared)) return end_call(s, *e);
      if (op.prepared.error) return end_call(s, std::move(*op.prepared.error));
      op.stage = Stage::send_describe;
    }
    if (op.stage == Stage::send_describe) {
      if (PQsendDescribePrepared(s.conn(), op.name.c_str()) == 0) {
        s.queue_deallocate(op.name);
        return end_call(s, s.send_failed());
      }
      s.sent();
      op.described.keep = true;
      op.stage = Stage::collect_describe;
    }
    if (auto e = s.collect(op.described)) return end_call(s, *e);
    if (op.described.error || op.described.kept == nullptr) {
      s.queue_deallocate(op.name);
      return end_call(s, op.described.error ? std::move(*op.described.error)
                                            : Error::connection("no description of " + op.name));
    }
    auto stmt = std::make_unique<PgStatement>(session_, op.name, op.described.kept);
    s.op.reset();
    return std::unique_ptr<db::StatementImpl>(std::move(stmt));
  }

  Result<std::vector<db::Column>> describe_portal(std::string_view name) override {
    Session& s = *session_;
    if (auto e = s.enter()) return *e;
    const std::string key(name);
    CommandOp& op = resume<CommandOp>(s, OpKind::describe_portal, key);
    if (op.stage == CommandOp::Stage::settle) {
      if (auto e = s.settle()) return end_call(s, *e);
      op.stage = CommandOp::Stage::send;
    }
    if (op.stage == CommandOp::Stage::send) {
      if (PQsendDescribePortal(s.conn(), key.c_str()) == 0) return end_call(s, s.send_failed());
      s.sent();
      op.x.keep = true;
      op.stage = CommandOp::Stage::collect;
    }
    if (auto e = s.collect(op.x)) return end_call(s, *e);
    if (op.x.error) return end_call(s, std::move(*op.x.error));
    std::vector<db::Column> columns;
    if (const PGresult* d = op.x.kept) {
      for (int i = 0; i < PQnfields(d); ++i) {
        columns.push_back(make_column(PQfname(d, i), PQftype(d, i), PQfmod(d, i), PQftable(d, i),
                                      static_cast<int16_t>(PQftablecol(d, i)),
                                      static_cast<int16_t>(PQfsize(d, i)),
                                      static_cast<int16_t>(PQfformat(d, i))));
      }
    }
    s.op.reset();
    return columns;
  }

  Status begin(const db::BeginOptions& options) override {
    const std::string text = is_pg_begin(options.native_sql) ? options.native_sql : "BEGIN";
    auto r = run_command(*session_, OpKind::begin, text, false);
    if (!r.ok()) return r.take_error();
    return {};
  }

  /// PostgreSQL answers COMMIT of a failed transaction with ROLLBACK and no
  /// error (the seed's silent rollback): that is answered as an error here.
  Status commit() override {
    auto r = run_command(*session_, OpKind::commit, "COMMIT", false);
    if (!r.ok()) return r.take_error();
    if (r->was_failed || r->tag == "ROLLBACK") {
      Error e =
          make_error("25P02", "the transaction was rolled back because a statement in it failed");
      e.code = Errc::invalid_query;
      e.detail = "COMMIT answered " + (r->tag.empty() ? std::string("nothing") : r->tag);
      e.hint = "run the transaction again";
      return e;
    }
    return {};
  }

  Status rollback() override {
    Session& s = *session_;
    const bool resuming = s.op && s.op->kind == OpKind::rollback;
    if (!resuming && !s.closed() && s.holder() == nullptr && !s.in_flight() &&
        s.tx_state() == db::TxState::idle) {
      return {};  // nothing to roll back (and no WARNING from the server)
    }
    auto r = run_command(s, OpKind::rollback, "ROLLBACK", false);
    if (!r.ok()) return r.take_error();
    return {};
  }

  db::TxState tx_state() const override { return session_->tx_state(); }

  int relay_socket() override { return session_->relay_socket(); }
  void relay_done(db::TxState state, bool broken) override { session_->relay_done(state, broken); }

  void cancel() noexcept override { session_->cancel(); }

  db::IoInterest io_interest() const override { return session_->interest(); }

  std::vector<std::pair<std::string, std::string>> server_parameters() const override {
    return session_->server_parameters();
  }
  int64_t server_pid() const override { return PQbackendPID(session_->conn()); }
  int socket_fd() const override { return PQsocket(session_->conn()); }

  /// Abandons any open reader or COPY stream (they answer closed after), rolls
  /// back an open transaction, then runs `reset_query` (simple protocol).
  Status reset(std::string_view reset_query) override {
    Session& s = *session_;
    if (auto e = s.enter(false)) return *e;
    if (s.holder() != nullptr) s.hold(nullptr);
    ResetOp& op = resume<ResetOp>(s, OpKind::reset, reset_query);
    using Stage = ResetOp::Stage;
    if (op.stage == Stage::settle) {
      if (auto e = s.settle()) return end_call(s, *e);
      op.stage = s.tx_state() == db::TxState::idle ? Stage::query_send : Stage::rollback_send;
    }
    if (op.stage == Stage::rollback_send) {
      if (PQsendQuery(s.conn(), "ROLLBACK") == 0) return end_call(s, s.send_failed());
      s.sent();
      op.stage = Stage::rollback_collect;
    }
    if (op.stage == Stage::rollback_collect) {
      if (auto e = s.collect(op.x)) return end_call(s, *e);
      if (op.x.error) return end_call(s, std::move(*op.x.error));
      op.stage = Stage::query_send;
    }
    if (op.stage == Stage::query_send) {
      if (op.key.empty()) {
        s.op.reset();
        return {};
      }
      if (PQsendQuery(s.conn(), op.key.c_str()) == 0) return end_call(s, s.send_failed());
      s.sent();
      op.stage = Stage::query_collect;
    }
    if (auto e = s.collect(op.x)) return end_call(s, *e);
    if (op.x.error) return end_call(s, std::move(*op.x.error));
    s.op.reset();
    return {};
  }

  bool alive() const override { return session_->probe(); }

  Status set_event_sink(db::EventSink* sink) override {
    if (session_->closed()) return Error::closed();
    session_->set_sink(sink);
    return {};
  }

  Result<std::unique_ptr<db::CopyStreamImpl>> copy(std::string_view text) override {
    Session& s = *session_;
    if (auto e = s.enter()) return *e;
    CopyOp& op = resume<CopyOp>(s, OpKind::copy, text);
    using Stage = CopyOp::Stage;
    if (op.stage == Stage::settle) {
      if (auto e = s.settle()) return end_call(s, *e);
      op.stage = Stage::send;
    }
    if (op.stage == Stage::send) {
      if (PQsendQuery(s.conn(), op.key.c_str()) == 0) return end_call(s, s.send_failed());
      s.sent();
      op.stage = Stage::first;
    }
    if (op.stage == Stage::first) {
      PGresult* r = nullptr;
      if (auto e = s.poll_result(r)) return end_call(s, *e);
      if (r == nullptr) {
        s.command_done();
        return end_call(s, invalid("42601", "no statement to run as COPY"));
      }
      const int st = PQresultStatus(r);
      if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT) {
        auto stream = std::make_unique<PgCopy>(session_, r);
        PQclear(r);
        s.op.reset();
        s.hold(stream.get());
        return std::unique_ptr<db::CopyStreamImpl>(std::move(stream));
      }
      if (is_error_status(st)) {
        op.error = s.result_error(r);
      } else {
        Error e = invalid("42601", "copy() runs COPY ... FROM STDIN or COPY ... TO STDOUT");
        e.detail = std::string("the statement ran and answered ") + PQresStatus(PQresultStatus(r));
        op.error = std::move(e);
      }
      PQclear(r);
      op.stage = Stage::failing;
    }
    if (auto e = s.collect(op.rest)) return end_call(s, *e);
    return end_call(s, std::move(*op.error));
  }

  Status close() override {
    session_->close();
    return {};
  }

 private:
  SessionPtr session_;
};

/// Seconds each host may take, as libpq's connect_timeout (0 or unset: 10;
/// below 2: 2), times the hosts the connection names (libpq tries them in turn).
std::chrono::steady_clock::duration connect_budget(PGconn* conn) {
  int seconds = 10;
  size_t hosts = 1;
  if (PQconninfoOption* opts = PQconninfo(conn)) {
    for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
      if (o->val == nullptr || *o->val == '\0') continue;
      const std::string_view key = o->keyword;
      if (key == "connect_timeout") {
        const int v = std::atoi(o->val);
        if (v > 0) seconds = std::max(v, 2);
      } else if (key == "host" || key == "hostaddr") {
        const std::string_view v = o->val;
        hosts = std::max(hosts, static_cast<size_t>(std::count(v.begin(), v.end(), ',')) + 1);
      }
    }
    PQconninfoFree(opts);
  }
  return std::chrono::seconds(seconds) * static_cast<int>(std::min<size_t>(hosts, 16));
}

/// Waits until the socket is ready for `st`'s direction or `deadline` passes.
bool wait_socket(PGconn* conn, PostgresPollingStatusType st,
                 std::chrono::steady_clock::time_point deadline) {
  pollfd p{};
  p.fd = PQsocket(conn);
  p.events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // PQconnectPoll reports the socket's error
  }
}

/// Drives PQconnectPoll to the end. With TLS, the server's key is checked
/// against the pins as soon as the handshake is done: libpq returns from the
/// call that completes it (then sends the startup packet, and answers an
/// authentication request only in a later call), so a server with an
/// unpinned key never sees a password, a SCRAM proof or a hash.
std::optional<Error> drive_connect(
    PGconn* conn, bool tls, const std::vector<std::string>& pins,
    std::optional<std::chrono::steady_clock::time_point> until = std::nullopt) {
  if (PQstatus(conn) == CONNECTION_BAD) return connect_error(PQerrorMessage(conn));
  const auto deadline = until.value_or(std::chrono::steady_clock::now() + connect_budget(conn));
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;  // as libpq's documentation says to start
  for (;;) {
    if (tls) {
      const ConnStatusType cs = PQstatus(conn);
      if (tls_established(conn)) {
        if (auto e = check_pins(conn, pins)) return e;
      } else if (cs == CONNECTION_AWAITING_RESPONSE || cs == CONNECTION_AUTH_OK ||
                 cs == CONNECTION_OK) {
        Error e = Error::connection("the backend connection went on without TLS");
        e.sqlstate = "08001";
        return e;
      }
    }
    if (st == PGRES_POLLING_OK) return std::nullopt;
    if (st == PGRES_POLLING_FAILED) return connect_error(PQerrorMessage(conn));
    if (!wait_socket(conn, st, deadline)) {
      Error e = Error::connection("timeout expired connecting to the backend");
      e.sqlstate = "08001";
      return e;
    }
    st = PQconnectPoll(conn);
  }
}

}  // namespace

Result<db::Connection> open_connection(const db::OpenOptions& o) {
  const ConnectParams params = connect_params(o);
  PGconn* conn = PQconnectStartParams(params.keywords.data(), params.values.data(), 1);
  if (conn == nullptr) return Error::connection("out of memory creating a libpq connection");
  // Verbose messages carry the server's SQLSTATE (connect_error reads it back).
  PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
  std::vector<std::string> pins;
  for (const auto& p : o.tls_pins)
    pins.push_back(normalize_pin(p));
  if (auto e = drive_connect(conn, !o.tls_ca.empty(), pins)) {
    PQfinish(conn);
    return *e;
  }
  PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
  if (PQsetnonblocking(conn, 1) != 0) {
    Error e = Error::connection("could not make the connection non-blocking: " +
                                trim_message(PQerrorMessage(conn)));
    PQfinish(conn);
    return e;
  }
  auto session = std::make_shared<Session>(conn);
  return db::Connection(std::make_unique<PgConnection>(std::move(session)));
}

Result<db::HostProbe> probe_host(const db::OpenOptions& o) {
  const auto deadline = std::chrono::steady_clock::now() + o.probe_timeout;
  const ConnectParams params = connect_params(o);
  PGconn* conn = PQconnectStartParams(params.keywords.data(), params.values.data(), 1);
  if (conn == nullptr) return Error::connection("out of memory creating a libpq connection");
  std::unique_ptr<PGconn, decltype(&PQfinish)> owned(conn, &PQfinish);
  PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
  std::vector<std::string> pins;
  for (const auto& p : o.tls_pins)
    pins.push_back(normalize_pin(p));
  if (auto e = drive_connect(conn, !o.tls_ca.empty(), pins, deadline)) return *e;
  // One evaluation of pg_is_in_recovery(): pg_walfile_name fails in recovery.
  // A standby's lag: 0 when it has replayed all it received, else the age of
  // the last commit it replayed (grows while replay waits or is paused).
  static const char* kQuery =
      "SELECT r, current_setting('transaction_read_only'), "
      "CASE WHEN r THEN '' ELSE pg_walfile_name(pg_current_wal_lsn()) END, "
      "pg_wal_lsn_diff(CASE WHEN r THEN pg_last_wal_replay_lsn() "
      "ELSE pg_current_wal_lsn() END, '0/0'), "
      "CASE WHEN NOT r THEN NULL "
      "WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "
      "ELSE (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)"
      "::bigint END "
      "FROM pg_is_in_recovery() r";
  if (PQsetnonblocking(conn, 1) != 0 || PQsendQuery(conn, kQuery) == 0)
    return connect_error(PQerrorMessage(conn));
  for (;;) {
    const int flushed = PQflush(conn);
    if (flushed < 0) return connect_error(PQerrorMessage(conn));
    if (flushed == 0 && PQconsumeInput(conn) == 0) return connect_error(PQerrorMessage(conn));
    if (flushed == 0 && !PQisBusy(conn)) break;
    if (!wait_socket(conn, flushed > 0 ? PGRES_POLLING_WRITING : PGRES_POLLING_READING, deadline)) {
      Error e = Error::connection("timeout expired waiting for the backend's role");
      e.sqlstate = "08006";
      return e;
    }
  }
  db::HostProbe out;
  bool answered = false;
  while (PGresult* r = PQgetResult(conn)) {
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 5) {
      answered = true;
      out.read_only = std::string_view(PQgetvalue(r, 0, 0)) == "t" ||
                      std::string_view(PQgetvalue(r, 0, 1)) == "on";
      // A WAL file name starts with the timeline, 8 hex digits.
      const std::string wal = PQgetvalue(r, 0, 2);
      if (!out.read_only && wal.size() >= 8)
        out.timeline = static_cast<uint32_t>(std::stoul(wal.substr(0, 8), nullptr, 16));
      if (!PQgetisnull(r, 0, 3)) out.lsn = std::strtoull(PQgetvalue(r, 0, 3), nullptr, 10);
      if (out.read_only && !PQgetisnull(r, 0, 4)) {
        out.lag = std::chrono::milliseconds(
            std::max<long long>(0, std::strtoll(PQgetvalue(r, 0, 4), nullptr, 10)));
      }
    }
    PQclear(r);
  }
  if (!answered) {
    Error e = Error::connection("the backend did not answer the role query: " +
                                trim_message(PQerrorMessage(conn)));
    e.sqlstate = "08006";
    return e;
  }
  return out;
}

int held_rows_for_test(const db::RowsImpl& rows) {
  const auto* pg = dynamic_cast<const PgRows*>(&rows);
  return pg ? pg->held_rows() : -1;
}

}  // namespace wirepool::postgresql
