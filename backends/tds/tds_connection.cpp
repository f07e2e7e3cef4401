// The SQL Server connection, statement and reader.
//
// One request at a time per connection (no MARS): a request is written whole,
// packet by packet, then its response is read token by token as the caller
// asks for rows, so a result streams and is never buffered whole. A query
// reads up to its first result (COLMETADATA) or first DONE, so bad SQL fails
// at query(). Closing a reader before its end sends ATTENTION when the server
// is still sending, else discards what is buffered. Every object a connection
// hands out shares its Session, so one that outlives Connection::close()
// answers closed.

#include "backends/tds/tds_connection.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "backends/tds/tds_errors.hpp"
#include "backends/tds/tds_params.hpp"
#include "backends/tds/tds_transport.hpp"
#include "protocol/tds/errors.hpp"
#include "sql/lexer.hpp"

namespace wirepool::tdsdrv {

namespace {

using db::Error;
using db::Result;
using db::Status;
using Clock = Transport::Clock;

Error protocol_error(std::string message) {
  Error e = Error::connection("TDS protocol error from the SQL Server backend: " + message);
  e.sqlstate = "08P01";
  return e;
}

Error simple_error(db::Errc code, std::string sqlstate, std::string message) {
  Error e;
  e.code = code;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

uint64_t le64(std::string_view s) {
  uint64_t v = 0;
  for (size_t i = 0; i < s.size() && i < 8; ++i)
    v |= uint64_t{static_cast<uint8_t>(s[i])} << (8 * i);
  return v;
}

/// An NVARCHAR(MAX) RPC parameter (statement text, declarations).
tds::RpcParam text_param(std::string name, std::string text) {
  tds::RpcParam p;
  p.name = std::move(name);
  p.value.type.type = tds::type::kNVarChar;
  p.value.type.max_length = tds::kPlpMarker;
  p.value.type.collation = tds::kDefaultCollation;
  p.value.value = db::Value::text(std::move(text));
  return p;
}

tds::RpcParam int_param(std::string name, std::optional<int64_t> v, bool output = false) {
  tds::RpcParam p;
  p.name = std::move(name);
  p.status = output ? tds::param_status::kByRef : 0;
  p.value.type.type = tds::type::kIntN;
  p.value.type.max_length = 4;
  if (v) p.value.value = db::Value::int64(*v);
  return p;
}

/// The connection state every handle shares.
struct Session {
  Options opt;
  tls::ClientContextPtr ctx;
  Transport t;
  tds::TokenDecoder decoder;
  size_t tok_pos = 0;
  uint64_t descriptor = 0;  ///< the server's transaction descriptor, 0 = none
  bool tx_failed = false;   ///< a statement failed in the transaction, or the server ended it
  bool server_ended = false;
  bool in_rollback = false;  ///< our own COMMIT/ROLLBACK is running
  bool reset_next = false;   ///< RESETCONNECTION on the next request
  bool closed = false;
  bool reader_open = false;
  std::string database;
  std::string server_version;
  std::string routing;
  tds::Collation collation;
  bool has_collation = false;
  db::EventSink* sink = nullptr;
  std::vector<tds::ReturnValue> return_values;
  /// The last COLMETADATA of the current response (sp_prepare's result description).
  std::vector<tds::ColumnMeta> metadata;

  Clock::time_point deadline() const { return Clock::now() + opt.read_timeout; }

  Status usable() const {
    if (closed) return Error::closed();
    if (!t.is_open()) return Error::connection("the SQL Server connection is broken");
    return {};
  }

  Status request(tds::PacketType type, std::string_view payload) {
    if (auto st = usable(); !st.ok()) return st;
    t.clear_cancel();
    t.tokens().clear();
    tok_pos = 0;
    return_values.clear();
    metadata.clear();
    const uint8_t status = reset_next ? tds::status::kResetConnection : 0;
    reset_next = false;
    return t.send(type, payload, status);
  }

  void observe(const tds::Token& tok) {
    if (const auto* e = std::get_if<tds::EnvChange>(&tok)) {
      switch (e->type) {
        case tds::env::kDatabase:
          database = e->new_value;
          break;
        case tds::env::kPacketSize: {
          uint32_t n = 0;
          for (char c : e->new_value)
            if (c >= '0' && c <= '9') n = n * 10 + static_cast<uint32_t>(c - '0');
          // Never above 16,383: a packet must fit one TLS record.
          t.set_packet_size(std::min(n, kMaxDriverPacketSize));
          break;
        }
        case tds::env::kBeginTransaction:
          descriptor = le64(e->new_value);
          server_ended = false;
          break;
        case tds::env::kCommitTransaction:
        case tds::env::kRollbackTransaction:
        case 17:  // transaction ended (DTC and batch-ended transactions)
          if (!in_rollback && descriptor != 0 && e->type != tds::env::kCommitTransaction) {
            // The server rolled the transaction back by itself (XACT_ABORT,
            // a deadlock victim, severity 16+ in some batches): the client
            // still thinks it is open; never let a COMMIT look successful.
            server_ended = true;
            tx_failed = true;
          }
          descriptor = 0;
          break;
        case tds::env::kSqlCollation:
          // The database's default collation (5 bytes). Result columns carry
          // their own in COLMETADATA, which is what decoding uses; this one is
          // reported in server_parameters().
          if (e->new_value.size() == 5) {
            std::copy(e->new_value.begin(), e->new_value.end(), collation.bytes.begin());
            has_collation = true;
          }
          break;
        case 20:
          routing = routing_target(e->new_value);
          break;
        default:
          break;
      }
    } else if (const auto* m = std::get_if<tds::ServerMessage>(&tok)) {
      if (!m->is_error && sink != nullptr) {
        db::Notice n;
        n.severity = "INFO";
        n.sqlstate = "00000";
        n.message = m->message;
        sink->on_notice(n);
      }
    } else if (const auto* rv = std::get_if<tds::ReturnValue>(&tok)) {
      return_values.push_back(*rv);
    } else if (const auto* cols = std::get_if<std::vector<tds::ColumnMeta>>(&tok)) {
      if (!cols->empty()) metadata = *cols;
    }
  }

  /// Sends ATTENTION and reads until its acknowledgement (DONE with DONE_ATTN),
  /// discarding the rest of the cancelled response.
  Status attention() {
    t.clear_cancel();
    if (auto st = t.send(tds::PacketType::attention, {}); !st.ok()) return st;
    const auto until = deadline();
    for (;;) {
      auto d = decoder.next(tds::as_bytes(std::string_view(t.tokens()).substr(tok_pos)));
      if (d.status == tds::DecodeStatus::ok) {
        tok_pos += d.consumed;
        observe(d.message);
        if (const auto* done = std::get_if<tds::Done>(&d.message)) {
          if ((done->status & tds::done::kAttn) != 0) {
            t.tokens().clear();
            tok_pos = 0;
            // Everything after the acknowledgement belongs to nothing: the response is over.
            return {};
          }
        }
        continue;
      }
      if (d.status == tds::DecodeStatus::error) {
        t.mark_broken();
        return d.over_limit ? value_too_large(true) : protocol_error(d.error);
      }
      if (t.response_complete()) {
        // The cancelled response ended first: the acknowledgement is a message of its own.
        t.tokens().erase(0, tok_pos);
        tok_pos = 0;
        t.begin_response();
      }
      auto r = t.read_packet(until);
      if (!r.ok()) {
        if (r.error().code == db::Errc::busy) {  // cancelled again while cancelling
          t.clear_cancel();
          continue;
        }
        t.mark_broken();
        return r.take_error();
      }
    }
  }

  /// 54000 for a value above opt.max_value_size. `unread`: the value was
  /// refused inside its token, so the connection is closed with it.
  Error value_too_large(bool unread) const {
    Error e = Error::value_too_large(opt.max_value_size != 0 ? opt.max_value_size
                                                             : tds::Limits{}.max_value);
    if (unread) {
      e.code = db::Errc::connection;
      e.detail =
          "The value was refused before it was read whole; the backend connection is closed.";
    }
    return e;
  }

  /// The next token of the current response (nullopt at its end). A cancel()
  /// while waiting sends ATTENTION and answers 57014.
  Result<std::optional<tds::Token>> next_token() {
    for (;;) {
      auto d = decoder.next(tds::as_bytes(std::string_view(t.tokens()).substr(tok_pos)));
      if (d.status == tds::DecodeStatus::ok) {
        tok_pos += d.consumed;
        if (tok_pos == t.tokens().size()) {
          t.tokens().clear();
          tok_pos = 0;
        }
        observe(d.message);
        return std::optional<tds::Token>(std::move(d.message));
      }
      if (d.status == tds::DecodeStatus::error) {
        t.mark_broken();
        return d.over_limit ? value_too_large(true) : protocol_error(d.error);
      }
      if (t.response_complete()) {
        if (tok_pos < t.tokens().size()) {
          t.mark_broken();
          return protocol_error("the response ended inside a token");
        }
        return std::optional<tds::Token>();
      }
      if (tok_pos > 0) {
        t.tokens().erase(0, tok_pos);
        tok_pos = 0;
      }
      // A token cut short is decoded again only once the bytes it needs are here.
      do {
        auto r = t.read_packet(deadline());
        if (!r.ok()) {
          Error e = r.take_error();
          if (e.code == db::Errc::busy) {
            if (auto st = attention(); !st.ok()) return st.take_error();
            return e;
          }
          return e;
        }
      } while (t.tokens().size() < d.needed && !t.response_complete());
    }
  }

  /// Reads the rest of the response; the first ERROR (or transport error) is the answer.
  Status finish(std::optional<Error> first = std::nullopt) {
    for (;;) {
      auto tok = next_token();
      if (!tok.ok()) return tok.take_error();
      if (!tok.value()) break;
      if (const auto* m = std::get_if<tds::ServerMessage>(&*tok.value())) {
        if (m->is_error && !first) first = map_server_error(*m);
      }
    }
    if (first) {
      if (descriptor != 0) tx_failed = true;
      return *first;
    }
    return {};
  }
};
using SessionPtr = std::shared_ptr<Session>;

const char* int_name(uint32_t n) {
  switch (n) {
    case 1:
      return "tinyint";
    case 2:
      return "smallint";
    case 4:
      return "int";
    default:
      return "bigint";
  }
}

std::string sized(const char* base, uint32_t length, uint32_t unit) {
  if (length == tds::kPlpMarker) return std::string(base) + "(max)";
  return std::string(base) + "(" + std::to_string(length / unit) + ")";
}

// ---- reader ------------------------------------------------------------------

class TdsRows final : public db::RowsImpl {
 public:
  TdsRows(SessionPtr s, std::string_view sql) : s_(std::move(s)) {
    for (auto stmt : sql::split_statements(sql, sql::Dialect::tsql))
      verbs_.push_back(sql::command_verb(stmt, sql::Dialect::tsql));
    s_->reader_open = true;
  }
  ~TdsRows() override { (void)close(); }

  /// Reads up to the first result.
  Status start() {
    auto r = advance();
    if (!r.ok()) return r.take_error();
    return {};
  }

  std::span<const db::Column> columns() const override { return cols_; }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (closed_ || s_->closed) return Error::closed("result");
    if (!in_rows_) return false;
    for (;;) {
      auto tok = s_->next_token();
      if (!tok.ok()) return fail(tok.take_error());
      if (!tok.value()) {
        end_response();
        if (err_) return *err_;
        return false;
      }
      tds::Token& t = *tok.value();
      if (auto* r = std::get_if<tds::Row>(&t)) {
        row_ = std::move(*r);
        if (const uint64_t limit = s_->opt.max_value_size; limit != 0) {
          // UCS-2 is decoded to UTF-8 within twice the limit: check the result.
          for (const tds::TypedValue& v : row_.values) {
            if ((v.value.kind == db::Kind::Text || v.value.kind == db::Kind::Bytes) &&
                v.value.str.size() > limit) {
              row_ = {};
              Error e = s_->value_too_large(false);
              // The stream is in step: cancel the rest and keep the connection.
              if (auto st = s_->attention(); !st.ok()) e.code = db::Errc::connection;
              return fail(std::move(e));
            }
          }
        }
        const size_t n = std::min(row.size(), row_.values.size());
        for (size_t i = 0; i < n; ++i)
          row[i] = db::view_of(row_.values[i].value);
        return true;
      }
      if (const auto* m = std::get_if<tds::ServerMessage>(&t)) {
        if (m->is_error && !err_) err_ = map_server_error(*m);
        continue;
      }
      if (const auto* d = std::get_if<tds::Done>(&t)) {
        if (d->token == tds::token::kDoneProc) continue;
        in_rows_ = false;
        if (err_ || (d->status & tds::done::kError) != 0) return fail_and_drain();
        set_command(*d);
        return false;
      }
    }
  }

  Result<bool> next_result() override {
    if (closed_ || s_->closed) return Error::closed("result");
    while (in_rows_) {
      std::vector<db::ValueView> scratch(cols_.size());
      auto r = next_borrowed(scratch);
      if (!r.ok()) return r;
    }
    if (finished_) return false;
    ++index_;
    return advance();
  }

  db::CommandInfo command() const override { return cmd_; }

  Status close() override {
    if (closed_) return {};
    closed_ = true;
    if (finished_ || s_->closed) return {};
    finished_ = true;
    s_->reader_open = false;
    if (!s_->t.is_open()) return {};
    if (!in_rows_) {
      // Between results: the rest is usually a short tail (RETURNSTATUS,
      // DONEPROC). Read it; stop the server only if another rowset begins.
      for (;;) {
        auto tok = s_->next_token();
        if (!tok.ok()) return tok.take_error();
        if (!tok.value()) return {};
        if (const auto* cols = std::get_if<std::vector<tds::ColumnMeta>>(&*tok.value())) {
          if (!cols->empty()) break;
        }
      }
    }
    if (s_->t.response_complete()) {
      s_->t.tokens().clear();
      s_->tok_pos = 0;
      return {};
    }
    // The server is still sending rows: stop it rather than read them all.
    return s_->attention();
  }

 private:
  /// Moves to the next result: true at a COLMETADATA (rows follow) or at the
  /// DONE of a statement without rows; false at the end of the response.
  Result<bool> advance() {
    cols_.clear();
    in_rows_ = false;
    cmd_ = db::CommandInfo{};
    cmd_.verb = verb();
    for (;;) {
      auto tok = s_->next_token();
      if (!tok.ok()) return fail(tok.take_error());
      if (!tok.value()) {
        end_response();
        if (err_) return *err_;
        return false;
      }
      tds::Token& t = *tok.value();
      if (auto* cols = std::get_if<std::vector<tds::ColumnMeta>>(&t)) {
        if (cols->empty()) continue;  // NoMetaData: the previous columns stand
        for (const auto& c : *cols)
          cols_.push_back(column_of(c));
        in_rows_ = true;
        return true;
      }
      if (const auto* m = std::get_if<tds::ServerMessage>(&t)) {
        if (m->is_error && !err_) err_ = map_server_error(*m);
        continue;
      }
      if (const auto* d = std::get_if<tds::Done>(&t)) {
        if (d->token == tds::token::kDoneProc) continue;
        if (err_ || (d->status & tds::done::kError) != 0) return fail_and_drain();
        set_command(*d);
        return true;
      }
    }
  }

  std::string verb() const {
    if (index_ < verbs_.size()) return verbs_[index_];
    return {};
  }

  void set_command(const tds::Done& d) {
    cmd_.verb = verb();
    if ((d.status & tds::done::kCount) == 0) return;
    // A DONE count is the rows a SELECT returned (a result with columns, or
    // CurCmd SELECT) or the rows an INSERT/UPDATE/DELETE/MERGE changed.
    bool select = !cols_.empty() || d.current_command == tds::command::kSelect;
#ifdef WIREPOOL_PLANTED_DEFECTS
    if (tds::planted_defect() == tds::PlantedDefect::select_count_as_affected) select = false;
#endif
    cmd_.affected = select ? -1 : static_cast<int64_t>(d.row_count);
  }

  void end_response() {
    in_rows_ = false;
    if (!finished_) {
      finished_ = true;
      s_->reader_open = false;
    }
  }

  Error fail(Error e) {
    end_response();
    if (s_->descriptor != 0 || s_->server_ended) s_->tx_failed = true;
    return e;
  }

  /// A statement failed: read the rest of the response, answer its first error.
  Error fail_and_drain() {
    Error e = err_ ? *err_
                   : simple_error(db::Errc::invalid_query, "XX000",
                                  "the SQL Server backend reported an error without a message");
    auto st = s_->finish(e);
    end_response();
    if (s_->descriptor != 0 || s_->server_ended) s_->tx_failed = true;
    return st.ok() ? e : st.take_error();
  }

  SessionPtr s_;
  std::vector<std::string> verbs_;
  size_t index_ = 0;
  std::vector<db::Column> cols_;
  tds::Row row_;
  db::CommandInfo cmd_;
  std::optional<Error> err_;
  bool in_rows_ = false;
  bool finished_ = false;
  bool closed_ = false;
};

/// Sends `payload` and returns its reader, positioned at the first result.
Result<std::unique_ptr<db::RowsImpl>> run(const SessionPtr& s, tds::PacketType type,
                                          std::string_view payload, std::string_view sql) {
  if (auto st = s->usable(); !st.ok()) return st.take_error();
  if (s->reader_open) {
    return simple_error(db::Errc::busy, "55006",
                        "another result of this connection is still open (TDS runs one "
                        "request at a time)");
  }
  if (s->tx_failed) {
    return simple_error(db::Errc::invalid_query, "25P02",
                        "current transaction is aborted, commands ignored until end of "
                        "transaction block");
  }
  if (auto st = s->request(type, payload); !st.ok()) return st.take_error();
  auto rows = std::make_unique<TdsRows>(s, sql);
  if (auto st = rows->start(); !st.ok()) return st.take_error();
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

/// Runs a request to its end (TM requests, sp_prepare, sp_unprepare).
Status run_to_end(const SessionPtr& s, tds::PacketType type, std::string_view payload) {
  if (auto st = s->usable(); !st.ok()) return st;
  if (s->reader_open) {
    return simple_error(db::Errc::busy, "55006",
                        "another result of this connection is still open (TDS runs one "
                        "request at a time)");
  }
  if (auto st = s->request(type, payload); !st.ok()) return st;
  return s->finish();
}

// ---- prepared statements --------------------------------------------------------

class TdsStatement final : public db::StatementImpl {
 public:
  TdsStatement(SessionPtr s, std::string sql)
      : s_(std::move(s)), sql_(std::move(sql)), params_(count_parameters(sql_)) {}
  ~TdsStatement() override { (void)close(); }

  /// Prepares the statement with its parameters typed from `hints` (text where
  /// a hint has no type), as SQL Server describes it then: its result columns
  /// come with sp_prepare's answer, and bad SQL fails here.
  Status describe(std::span<const db::ParamInfo> hints) {
    std::vector<db::Param> params(params_.size());
    for (size_t i = 0; i < params.size(); ++i)
      params[i].value = sample_of(i < hints.size() ? hints[i].kind : db::Kind::Null);
    auto handle = handle_for(params);
    if (!handle.ok()) return handle.take_error();
    columns_.clear();
    for (const auto& c : s_->metadata)
      columns_.push_back(column_of(c));
    return {};
  }

  /// One untyped (Kind::Null) entry per marker: SQL Server types parameters
  /// at sp_prepare, which runs again at an execution with other value types.
  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params, const db::QueryOptions&) override {
    auto handle = handle_for(params);
    if (!handle.ok()) return handle.take_error();
    auto rw = rewrite_statement(sql_, params);
    if (!rw.ok()) return rw.take_error();
    tds::RpcRequest exec;
    exec.headers.transaction_descriptor = s_->descriptor;
    exec.proc_id = tds::proc::kExecute;
    exec.params.push_back(int_param("@handle", handle.value()));
    for (auto& v : rw->values)
      exec.params.push_back(std::move(v));
    std::string payload;
    if (auto st = tds::encode_rpc(payload, exec); !st.ok()) return st.take_error();
    return run(s_, tds::PacketType::rpc, payload, sql_);
  }

  Status close() override {
    if (closed_) return {};
    closed_ = true;
    Status result;
    for (const auto& [sig, handle] : handles_) {
      if (s_->closed || !s_->t.is_open() || s_->reader_open) break;
      tds::RpcRequest un;
      un.headers.transaction_descriptor = s_->descriptor;
      un.proc_id = tds::proc::kUnprepare;
      un.params.push_back(int_param("@handle", handle));
      std::string payload;
      if (!tds::encode_rpc(payload, un).ok()) continue;
      auto st = run_to_end(s_, tds::PacketType::rpc, payload);
      if (!st.ok() && result.ok()) result = std::move(st);
    }
    handles_.clear();
    return result;
  }

 private:
  /// A value of kind `k` that only types a parameter (its declaration).
  static db::Value sample_of(db::Kind k) {
    switch (k) {
      case db::Kind::Bool:
        return db::Value::boolean(false);
      case db::Kind::I64:
        return db::Value::int64(0);
      case db::Kind::F64:
        return db::Value::float64(0);
      case db::Kind::Bytes:
        return db::Value::bytes("");
      default:
        return db::Value::text("");
    }
  }

  /// The server handle for `params`' signature (the types declared and which
  /// are the literal NULL shape the prepared text), prepared on first use.
  Result<int32_t> handle_for(db::Params params) {
    if (closed_ || s_->closed) return Error::closed("statement");
    auto rw = rewrite_statement(sql_, params);
    if (!rw.ok()) return rw.take_error();
    if (auto it = handles_.find(rw->signature); it != handles_.end()) return it->second;
    tds::RpcRequest prep;
    prep.headers.transaction_descriptor = s_->descriptor;
    prep.proc_id = tds::proc::kPrepare;
    prep.params.push_back(int_param("@handle", std::nullopt, true));
    prep.params.push_back(text_param("@params", rw->declarations));
    prep.params.push_back(text_param("@stmt", rw->sql));
    prep.params.push_back(int_param("@options", 1));  // RETURN_METADATA
    std::string payload;
    if (auto st = tds::encode_rpc(payload, prep); !st.ok()) return st.take_error();
    if (s_->tx_failed) {
      return simple_error(db::Errc::invalid_query, "25P02",
                          "current transaction is aborted, commands ignored until end of "
                          "transaction block");
    }
    if (auto st = run_to_end(s_, tds::PacketType::rpc, payload); !st.ok()) {
      return st.take_error();
    }
    std::optional<int64_t> handle;
    for (const auto& rv : s_->return_values) {
      if (rv.value.value.kind == db::Kind::I64) handle = rv.value.value.i64;
    }
    if (!handle) return protocol_error("sp_prepare returned no handle");
    handles_.emplace(rw->signature, static_cast<int32_t>(*handle));
    return static_cast<int32_t>(*handle);
  }

  SessionPtr s_;
  std::string sql_;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
  std::map<std::string, int32_t> handles_;
  bool closed_ = false;
};

// ---- connection ---------------------------------------------------------------

uint8_t isolation_of(std::string_view native_sql) {
  std::string up;
  for (char c : native_sql)
    up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up.find("SERIALIZABLE") != std::string::npos) return tds::isolation::kSerializable;
  if (up.find("REPEATABLE READ") != std::string::npos) return tds::isolation::kRepeatableRead;
  if (up.find("READ UNCOMMITTED") != std::string::npos) return tds::isolation::kReadUncommitted;
  if (up.find("READ COMMITTED") != std::string::npos) return tds::isolation::kReadCommitted;
  if (up.find("SNAPSHOT") != std::string::npos) return tds::isolation::kSnapshot;
  return tds::isolation::kNoChange;
}

class TdsConnection final : public db::ConnectionImpl {
 public:
  explicit TdsConnection(SessionPtr s) : s_(std::move(s)) {}
  ~TdsConnection() override { (void)close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = sql::Dialect::tsql;
    c.multi_statement = true;
    c.notices = true;
    c.blocking = true;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view sql, db::Params params,
                                              const db::QueryOptions&) override {
    std::string payload;
    if (params.empty()) {
      if (!tds::encode_sql_batch(payload, sql, s_->descriptor)) {
        return simple_error(db::Errc::invalid_query, "22021", "statement text is not valid UTF-8");
      }
      return run(s_, tds::PacketType::sql_batch, payload, sql);
    }
    auto rw = rewrite_statement(sql, params);
    if (!rw.ok()) return rw.take_error();
    tds::RpcRequest rpc;
    rpc.headers.transaction_descriptor = s_->descriptor;
    rpc.proc_id = tds::proc::kExecuteSql;
    rpc.params.push_back(text_param("@stmt", rw->sql));
    if (!rw->values.empty()) {
      rpc.params.push_back(text_param("@params", rw->declarations));
      for (auto& v : rw->values)
        rpc.params.push_back(std::move(v));
    }
    if (auto st = tds::encode_rpc(payload, rpc); !st.ok()) return st.take_error();
    return run(s_, tds::PacketType::rpc, payload, sql);
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view sql, std::span<const db::ParamInfo> hints) override {
    if (auto st = s_->usable(); !st.ok()) return st.take_error();
    auto stmt = std::make_unique<TdsStatement>(s_, std::string(sql));
    if (auto st = stmt->describe(hints); !st.ok()) return st.take_error();
    return std::unique_ptr<db::StatementImpl>(std::move(stmt));
  }

