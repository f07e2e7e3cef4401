// Server-side prepared statements over the binary protocol: preparing,
// binding parameters, and the reader that fetches rows unbuffered.

#include "backends/mysql/mysql_internal.hpp"

#include <algorithm>

namespace wirepool::mysql::detail {

namespace {

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
      // The byte length where the column has one (not a BLOB/TEXT).
      bind_column(i, p_->types[i].column.native.length >= 0
                         ? static_cast<int64_t>(p_->types[i].length)
                         : int64_t{-1});
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

}  // namespace

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

Result<std::unique_ptr<db::RowsImpl>> run_prepared(const SessionPtr& s, PreparedPtr p,
                                                   db::Params params) {
  auto rows = std::make_unique<StmtRows>(s, std::move(p));
  if (auto e = rows->start(params)) return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

}  // namespace wirepool::mysql::detail
