// The SQLite connection, statement and reader.
//
// A query prepares its first statement, binds, and steps once before returning,
// so bad SQL and the first error fail at query() and expression columns take
// their kind from the first row. Multi-statement text keeps SQLite's prepare
// tail and advances with next_result(). Every object a connection hands out
// shares its Session, so one that outlives Connection::close() answers closed
// instead of touching a closed handle (sqlite3_close_v2 keeps the handle as a
// "zombie" until the last statement is finalized).

#include "backends/sqlite/sqlite_connection.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "backends/sqlite/sqlite_catalog.hpp"
#include "backends/sqlite/sqlite_errors.hpp"
#include "backends/sqlite/sqlite_pg_functions.hpp"
#include "backends/sqlite/sqlite_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::sqlite {

namespace {

using db::Error;
using db::Result;
using db::Status;
using sql::Dialect;

/// The database handle, shared by a connection and everything it hands out.
struct Session {
  sqlite3* db = nullptr;
  bool closed = false;
  Catalog catalog;       // pg_catalog / information_schema (sqlite_catalog.hpp)
  std::mutex cancel_mu;  // cancel() runs on any thread; close() takes it too

  explicit Session(sqlite3* handle) : db(handle) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  void close() {
    std::lock_guard lock(cancel_mu);
    if (closed) return;
    closed = true;
    sqlite3_close_v2(db);  // deferred until the last statement is finalized
  }
  /// The error of the call that just answered `rc`, with SQLite's message.
  Error error(int rc) const {
    // SQLITE_TOOBIG: a value above SQLITE_LIMIT_LENGTH (server.max_value_size).
    if ((rc & 0xff) == SQLITE_TOOBIG) {
      Error e =
          Error::value_too_large(static_cast<uint64_t>(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1)));
      e.vendor_code = rc;
      return e;
    }
    return map_error(rc, sqlite3_errmsg(db));
  }
};
using SessionPtr = std::shared_ptr<Session>;

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

/// sqlite3_prepare takes an int length; SQLite's own limit (SQLITE_MAX_SQL_LENGTH) is lower.
std::optional<Error> check_length(std::string_view text) {
  if (text.size() <= static_cast<size_t>(INT32_MAX)) return std::nullopt;
  return protocol_error("54000", "statement text is too long");
}

// ---- columns ----------------------------------------------------------------

struct Described {
  std::vector<db::Column> columns;
  std::vector<DeclaredType> types;
};

Described describe(sqlite3* db, sqlite3_stmt* stmt) {
  Described out;
  const int n = sqlite3_column_count(stmt);
  out.columns.reserve(static_cast<size_t>(n));
  out.types.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const char* name = sqlite3_column_name(stmt, i);
    const char* decl = sqlite3_column_decltype(stmt, i);
    DeclaredType type = parse_declared_type(decl ? decl : "");
    db::Column c;
    c.name = name ? name : "";
    c.kind = declared_kind(type.decl);
    c.native = type.native;
    // NOT NULL of a table column (SQLITE_ENABLE_COLUMN_METADATA, on in Debian's build).
    const char* table = sqlite3_column_table_name(stmt, i);
    const char* origin = sqlite3_column_origin_name(stmt, i);
    const char* schema = sqlite3_column_database_name(stmt, i);
    int notnull = 0;
    if (table && origin &&
        sqlite3_table_column_metadata(db, schema, table, origin, nullptr, nullptr, &notnull,
                                      nullptr, nullptr) == SQLITE_OK) {
      c.nullable = notnull == 0;
    }
    out.columns.push_back(std::move(c));
    out.types.push_back(std::move(type));
  }
  return out;
}

db::Kind natural_kind(int sqlite_type) {
  switch (sqlite_type) {
    case SQLITE_INTEGER:
      return db::Kind::I64;
    case SQLITE_FLOAT:
      return db::Kind::F64;
    case SQLITE_TEXT:
      return db::Kind::Text;
    case SQLITE_BLOB:
      return db::Kind::Bytes;
    default:
      return db::Kind::Null;
  }
}

int positional_slot(const char* name, int index);

/// A compiled statement. Finalized when the last owner lets go: its Statement,
/// or the reader running it.
struct PreparedStmt {
  SessionPtr session;
  sqlite3_stmt* stmt = nullptr;
  bool reusable = false;  // a Statement's: reset and kept after each execution
  bool busy = false;      // a reader is running it
  int reprepares = -1;    // SQLITE_STMTSTATUS_REPREPARE when `described` was made
  Described described;
  std::optional<std::string> verb;
  bool catalog = false;  // may read the catalog: it is refreshed before each execution