  Status begin(const db::BeginOptions& options) override {
    if (s_->descriptor != 0) return {};  // already in one (BEGIN TRAN as text)
    tds::TransactionRequest r;
    r.request = tds::tm::kBeginXact;
    r.isolation_level = isolation_of(options.native_sql);
    std::string payload;
    tds::encode_transaction_request(payload, r);
    s_->tx_failed = false;
    s_->server_ended = false;
    auto st = run_to_end(s_, tds::PacketType::transaction_manager, payload);
    if (!st.ok()) return st;
    if (s_->descriptor == 0) {
      return protocol_error("TM_BEGIN_XACT answered without a transaction descriptor");
    }
    return {};
  }

  Status commit() override {
    if (s_->server_ended) {
      s_->server_ended = false;
      s_->tx_failed = false;
      return simple_error(db::Errc::invalid_query, "40000",
                          "the SQL Server backend rolled the transaction back by itself "
                          "(XACT_ABORT, a deadlock or a fatal error): nothing was committed");
    }
    if (s_->tx_failed) {
      auto st = rollback();
      if (!st.ok()) return st;
      return simple_error(db::Errc::invalid_query, "40000",
                          "the transaction was rolled back because a statement in it failed");
    }
    return end_transaction(tds::tm::kCommitXact);
  }

  Status rollback() override {
    s_->tx_failed = false;
    if (s_->server_ended) {
      s_->server_ended = false;
      return {};
    }
    return end_transaction(tds::tm::kRollbackXact);
  }

  db::TxState tx_state() const override {
    if (s_->tx_failed || s_->server_ended) return db::TxState::failed;
    return s_->descriptor != 0 ? db::TxState::in_transaction : db::TxState::idle;
  }

  void cancel() noexcept override {
    // Only an atomic flag: the thread inside the call notices it at its next
    // wait slice (50 ms) and sends the ATTENTION itself, so the SSL object is
    // never used by two threads. The next request clears a flag set while idle.
    s_->t.request_cancel();
  }

  std::vector<std::pair<std::string, std::string>> server_parameters() const override {
    std::vector<std::pair<std::string, std::string>> out = {{"server_version", s_->server_version},
                                                            {"database", s_->database}};
    if (s_->has_collation) {
      // LCID and whether 8-bit text is UTF-8 (a _UTF8 collation) or a code page.
      const auto& b = s_->collation.bytes;
      const unsigned lcid = b[0] | (b[1] << 8) | ((b[2] & 0x0F) << 16);
      char text[64];
      std::snprintf(text, sizeof text, "lcid 0x%04x, %s", lcid,
                    s_->collation.utf8() ? "utf8" : "code page");
      out.emplace_back("collation", text);
    }
    return out;
  }