  PreparedStmt(SessionPtr s, sqlite3_stmt* st) : session(std::move(s)), stmt(st) {}
  PreparedStmt(const PreparedStmt&) = delete;
  PreparedStmt& operator=(const PreparedStmt&) = delete;
  ~PreparedStmt() { sqlite3_finalize(stmt); }

  /// Columns from the declared types, remade when SQLite recompiled the statement.
  const Described& columns() {
    const int r = sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_REPREPARE, 0);
    if (r != reprepares) {
      described = describe(session->db, stmt);
      reprepares = r;
    }
    return described;
  }
  /// Per marker (1-based index - 1): its positional slot, 0 for a named marker;
  /// and the largest slot. Worked out once: the text, hence the markers, never change.
  struct Markers {
    std::vector<int> slots;
    int required = 0;
  };
  bool markers_known = false;
  Markers marker_slots;
  const Markers& markers() {
    if (!markers_known) {
      const int n = sqlite3_bind_parameter_count(stmt);
      marker_slots.slots.resize(static_cast<size_t>(n));
      for (int i = 1; i <= n; ++i) {
        const int slot = positional_slot(sqlite3_bind_parameter_name(stmt, i), i);
        marker_slots.slots[static_cast<size_t>(i - 1)] = slot;
        marker_slots.required = std::max(marker_slots.required, slot);
      }
      markers_known = true;
    }
    return marker_slots;
  }
  const std::string& command_verb() {
    if (!verb) {
      const char* text = sqlite3_sql(stmt);
      verb = sql::command_verb(text ? text : "", Dialect::sqlite);
    }
    return *verb;
  }
};
using PreparedPtr = std::shared_ptr<PreparedStmt>;

// ---- parameters -------------------------------------------------------------

/// The caller's parameters, split into positional and named. Without named
/// ones (the usual case) nothing is allocated: the positional ones are `all`.
struct ParamSet {
  db::Params all;
  bool split = false;  ///< some have names: `positional` and `named` hold them
  std::vector<const db::Param*> positional_split;
  std::vector<const db::Param*> named;
  size_t positional_size() const { return split ? positional_split.size() : all.size(); }
  const db::Param* positional_at(size_t i) const { return split ? positional_split[i] : &all[i]; }
};

ParamSet split_params(db::Params params) {
  ParamSet set;
  set.all = params;
  set.split =
      std::any_of(params.begin(), params.end(), [](const db::Param& p) { return !p.name.empty(); });
  if (set.split) {
    for (const auto& p : params)
      (p.name.empty() ? set.positional_split : set.named).push_back(&p);
  }
  return set;
}

/// The positional slot a marker binds (1-based), or 0 for a named marker.
/// `?` and `?NNN` bind by their SQLite index; `$N` by N, since SQLite numbers
/// `$N` by first appearance ("SELECT $2, $1": "$2" is index 1). SQLite reads
/// "$1::int" as one variable named "$1::int": it binds as $1.
int positional_slot(const char* name, int index) {
  if (name == nullptr || name[0] == '?') return index;
  if (name[0] != '$') return 0;
  int64_t n = 0;
  size_t i = 1;
  for (; name[i] >= '0' && name[i] <= '9'; ++i) {
    n = std::min<int64_t>(n * 10 + (name[i] - '0'), INT32_MAX);
  }
  if (i == 1) return 0;
  if (name[i] != '\0' && !(name[i] == ':' && name[i + 1] == ':') && name[i] != '(') return 0;
  return static_cast<int>(n);
}

/// The largest positional slot a statement's markers use.
int required_positional(sqlite3_stmt* stmt) {
  int required = 0;
  const int n = sqlite3_bind_parameter_count(stmt);
  for (int i = 1; i <= n; ++i) {
    required = std::max(required, positional_slot(sqlite3_bind_parameter_name(stmt, i), i));
  }
  return required;
}

/// Does named parameter `p` bind the marker `marker` (with its sigil)?
bool names_match(const db::Param& p, std::string_view marker) {
  return p.name == marker || (marker.size() > 1 && p.name == marker.substr(1));
}