  Status reset(std::string_view reset_query) override {
    if (s_->descriptor != 0 || s_->tx_failed) {
      if (auto st = rollback(); !st.ok()) return st;
    }
    // RESETCONNECTION on the next request: SQL Server's sp_reset_connection
    // (temporary tables, SET options, open transactions).
    s_->reset_next = true;
    if (!reset_query.empty()) {
      auto r = query(reset_query, {}, {});
      if (!r.ok()) return r.take_error();
      db::Rows rows(std::move(r.value()));
      auto info = db::drain(rows);
      if (!info.ok()) return info.take_error();
    }
    return {};
  }

  bool alive() const override { return !s_->closed && s_->t.is_open(); }

  Status set_event_sink(db::EventSink* sink) override {
    s_->sink = sink;
    return {};
  }

  Status close() override {
    if (s_->closed) return {};
    s_->closed = true;
    s_->t.close();
    if (spdlog::should_log(spdlog::level::debug)) {
      // The record sizes on the wire: each packet must be one record.
      const auto r = record_stats();
      spdlog::debug(
          "tds: closed {}:{}; TLS records of all TDS connections: {} packets in {} records "
          "written (largest packet {} B, largest record {} B), {} records read (largest {} B)",
          s_->opt.host, s_->opt.port, r.packets_written, r.records_written, r.packet_max,
          r.record_written_max, r.records_read, r.record_read_max);
    }
    return {};
  }

 private:
  Status end_transaction(uint16_t request) {
    if (s_->descriptor == 0) return {};
    tds::TransactionRequest r;
    r.headers.transaction_descriptor = s_->descriptor;
    r.request = request;
    std::string payload;
    tds::encode_transaction_request(payload, r);
    s_->in_rollback = true;
    auto st = run_to_end(s_, tds::PacketType::transaction_manager, payload);
    s_->in_rollback = false;
    if (!st.ok()) return st;
    if (s_->descriptor != 0) {
      return protocol_error("the transaction is still open after " +
                            std::string(request == tds::tm::kCommitXact ? "COMMIT" : "ROLLBACK"));
    }
    return {};
  }

  SessionPtr s_;
};

std::string local_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "wirepool";
  return buf;
}

/// PRELOGIN then LOGIN7 inside TLS; reads LOGINACK and the ENVCHANGEs.
Status login(Session& s) {
  const auto until = Clock::now() + s.opt.connect_timeout;
  tds::Prelogin p;
  p.version = tds::wirepool_prelogin_version();
  // Informative in TDS 8.0 (TLS is already up); ENCRYPT_ON as strict clients send.
  p.encryption = tds::encrypt::kOn;
  p.instance = std::string();
  p.thread_id = std::string(4, '\0');
  p.mars = 0;
  std::string payload;
  tds::encode_prelogin(payload, p);
  if (auto st = s.request(tds::PacketType::prelogin, payload); !st.ok()) return st;
  while (!s.t.response_complete()) {
    auto r = s.t.read_packet(until);
    if (!r.ok()) return r.take_error();
  }
  auto pre = tds::decode_prelogin(tds::as_bytes(s.t.tokens()));
  if (pre.status != tds::DecodeStatus::ok) {
    return protocol_error("PRELOGIN response: " +
                          (pre.error.empty() ? std::string("truncated") : pre.error));
  }
  if (pre.message.version) {
    const auto& v = *pre.message.version;
    s.server_version =
        std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.build);
  }

  tds::Login7 l;
  l.tds_version = tds::kTds74;
  l.packet_size = s.opt.packet_size;
  l.client_pid = static_cast<uint32_t>(::getpid());
  l.host_name = local_host_name();
  l.user_name = s.opt.user;
  l.password = s.opt.password;
  l.app_name = s.opt.app_name;
  l.server_name = s.opt.host;
  l.client_interface = "wirepool";
  l.database = s.opt.database;
  payload.clear();
  tds::encode_login7(payload, l);
  OPENSSL_cleanse(l.password.data(), l.password.size());
  auto sent = s.request(tds::PacketType::login7, payload);
  OPENSSL_cleanse(payload.data(), payload.size());  // the obfuscated password
  if (!sent.ok()) return sent;
  bool acked = false;
  std::optional<Error> err;
  for (;;) {
    auto d = s.decoder.next(tds::as_bytes(std::string_view(s.t.tokens()).substr(s.tok_pos)));
    if (d.status == tds::DecodeStatus::ok) {
      s.tok_pos += d.consumed;
      s.observe(d.message);
      if (std::holds_alternative<tds::LoginAck>(d.message)) acked = true;
      if (const auto* m = std::get_if<tds::ServerMessage>(&d.message)) {
        if (m->is_error && !err) err = map_server_error(*m);
      }
      continue;
    }
    if (d.status == tds::DecodeStatus::error) return protocol_error(d.error);
    if (s.t.response_complete()) break;
    auto r = s.t.read_packet(until);
    if (!r.ok()) return r.take_error();
  }
  s.t.tokens().clear();
  s.tok_pos = 0;
  if (!s.routing.empty()) {
    return Error::unsupported("the SQL Server backend routes this login to " + s.routing +
                              " (Azure SQL redirection); point the connection there");
  }
  if (err) {
    Error e = *err;
    e.code = db::Errc::connection;
    return e;
  }
  if (!acked) return protocol_error("the login response has no LOGINACK");
  return {};
}

}  // namespace