int bind_value(sqlite3_stmt* s, int i, const db::Value& v) {
  switch (v.kind) {
    case db::Kind::Null:
      return sqlite3_bind_null(s, i);
    case db::Kind::Bool:
      return sqlite3_bind_int(s, i, v.b ? 1 : 0);
    case db::Kind::I64:
      return sqlite3_bind_int64(s, i, v.i64);
    case db::Kind::U64:
      if (v.u64 <= static_cast<uint64_t>(INT64_MAX)) {
        return sqlite3_bind_int64(s, i, static_cast<int64_t>(v.u64));
      } else {
        const std::string text = std::to_string(v.u64);  // beyond SQLite's integers: exact text
        return sqlite3_bind_text64(s, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
    case db::Kind::F64:
      return sqlite3_bind_double(s, i, v.f64);
    case db::Kind::Text:
    case db::Kind::Decimal:  // NUMERIC affinity converts well-formed text
      return sqlite3_bind_text64(s, i, v.str.data(), v.str.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    case db::Kind::Bytes:
      // data() is never null, so an empty value binds a zero-length blob, not NULL.
      return sqlite3_bind_blob64(s, i, v.str.data(), v.str.size(), SQLITE_TRANSIENT);
    case db::Kind::Time: {
      const std::string text = format_iso_time(v.micros);
      return sqlite3_bind_text64(s, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
  }
  return SQLITE_MISUSE;
}

/// Binds every marker of `ps`; a marker without a value is an error.
std::optional<Error> bind_all(Session& session, PreparedStmt& ps, const ParamSet& set) {
  const auto& markers = ps.markers();
  if (static_cast<size_t>(markers.required) > set.positional_size()) {
    return count_mismatch(set.positional_size(), markers.required);
  }
  sqlite3_stmt* stmt = ps.stmt;
  const int n = static_cast<int>(markers.slots.size());
  for (int i = 1; i <= n; ++i) {
    const int slot = markers.slots[static_cast<size_t>(i - 1)];
    const db::Param* p = nullptr;
    if (slot > 0) {
      p = set.positional_at(static_cast<size_t>(slot - 1));
    } else {
      const char* name = sqlite3_bind_parameter_name(stmt, i);
      for (const db::Param* candidate : set.named) {
        if (names_match(*candidate, name)) {
          p = candidate;
          break;
        }
      }
      if (p == nullptr) {
        return protocol_error("42P02", std::string("no value supplied for parameter ") + name);
      }
    }
    const int rc = bind_value(stmt, i, p->value);
    if (rc != SQLITE_OK) return session.error(rc);
  }
  return std::nullopt;
}

/// Checks that no parameter is left over: positional ones beyond `required`, or
/// named ones no marker uses (`marker_names`, with their sigils).
std::optional<Error> check_surplus(const ParamSet& set, int required,
                                   const std::vector<std::string>& marker_names) {
  if (set.positional_size() > static_cast<size_t>(required)) {
    return count_mismatch(set.positional_size(), required);
  }
  for (const db::Param* p : set.named) {
    const bool used = std::any_of(marker_names.begin(), marker_names.end(),
                                  [&](const std::string& m) { return names_match(*p, m); });
    if (!used) {
      return protocol_error("42P02",
                            "parameter \"" + p->name + "\" does not appear in the statement");
    }
  }
  return std::nullopt;
}

void named_markers_of(sqlite3_stmt* stmt, std::vector<std::string>& out) {
  const int n = sqlite3_bind_parameter_count(stmt);
  for (int i = 1; i <= n; ++i) {
    const char* name = sqlite3_bind_parameter_name(stmt, i);
    if (positional_slot(name, i) == 0) out.emplace_back(name);
  }
}

// ---- reader -----------------------------------------------------------------

class SqliteRows final : public db::RowsImpl {
 public:
  explicit SqliteRows(SessionPtr session) : session_(std::move(session)) {}
  ~SqliteRows() override { release(); }

  /// Runs the first statement of `text`; the rest runs on next_result().
  std::optional<Error> start_text(std::string_view text, db::Params params) {
    if (auto e = check_length(text)) return e;
    sqlite3* db = session_->db;
    const ParamSet set = split_params(params);
    const char* p = text.data();
    const char* end = text.data() + text.size();
    sqlite3_stmt* stmt = nullptr;
    const char* tail = p;
    while (p < end && stmt == nullptr) {
      const int rc = sqlite3_prepare_v3(db, p, static_cast<int>(end - p), 0, &stmt, &tail);
      if (rc != SQLITE_OK) return session_->error(rc);
      if (tail == p) break;
      p = tail;
    }
    if (stmt == nullptr) {  // blank text: no statement, no columns
      done_ = true;
      return check_surplus(set, 0, {});
    }
    auto ps = std::make_shared<PreparedStmt>(session_, stmt);
    const std::string_view rest(tail, static_cast<size_t>(end - tail));
    const bool more = !sql::is_blank(rest, Dialect::sqlite);

    // Leftover parameters are checked against every statement of the text; the
    // later ones are not compiled yet, so their markers come from the lexer.
    int required = required_positional(stmt);
    std::vector<std::string> names;
    named_markers_of(stmt, names);
    if (more) {
      for (std::string_view piece : sql::split_statements(rest, Dialect::sqlite)) {
        for (const auto& m : sql::find_markers(piece, Dialect::sqlite)) {
          if (m.type == sql::Marker::Type::named) {
            names.emplace_back(piece.substr(m.offset, m.length));
          } else {
            required = std::max(required, m.number);
          }
        }
      }
    }
    if (auto e = check_surplus(set, required, names)) return e;
    if (more) {
      tail_.assign(rest);
      params_.assign(params.begin(), params.end());
    }
    return begin_statement(std::move(ps), set);
  }

  /// Runs a Statement's compiled statement.
  std::optional<Error> start_prepared(PreparedPtr ps, const ParamSet& set) {
    return begin_statement(std::move(ps), set);
  }

  std::span<const db::Column> columns() const override { return columns_; }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (session_->closed) return Error::closed();
    if (done_ || !current_) return false;
    if (row.size() < columns_.size()) {
      return protocol_error("22023", "row has " + std::to_string(row.size()) +
                                         " values, the result has " +
                                         std::to_string(columns_.size()) + " columns");
    }
    if (pending_) {
      pending_ = false;
      fill(row);
      return true;
    }
    const int rc = sqlite3_step(current_->stmt);
    if (rc == SQLITE_ROW) {
      fill(row);
      return true;
    }
    if (rc == SQLITE_DONE) {
      finish();
      return false;
    }
    return fail(session_->error(rc));
  }

  Result<bool> next_result() override {
    if (session_->closed) return Error::closed();
    if (current_ && !done_) {
      // Run the current statement to its end, as PostgreSQL runs every statement of a text.
      pending_ = false;
      for (;;) {
        const int rc = sqlite3_step(current_->stmt);
        if (rc == SQLITE_ROW) continue;
        if (rc == SQLITE_DONE) break;
        return fail(session_->error(rc));
      }
      finish();
    }
    while (tail_pos_ < tail_.size()) {
      const char* start = tail_.data() + tail_pos_;
      sqlite3_stmt* stmt = nullptr;
      const char* tail = start;
      const int rc = sqlite3_prepare_v3(
          session_->db, start, static_cast<int>(tail_.size() - tail_pos_), 0, &stmt, &tail);
      if (rc != SQLITE_OK) {
        Error e = session_->error(rc);
        stop();
        return e;
      }
      tail_pos_ = static_cast<size_t>(tail - tail_.data());
      if (stmt == nullptr) {
        if (tail == start) break;
        continue;
      }
      const ParamSet set = split_params(params_);
      if (auto e = begin_statement(std::make_shared<PreparedStmt>(session_, stmt), set)) {
        stop();
        return *e;
      }
      return true;
    }
    stop();
    return false;
  }

  db::CommandInfo command() const override { return info_; }

  Status close() override {
    release();
    stop();
    return {};
  }

 private:
  /// Binds, steps once and describes the columns.
  std::optional<Error> begin_statement(PreparedPtr ps, const ParamSet& set) {
    sqlite3* db = session_->db;
    columns_.clear();
    types_.clear();
    info_ = db::CommandInfo{};
    done_ = false;
    pending_ = false;
    current_ = std::move(ps);
    if (current_->reusable) current_->busy = true;
    if (auto e = bind_all(*session_, *current_, set)) {
      release();
      done_ = true;
      return e;
    }
    info_.verb = current_->command_verb();
    changes_before_ = sqlite3_total_changes64(db);
    const int rc = sqlite3_step(current_->stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      Error e = session_->error(rc);
      release();
      done_ = true;
      return e;
    }
    const Described& d = current_->columns();
    columns_ = d.columns;
    types_.clear();
    types_.reserve(d.types.size());
    for (const auto& t : d.types) {
      types_.push_back({t.decl, t.native.scale});
    }
    text_.resize(columns_.size());
    if (rc == SQLITE_ROW) {
      pending_ = true;
      // Columns whose declared type says nothing take the first row's kind.
      for (size_t i = 0; i < columns_.size(); ++i) {
        if (types_[i].decl == Decl::from_value || types_[i].decl == Decl::blob) {
          const int t = sqlite3_column_type(current_->stmt, static_cast<int>(i));
          if (t != SQLITE_NULL) columns_[i].kind = natural_kind(t);
        }
      }
    } else {
      finish();
    }
    return std::nullopt;
  }

  /// The statement reached its end: record what it did and let it go.
  void finish() {
    sqlite3* db = session_->db;
    const std::string& verb = info_.verb;
    if (verb == "INSERT" || verb == "UPDATE" || verb == "DELETE" || verb == "MERGE") {
      // sqlite3_changes() keeps the previous statement's count when nothing moved
      // (the seed's trap), and sqlite3_total_changes() also counts trigger changes:
      // the total says whether this statement changed anything, changes() how much.
      const int64_t delta = sqlite3_total_changes64(db) - changes_before_;
      info_.affected = delta == 0 ? 0 : sqlite3_changes64(db);
      if (verb == "INSERT" && delta > 0) info_.last_insert_id = sqlite3_last_insert_rowid(db);
    }
    done_ = true;
    pending_ = false;
    release();
  }

  Result<bool> fail(Error e) {
    release();
    stop();
    return e;
  }

  /// No further statements of the text run.
  void stop() {
    done_ = true;
    pending_ = false;
    tail_.clear();
    tail_pos_ = 0;
  }

  /// Gives the statement back: a Statement's is reset for reuse, a one-shot one finalized.
  void release() {
    if (!current_) return;
    if (current_->reusable) {
      if (!session_->closed) {
        sqlite3_reset(current_->stmt);
        sqlite3_clear_bindings(current_->stmt);
      }
      current_->busy = false;
    }
    current_.reset();
  }

  void fill(std::span<db::ValueView> row) {
    sqlite3_stmt* s = current_->stmt;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const int col = static_cast<int>(i);
      const ColumnRead& how = types_[i];
      db::ValueView& out = row[i];
      out = db::ValueView{};
      switch (sqlite3_column_type(s, col)) {
        case SQLITE_NULL:
          break;
        case SQLITE_INTEGER: {
          const int64_t v = sqlite3_column_int64(s, col);
          if (how.decl == Decl::boolean && (v == 0 || v == 1)) {
            out = db::ValueView::boolean(v == 1);
          } else if (how.decl == Decl::time && unix_seconds_to_micros(v)) {
            out = db::ValueView::time(*unix_seconds_to_micros(v));
          } else if (how.decl == Decl::numeric) {
            text_[i] = decimal_from_int(v, how.scale);
            out = db::ValueView::decimal(text_[i]);
          } else if (how.decl == Decl::real) {
            out = db::ValueView::float64(static_cast<double>(v));
          } else {
            out = db::ValueView::int64(v);
          }
          break;
        }
        case SQLITE_FLOAT: {
          const double v = sqlite3_column_double(s, col);
          std::optional<std::string> dec;
          if (how.decl == Decl::time && unix_seconds_to_micros(v)) {
            out = db::ValueView::time(*unix_seconds_to_micros(v));
          } else if (how.decl == Decl::numeric && (dec = decimal_from_double(v, how.scale))) {
            text_[i] = std::move(*dec);
            out = db::ValueView::decimal(text_[i]);
          } else {
            out = db::ValueView::float64(v);
          }
          break;
        }
        case SQLITE_TEXT: {
          const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
          const std::string_view text(p ? p : "",
                                      static_cast<size_t>(sqlite3_column_bytes(s, col)));
          std::optional<bool> b;
          std::optional<int64_t> t;
          if (how.decl == Decl::boolean && (b = parse_bool_text(text))) {
            out = db::ValueView::boolean(*b);
          } else if (how.decl == Decl::time && (t = parse_iso_time(text))) {
            out = db::ValueView::time(*t);
          } else {
            out = db::ValueView::text(text);
          }
          break;
        }
        case SQLITE_BLOB: {
          const auto* p = static_cast<const char*>(sqlite3_column_blob(s, col));
          const size_t n = static_cast<size_t>(sqlite3_column_bytes(s, col));
          out = db::ValueView::bytes(std::string_view(p ? p : "", n));
          break;
        }
      }
    }
  }

  struct ColumnRead {
    Decl decl;
    int32_t scale;
  };

  SessionPtr session_;
  PreparedPtr current_;
  std::vector<db::Column> columns_;
  std::vector<ColumnRead> types_;
  std::vector<std::string> text_;  // decimals rendered for the current row
  db::CommandInfo info_;
  int64_t changes_before_ = 0;
  bool pending_ = false;  // the first row, stepped by query(), not handed out yet
  bool done_ = false;
  std::string tail_;  // the statements not run yet
  size_t tail_pos_ = 0;
  std::vector<db::Param> params_;  // a copy for the later statements of a text
};

// ---- prepared statement -----------------------------------------------------

class SqliteStatement final : public db::StatementImpl {
 public:
  SqliteStatement(SessionPtr session, PreparedPtr ps, std::span<const db::ParamInfo> hints)
      : session_(std::move(session)), ps_(std::move(ps)) {
    if (!ps_) return;
    ps_->reusable = true;
    sqlite3_stmt* stmt = ps_->stmt;
    const int n = sqlite3_bind_parameter_count(stmt);
    int count = 0;
    for (int i = 1; i <= n; ++i) {
      const int slot = positional_slot(sqlite3_bind_parameter_name(stmt, i), i);
      positional_ = std::max(positional_, slot);
      count = std::max(count, slot > 0 ? slot : i);
    }
    named_markers_of(stmt, named_);
    count = std::max<int>(count, static_cast<int>(hints.size()));
    params_.resize(static_cast<size_t>(count));
    for (size_t i = 0; i < hints.size(); ++i)
      params_[i] = hints[i];
    columns_ = ps_->columns().columns;
    probe_rc_ = probe_expression_kinds();
  }

  /// SQLITE_INTERRUPT when a cancel (query_timeout) stopped the probe: the
  /// Parse fails, as a statement interrupted there would.
  int probe_rc() const { return probe_rc_; }

  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params, const db::QueryOptions&) override {
    if (session_->closed) return Error::closed();
    const ParamSet set = split_params(params);
    // Positional values must match the parameters reported (hints included); a
    // statement with only named markers takes named values.
    const bool named_only = positional_ == 0 && !named_.empty() && set.positional_size() == 0;
    const int expected = named_only ? 0 : static_cast<int>(params_.size());
    if (set.positional_size() != static_cast<size_t>(expected)) {
      return count_mismatch(set.positional_size(), expected);
    }
    if (auto e = check_surplus(set, expected, named_)) return *e;
    if (ps_ && ps_->catalog) {
      const int rc = refresh_catalog(session_->db, session_->catalog);
      if (rc != SQLITE_OK) return session_->error(rc);
    }
    auto rows = std::make_unique<SqliteRows>(session_);
    if (!ps_) {
      if (auto e = rows->start_text("", {})) return *e;
      return std::unique_ptr<db::RowsImpl>(std::move(rows));
    }
    PreparedPtr use = ps_;
    if (ps_->busy) {
      // A reader of this statement is still open: run a fresh copy beside it.
      sqlite3_stmt* copy = nullptr;
      const int rc =
          sqlite3_prepare_v3(session_->db, sqlite3_sql(ps_->stmt), -1, 0, &copy, nullptr);
      if (rc != SQLITE_OK) return session_->error(rc);
      use = std::make_shared<PreparedStmt>(session_, copy);
    } else {
      sqlite3_reset(ps_->stmt);
      sqlite3_clear_bindings(ps_->stmt);
    }
    if (auto e = rows->start_prepared(std::move(use), set)) return *e;
    return std::unique_ptr<db::RowsImpl>(std::move(rows));
  }

  Status close() override {
    ps_.reset();  // finalized now, or by the reader still running it
    return {};
  }

 private:
  /// Expression columns (count(*), 1+1) have no declared type, and a Describe
  /// comes before any row: a read-only SELECT is stepped once with its
  /// parameters unbound (NULL) and each such column takes that first row's
  /// storage class. Without a row, or where it is NULL, the column stays unknown (text).
  int probe_expression_kinds() {
    sqlite3_stmt* stmt = ps_->stmt;
    const bool unknown = std::any_of(columns_.begin(), columns_.end(),
                                     [](const db::Column& c) { return c.kind == db::Kind::Null; });
    if (!unknown || !sqlite3_stmt_readonly(stmt) || ps_->command_verb() != "SELECT") {
      return SQLITE_OK;
    }
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      for (size_t i = 0; i < columns_.size(); ++i) {
        if (columns_[i].kind != db::Kind::Null) continue;
        columns_[i].kind = natural_kind(sqlite3_column_type(stmt, static_cast<int>(i)));
      }
    }
    sqlite3_reset(stmt);
    return rc == SQLITE_INTERRUPT ? rc : SQLITE_OK;
  }

  SessionPtr session_;
  PreparedPtr ps_;  // null for blank text
  int positional_ = 0;
  std::vector<std::string> named_;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
  int probe_rc_ = SQLITE_OK;
};

// ---- connection -------------------------------------------------------------

class SqliteConnection final : public db::ConnectionImpl {
 public:
  SqliteConnection(SessionPtr session, Options options)
      : session_(std::move(session)), options_(std::move(options)) {}
  ~SqliteConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = Dialect::sqlite;
    c.multi_statement = true;
    c.blocking = true;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions&) override {
    if (session_->closed) return Error::closed();
    if (auto e = refresh_catalog_if(mentions_catalog(text))) return *e;
    auto rows = std::make_unique<SqliteRows>(session_);
    if (auto e = rows->start_text(text, params)) return *e;
    return std::unique_ptr<db::RowsImpl>(std::move(rows));
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    if (session_->closed) return Error::closed();
    if (auto e = check_length(text)) return *e;
    const bool catalog = mentions_catalog(text);
    if (auto e = refresh_catalog_if(catalog)) return *e;
    const char* p = text.data();
    const char* end = text.data() + text.size();
    sqlite3_stmt* stmt = nullptr;
    const char* tail = p;
    while (p < end && stmt == nullptr) {
      const int rc = sqlite3_prepare_v3(session_->db, p, static_cast<int>(end - p),
                                        SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
      if (rc != SQLITE_OK) return session_->error(rc);
      if (tail == p) break;
      p = tail;
    }
    PreparedPtr ps = stmt ? std::make_shared<PreparedStmt>(session_, stmt) : nullptr;
    if (ps) ps->catalog = catalog;
    if (ps &&
        !sql::is_blank(std::string_view(tail, static_cast<size_t>(end - tail)), Dialect::sqlite)) {
      // PostgreSQL's answer to the same request.
      return protocol_error("42601", "cannot insert multiple commands into a prepared statement");
    }
    auto statement = std::make_unique<SqliteStatement>(session_, std::move(ps), hints);
    if (statement->probe_rc() != SQLITE_OK) return session_->error(statement->probe_rc());
    return std::unique_ptr<db::StatementImpl>(std::move(statement));
  }

  /// The catalog's tables follow the main database's schema before a
  /// statement that may read them (`mentions`: mentions_catalog()) is prepared.
  std::optional<Error> refresh_catalog_if(bool mentions) {
    if (!mentions) return std::nullopt;
    const int rc = refresh_catalog(session_->db, session_->catalog);
    if (rc != SQLITE_OK) return session_->error(rc);
    return std::nullopt;
  }

  /// BEGIN IMMEDIATE by default: under WAL, a transaction that reads and then
  /// writes can otherwise fail at its first write with SQLITE_BUSY_SNAPSHOT, and
  /// no busy timeout helps. The client's own SQLite form (BEGIN DEFERRED |
  /// IMMEDIATE | EXCLUSIVE) is honoured; PostgreSQL's modes (ISOLATION LEVEL ...)
  /// are ignored: SQLite transactions are serializable.
  Status begin(const db::BeginOptions& options) override {
    if (session_->closed) return Error::closed();
    std::string text = options_.begin_immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED";
    const auto words = sql::leading_words(options.native_sql, Dialect::sqlite, 2);
    if (words.size() == 2 && words[0] == "BEGIN" &&
        (words[1] == "DEFERRED" || words[1] == "IMMEDIATE" || words[1] == "EXCLUSIVE")) {
      text = "BEGIN " + words[1];
    }
    return exec(text.c_str());
  }

  /// A failed COMMIT (a deferred foreign key, a busy database) leaves SQLite's
  /// transaction open; it is rolled back, as PostgreSQL ends a transaction whose
  /// COMMIT failed, so tx_state() stays truthful and the error is returned.
  Status commit() override {
    if (session_->closed) return Error::closed();
    Status st = exec("COMMIT");
    if (!st.ok() && !sqlite3_get_autocommit(session_->db)) {
      (void)exec("ROLLBACK");
    }
    return st;
  }

  /// Harmless when SQLite already ended the transaction itself (it rolls back
  /// on SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM and some SQLITE_BUSY).
  Status rollback() override {
    if (session_->closed) return Error::closed();
    if (sqlite3_get_autocommit(session_->db)) return {};
    return exec("ROLLBACK");
  }

  db::TxState tx_state() const override {
    if (session_->closed || sqlite3_get_autocommit(session_->db)) return db::TxState::idle;
    return db::TxState::in_transaction;
  }

  void cancel() noexcept override {
    std::lock_guard lock(session_->cancel_mu);
    if (!session_->closed) sqlite3_interrupt(session_->db);
  }

  Status reset(std::string_view reset_query) override {
    if (session_->closed) return Error::closed();
    if (!sqlite3_get_autocommit(session_->db)) {
      Status st = exec("ROLLBACK");
      if (!st.ok()) return st;
    }
    return ConnectionImpl::reset(reset_query);
  }

  bool alive() const override { return !session_->closed; }

  Status close() override {
    session_->close();
    return {};
  }

 private:
  Status exec(const char* text) {
    const int rc = sqlite3_exec(session_->db, text, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return session_->error(rc);
    return {};
  }

  SessionPtr session_;
  Options options_;
};

// ---- open -------------------------------------------------------------------

Error open_error(const Error& mapped, const Target& target) {
  Error e = mapped;
  e.code = db::Errc::connection;
  if (e.detail.empty()) e.detail = "database: " + target.open_name;
  return e;
}

bool schema_empty(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  bool empty = false;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &stmt, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    empty = sqlite3_column_int64(stmt, 0) == 0;
  }
  sqlite3_finalize(stmt);
  return empty;
}

void remove_database_files(const std::string& file) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::remove(file + suffix, ec);
  }
}

}  // namespace