db::Column column_of(const tds::ColumnMeta& meta) {
  db::Column c;
  c.name = meta.name;
  c.nullable = (meta.flags & tds::col_flag::kNullable) != 0;
  const tds::TypeInfo& t = meta.type;
  auto& n = c.native;
  switch (t.type) {
    case tds::type::kInt1:
    case tds::type::kInt2:
    case tds::type::kInt4:
    case tds::type::kInt8:
    case tds::type::kIntN: {
      const uint32_t len = t.type == tds::type::kIntN   ? t.max_length
                           : t.type == tds::type::kInt1 ? 1
                           : t.type == tds::type::kInt2 ? 2
                           : t.type == tds::type::kInt4 ? 4
                                                        : 8;
      c.kind = db::Kind::I64;
      n.name = int_name(len);
      n.int_bytes = static_cast<int8_t>(len <= 2 ? 2 : len == 4 ? 4 : 8);  // tinyint is 0..255
      break;
    }
    case tds::type::kBit:
    case tds::type::kBitN:
      c.kind = db::Kind::Bool;
      n.name = "bit";
      break;
    case tds::type::kFlt4:
    case tds::type::kFlt8:
    case tds::type::kFltN:
      c.kind = db::Kind::F64;
      n.name = (t.type == tds::type::kFlt4 || (t.type == tds::type::kFltN && t.max_length == 4))
                   ? "real"
                   : "float";
      break;
    case tds::type::kMoney:
    case tds::type::kMoney4:
    case tds::type::kMoneyN:
      c.kind = db::Kind::Decimal;
      n.name = (t.type == tds::type::kMoney4 || t.max_length == 4) ? "smallmoney" : "money";
      n.precision = t.max_length == 4 ? 10 : 19;
      n.scale = 4;
      break;
    case tds::type::kDecimalN:
    case tds::type::kNumericN:
      c.kind = db::Kind::Decimal;
      n.name = std::string(t.type == tds::type::kDecimalN ? "decimal" : "numeric") + "(" +
               std::to_string(t.precision) + "," + std::to_string(t.scale) + ")";
      n.precision = t.precision;
      n.scale = t.scale;
      break;
    case tds::type::kNVarChar:
    case tds::type::kNChar:
      c.kind = db::Kind::Text;
      n.name = sized(t.type == tds::type::kNVarChar ? "nvarchar" : "nchar", t.max_length, 2);
      if (t.max_length != tds::kPlpMarker) n.length = t.max_length / 2;
      break;
    case tds::type::kBigVarChar:
    case tds::type::kBigChar:
      c.kind = db::Kind::Text;
      n.name = sized(t.type == tds::type::kBigVarChar ? "varchar" : "char", t.max_length, 1);
      if (t.max_length != tds::kPlpMarker) n.length = t.max_length;
      break;
    case tds::type::kXml:
      c.kind = db::Kind::Text;
      n.name = "xml";
      break;
    case tds::type::kBigVarBinary:
    case tds::type::kBigBinary:
      c.kind = db::Kind::Bytes;
      n.name = sized(t.type == tds::type::kBigVarBinary ? "varbinary" : "binary", t.max_length, 1);
      if (t.max_length != tds::kPlpMarker) n.length = t.max_length;
      break;
    case tds::type::kGuid:
      c.kind = db::Kind::Text;
      n.name = "uniqueidentifier";
      break;
    case tds::type::kDateN:
      c.kind = db::Kind::Time;
      n.name = "date";
      n.time_form = db::TimeForm::date;
      break;
    case tds::type::kTimeN:
      c.kind = db::Kind::Text;  // a time of day without a date: "HH:MM:SS.fffffff"
      n.name = "time(" + std::to_string(t.scale) + ")";
      break;
    case tds::type::kDateTime2N:
      c.kind = db::Kind::Time;
      n.name = "datetime2(" + std::to_string(t.scale) + ")";
      n.time_form = db::TimeForm::timestamp;
      break;
    case tds::type::kDateTimeOffsetN:
      c.kind = db::Kind::Time;
      n.name = "datetimeoffset(" + std::to_string(t.scale) + ")";
      n.time_form = db::TimeForm::timestamptz;
      break;
    case tds::type::kDateTime:
    case tds::type::kDateTim4:
    case tds::type::kDateTimN:
      c.kind = db::Kind::Time;
      n.name = (t.type == tds::type::kDateTim4 || t.max_length == 4) ? "smalldatetime" : "datetime";
      n.time_form = db::TimeForm::timestamp;
      break;
    default:
      c.kind = db::Kind::Null;
      n.name = tds::type_name(t.type);
      break;
  }
  return c;
}