Result<db::Connection> open_connection(const Target& target, const Options& options) {
  // Seeding is "once, when the file is new": connections a pool opens together
  // must not both see a missing file.
  static std::mutex seed_mu;
  std::unique_lock seed_lock(seed_mu, std::defer_lock);
  if (!options.seed_sql.empty()) seed_lock.lock();

  std::error_code ec;
  const bool existed = !target.memory && std::filesystem::exists(target.file, ec);

  sqlite3* db = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(target.open_name.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    const Error e = map_error(rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close_v2(db);
    return open_error(e, target);
  }
  auto session = std::make_shared<Session>(db);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout.count()));
  // SQLite refuses to make a string or blob longer than this (SQLITE_TOOBIG)
  // before allocating it: zeroblob(), printf(), concatenation, reads.
  if (options.max_value_size != 0) {
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH,
                  static_cast<int>(std::min<uint64_t>(options.max_value_size, INT32_MAX)));
  }

  auto fail = [&](int code) {
    const Error e = open_error(session->error(code), target);
    session->close();
    return e;
  };
  rc = register_pg_functions(db);
  if (rc != SQLITE_OK) return fail(rc);
  rc = attach_catalog(db, session->catalog);
  if (rc != SQLITE_OK) return fail(rc);
  rc = sqlite3_exec(db, options.foreign_keys ? "PRAGMA foreign_keys=ON" : "PRAGMA foreign_keys=OFF",
                    nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail(rc);
  if (!target.memory) {
    // WAL: readers do not block the writer nor the writer readers. A read-only
    // database keeps its journal mode.
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_READONLY) return fail(rc);
  }

  if (!options.seed_sql.empty() && (target.memory ? schema_empty(db) : !existed)) {
    std::ifstream in(options.seed_sql, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
      session->close();
      if (!existed && !target.memory) remove_database_files(target.file);
      Error e = Error::connection("could not read seed_sql file " + options.seed_sql);
      e.sqlstate = "58P01";  // undefined_file
      return e;
    }
    rc = sqlite3_exec(db, text.str().c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      Error e = open_error(session->error(rc), target);
      e.detail = "while running seed_sql " + options.seed_sql;
      session->close();
      // The file was created by this open: remove it so the next open seeds afresh.
      if (!existed && !target.memory) remove_database_files(target.file);
      return e;
    }
  }
  return db::Connection(std::make_unique<SqliteConnection>(std::move(session), options));
}

}  // namespace wirepool::sqlite