std::string routing_target(std::string_view raw) {
  // RoutingDataValueLength (2), Protocol (1, 0 = TCP), ProtocolProperty (2:
  // the port), AlternateServer (US_VARCHAR: a 2-byte character count, UCS-2).
  if (raw.size() < 7) return "(unreadable)";
  const auto* b = reinterpret_cast<const uint8_t*>(raw.data());
  const uint16_t port = static_cast<uint16_t>(b[3] | (b[4] << 8));
  const size_t chars = static_cast<size_t>(b[5] | (b[6] << 8));
  std::string name;
  if (raw.size() < 7 + chars * 2 ||
      !tds::ucs2_to_utf8(tds::as_bytes(raw.substr(7, chars * 2)), name)) {
    return "(unreadable)";
  }
  return name + ":" + std::to_string(port);
}

db::Result<db::Connection> open_connection(const Options& options) {
  auto s = std::make_shared<Session>();
  s->opt = options;
  if (options.max_value_size != 0) {
    tds::Limits limits;
    limits.max_value = static_cast<size_t>(options.max_value_size);
    limits.ucs2_as_utf8 = true;
    s->decoder = tds::TokenDecoder(limits);
  }
  std::string error;
  s->ctx = tls::ClientContext::create(options.tls_ca, options.tls_pins, &error, tls::kAlpnTds);
  if (!s->ctx) {
    Error e = Error::connection("tls.ca: " + error);
    e.sqlstate = "08001";
    return e;
  }
  const auto until = Clock::now() + options.connect_timeout;
  if (auto st = s->t.open(options.host, options.port, *s->ctx, until); !st.ok()) {
    return st.take_error();
  }
  if (auto st = login(*s); !st.ok()) {
    s->t.close();
    return st.take_error();
  }
  spdlog::debug("tds: connected to {}:{} as {} (database {}, packet size {})", options.host,
                options.port, options.user, s->database, s->t.packet_size());
  return db::Connection(std::make_unique<TdsConnection>(std::move(s)));
}

}  // namespace wirepool::tdsdrv
