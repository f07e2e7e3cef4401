// The reader: executing a statement, fetching its rowsets and converting
// each cell, further results, the command tag.

#include <algorithm>
#include <cstring>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

namespace {

/// Pads exact decimal text to its scale ("1.5" at scale 2 is "1.50"): some
/// drivers (SQLite ODBC) hand out the shortest form.
void pad_decimal(std::string& text, int32_t scale) {
  if (scale <= 0 || text.empty()) return;
  const size_t point = text.find('.');
  if (text.find_first_of("eE") != std::string::npos) return;
  const size_t have = point == std::string::npos ? 0 : text.size() - point - 1;
  if (point == std::string::npos) text += '.';
  if (have < static_cast<size_t>(scale)) text.append(static_cast<size_t>(scale) - have, '0');
}

/// Converts the bytes of a cell (`len` at `p`) as its plan reads them into
/// `out`. `own` keeps what `out` points to past this call: converted text,
/// decimal digits, a binary value re-read into a buffer the next cell reuses.
/// Inlined into the per-cell loop (OdbcRows::cell), as it was written there.
[[gnu::always_inline]] inline void convert_cell(const ColumnPlan& plan, const unsigned char* p,
                                                size_t len, bool reread, const db::Column& column,
                                                std::string& own, db::ValueView& out) {
  switch (plan.read) {
    case Read::bit:
      out = db::ValueView::boolean(*p != 0);
      break;
    case Read::sbigint: {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      out = db::ValueView::int64(v);
      break;
    }
    case Read::ubigint: {
      uint64_t v;
      std::memcpy(&v, p, sizeof v);
      out = db::ValueView::uint64(v);
      break;
    }
    case Read::dbl: {
      double v;
      std::memcpy(&v, p, sizeof v);
      out = db::ValueView::float64(v);
      break;
    }
    case Read::wtext: {
      // Bound cells start at even offsets of an aligned array; raw is a
      // heap or in-object buffer: both aligned for char16_t.
      own.clear();
      append_utf8(reinterpret_cast<const char16_t*>(p), len / 2, own);
      out = db::ValueView::text(own);
      break;
    }
    case Read::decimal: {
      own.assign(reinterpret_cast<const char*>(p), len);
      pad_decimal(own, column.native.scale);
      out = db::ValueView::decimal(own);
      break;
    }
    case Read::binary:
      if (reread) {
        own.assign(reinterpret_cast<const char*>(p), len);
        out = db::ValueView::bytes(own);
      } else {
        out = db::ValueView::bytes(std::string_view(reinterpret_cast<const char*>(p), len));
      }
      break;
    case Read::timestamp: {
      SQL_TIMESTAMP_STRUCT ts;
      std::memcpy(&ts, p, sizeof ts);
      out = db::ValueView::time(micros_of(ts));
      break;
    }
    case Read::date: {
      SQL_DATE_STRUCT d;
      std::memcpy(&d, p, sizeof d);
      out = db::ValueView::time(micros_of(d));
      break;
    }
    case Read::guid: {
      SQLGUID g;
      std::memcpy(&g, p, sizeof g);
      own = guid_text(g);
      out = db::ValueView::text(own);
      break;
    }
  }
}

class OdbcRows final : public db::RowsImpl {
 public:
  // A reader holds its handle only, and through it the session and the
  // statement's verbs: no reference count of its own to take and drop per
  // execution. After close() (hd_ empty) it touches neither.
  OdbcRows() = default;
  ~OdbcRows() override {
    if (hd_) (void)close();
  }

  /// A spare block per thread: a prepared statement run over and over makes
  /// and drops one reader per execution, which then allocates nothing.
  static void* operator new(size_t n) {
    if (n == sizeof(OdbcRows) && spare_.p != nullptr) return std::exchange(spare_.p, nullptr);
    return ::operator new(n);
  }
  static void operator delete(void* p, size_t n) noexcept {
    if (n == sizeof(OdbcRows) && spare_.p == nullptr) {
      spare_.p = p;
      return;
    }
    ::operator delete(p);
  }

  /// Runs a direct query on a fresh handle: SQLExecDirectW, then the rowset.
  std::optional<Error> run_direct(HandlePtr hd, const std::string& text,
                                  const std::u16string& wtext, db::Params params,
                                  const std::vector<size_t>& binds) {
    start(std::move(hd));
    Session& s = *hd_->session;
    if (auto st = bind_params(s, hd_->h, params, binds, hd_->params); !st.ok()) return st.error();
    SQLRETURN rc;
    {
      Running running(*hd_);
      rc = exec_direct(s, hd_->h, text, wtext);
    }
    return after_execute(rc);
  }

  /// Runs a prepared handle: the rowset settled before SQLExecute.
  std::optional<Error> run_prepared(HandlePtr hd, db::Params params,
                                    const std::vector<size_t>& binds) {
    start(std::move(hd));
    Session& s = *hd_->session;
    if (auto st = bind_params(s, hd_->h, params, binds, hd_->params); !st.ok()) return st.error();
    if (!hd_->settled && !hd_->described) {
      if (auto st = settle_prepared(s, *hd_); !st.ok()) return st.error();
    }
    SQLRETURN rc;
    {
      Running running(*hd_);
      rc = SQLExecute(hd_->h);
    }
    return after_execute(rc);
  }

  std::span<const db::Column> columns() const override {
    if (!hd_ || !hd_->shape) return {};
    return hd_->shape->columns;
  }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (!hd_) return Error::closed("rows");
    Session& s = *hd_->session;
    if (s.closed) return Error::closed();
    if (done_ || !hd_->shape || hd_->shape->columns.empty()) return false;
    Handle& hd = *hd_;
    if (pos_ >= hd.fetched) {
      hd.fetched = 0;
      SQLRETURN rc;
      {
        // A driver that streams (psqlODBC UseDeclareFetch, MariaDB NO_CACHE)
        // waits on the server here too: cancel() and query_timeout reach it.
        Running running(hd, /*fetching=*/true);
        rc = SQLFetch(hd.h);
      }
      if (s.timed_out) return statement_timeout(s.options);
      if (rc == SQL_NO_DATA) {
        done_ = true;
        if (cancel_reached()) return user_cancel();
        return false;
      }
      if (!ok(rc)) return s.stmt_error(hd.h);
      // A cancel that reached this fetch (SQLite ODBC's mark, or a driver
      // that answered rows all the same) ends the result here.
      if (cancel_reached()) return user_cancel();
      if (hd.shape->get_data_only) hd.fetched = 1;
      ++s.stats.fetches;
      s.stats.rows += hd.fetched;
      s.stats.max_rows_per_fetch = std::max<uint64_t>(s.stats.max_rows_per_fetch, hd.fetched);
      pos_ = 0;
      if (hd.fetched == 0) {
        done_ = true;
        return false;
      }
    }
    const size_t r = pos_++;
    ++rows_read_;
    const size_t n = std::min(row.size(), hd.shape->columns.size());
    hd.cells.resize(hd.shape->columns.size());
    for (size_t i = 0; i < n; ++i) {
      if (auto e = cell(i, r, row[i])) return *e;
    }
    return true;
  }

  Result<bool> next_result() override {
    if (!hd_) return Error::closed("rows");
    if (hd_->session->closed) return Error::closed();
    SQLRETURN rc;
    {
      Running running(*hd_, /*fetching=*/true);
      rc = SQLMoreResults(hd_->h);
    }
    if (rc == SQL_NO_DATA) {
      done_ = true;
      if (cancel_reached()) return user_cancel();
      return false;
    }
    if (ok(rc) && cancel_reached()) return user_cancel();
    ++result_index_;
    affected_ = -1;
    hd_->settled = false;  // a new cursor: described and settled afresh
    if (auto e = after_execute(rc)) return *e;
    return true;
  }

  db::CommandInfo command() const override {
    db::CommandInfo info;
    if (!hd_) return info;  // closed (db::Rows asks only while open)
    info.verb = verb();
    info.affected = affected_;
    if (hd_->shape && !hd_->shape->columns.empty() && info.verb == "SELECT") {
      info.affected = static_cast<int64_t>(rows_read_);
    }
    return info;
  }

  Status close() override {
    if (!hd_) return {};
    if (!no_cursor_) {
      Session& s = *hd_->session;
      std::lock_guard lock(s.mu);
      if (!s.closed && hd_->h != SQL_NULL_HSTMT) {
        SQLFreeStmt(hd_->h, SQL_CLOSE);
        ++s.stats.cursor_closes;
      }
    }
    hd_.reset();  // a direct query's handle is freed; a prepared one is free again
    return {};
  }

 private:
  std::optional<Error> after_execute(SQLRETURN rc) {
    Session& s = *hd_->session;
    pos_ = 0;
    rows_read_ = 0;
    done_ = false;
    no_cursor_ = false;
    hd_->fetched = 0;
    if (s.timed_out.load(std::memory_order_relaxed) || (rc != SQL_NO_DATA && !ok(rc)) ||
        (rc == SQL_NO_DATA && cancel_reached())) [[unlikely]] {
      return failed(rc);
    }
    const bool single_dml = hd_->single_dml && result_index_ == 0;
    if (single_dml && hd_->described && hd_->shape && hd_->shape->columns.empty()) [[likely]] {
      // A prepared lone INSERT/UPDATE/DELETE run again (Handle::single_dml):
      // no result set, only its count. Straight-line, apart from the rest.
      done_ = true;
      no_cursor_ = true;
      SQLLEN count = -1;
      if (rc == SQL_NO_DATA) {
        affected_ = 0;
      } else if (ok(SQLRowCount(hd_->h, &count)) && count >= 0) {
        affected_ = count;
      }
      return std::nullopt;
    }
    return settle(rc, single_dml);
  }

  /// after_execute's general case: a result to describe (and bind), or not.
  [[gnu::noinline]] std::optional<Error> settle(SQLRETURN rc, bool single_dml) {
    Session& s = *hd_->session;
    const bool dml = result_index_ == 0 ? hd_->first_dml : Handle::is_dml(verb());
    if (auto st = settle_result(s, *hd_); !st.ok()) {
      return st.error();
    }
    if (!hd_->shape || hd_->shape->columns.empty()) {
      done_ = true;
      SQLLEN count = -1;
      if (rc != SQL_NO_DATA && ok(SQLRowCount(hd_->h, &count)) && count >= 0) {
        if (dml) affected_ = count;
      } else if (rc == SQL_NO_DATA) {
        if (dml) affected_ = 0;
      }
      no_cursor_ = single_dml;
    }
    return std::nullopt;
  }

  /// An execution that did not complete: the watchdog's cancel, the
  /// driver's error, or a cancel that reached it. Out of line (Running).
  [[gnu::noinline, gnu::cold]] std::optional<Error> failed(SQLRETURN rc) {
    Session& s = *hd_->session;
    if (s.timed_out) {
      // The watchdog cancelled it: whatever the driver answered (MariaDB's
      // interrupted SLEEP() answers 1), the statement did not complete.
      SQLFreeStmt(hd_->h, SQL_CLOSE);
      return statement_timeout(s.options);
    }
    if (rc != SQL_NO_DATA && !ok(rc)) {
      Error e = s.stmt_error(hd_->h);
      SQLFreeStmt(hd_->h, SQL_CLOSE);
      return e;
    }
    SQLFreeStmt(hd_->h, SQL_CLOSE);
    return user_cancel();
  }

  /// Reads a whole cell with SQLGetData (the cursor is on its row) into raw.
  std::optional<Error> get_data(size_t col, const ColumnPlan& plan, std::string& raw,
                                bool& is_null) {
    Session& s = *hd_->session;
    raw.clear();
    is_null = false;
    const SQLUSMALLINT c = static_cast<SQLUSMALLINT>(col + 1);
    const bool var =
        plan.read == Read::wtext || plan.read == Read::binary || plan.read == Read::decimal;
    if (!var) {
      raw.resize(plan.width);
      SQLLEN ind = 0;
      const SQLRETURN rc =
          SQLGetData(hd_->h, c, plan.c_type, raw.data(), static_cast<SQLLEN>(raw.size()), &ind);
      if (!ok(rc)) return s.stmt_error(hd_->h);
      is_null = ind == SQL_NULL_DATA;
      return std::nullopt;
    }
    const size_t term = plan.read == Read::wtext ? 2 : plan.read == Read::decimal ? 1 : 0;
    // UTF-16 text: each unit is at least one byte once converted to UTF-8.
    const uint64_t limit = s.options.max_value_size * (plan.read == Read::wtext ? 2 : 1);
    auto too_large = [&](uint64_t bytes) { return limit != 0 && bytes > limit; };
    char buf[8192];
    for (bool first = true;; first = false) {
      SQLLEN ind = 0;
      const SQLRETURN rc = SQLGetData(hd_->h, c, plan.c_type, buf, sizeof buf, &ind);
      if (rc == SQL_NO_DATA && first) {
        // The driver says the cell was read already: never hand out a cell
        // cut short as if it were whole (MariaDB ODBC does this after
        // SQLSetPos; docs/odbc.md).
        return protocol_error("XX000", "the ODBC driver returned no data for column " +
                                           std::to_string(col + 1) + " of a row");
      }
      if (rc == SQL_NO_DATA) break;
      if (!ok(rc)) return s.stmt_error(hd_->h);
      if (ind == SQL_NULL_DATA) {
        is_null = true;
        return std::nullopt;
      }
      const size_t room = sizeof buf - term;
      // Refused before it is read whole: by the length the driver announces,
      // else by what has arrived.
      if (too_large(raw.size() + (ind == SQL_NO_TOTAL ? room : static_cast<uint64_t>(ind)))) {
        raw.clear();
        raw.shrink_to_fit();
        return Error::value_too_large(s.options.max_value_size);
      }
      if (ind == SQL_NO_TOTAL || static_cast<size_t>(ind) > room) {
        raw.append(buf, room);  // truncated: more follows
        if (rc == SQL_SUCCESS) break;
        continue;
      }
      raw.append(buf, static_cast<size_t>(ind));
      break;
    }
    return std::nullopt;
  }

  /// Fills `out` with cell (row r of the rowset, column i).
  std::optional<Error> cell(size_t i, size_t r, db::ValueView& out) {
    Handle& hd = *hd_;
    const ColumnPlan& plan = hd.shape->plans[i];
    const unsigned char* p = nullptr;
    size_t len = 0;
    std::string& own = hd.cells[i];
    std::string& raw = hd.raw;
    bool reread = false;  // the bytes are in raw, which the next cell reuses
    if (hd.shape->get_data_only) {
      bool is_null = false;
      if (auto e = get_data(i, plan, raw, is_null)) return e;
      if (is_null) {
        out = db::ValueView::null();
        return std::nullopt;
      }
      p = reinterpret_cast<const unsigned char*>(raw.data());
      len = raw.size();
      reread = true;
    } else {
      const Bound& b = hd.bound[i];
      const SQLLEN ind = b.ind[r];
      if (ind == SQL_NULL_DATA) {
        out = db::ValueView::null();
        return std::nullopt;
      }
      p = b.data + r * plan.width;
      len = plan.width;
      const size_t term = plan.read == Read::wtext ? 2 : plan.read == Read::decimal ? 1 : 0;
      const bool var =
          plan.read == Read::wtext || plan.read == Read::binary || plan.read == Read::decimal;
      if (var) {
        if (ind == SQL_NO_TOTAL || static_cast<size_t>(ind) > plan.width - term) {
          // Longer than its bound width: position on the row, read it whole.
          Session& s = *hd_->session;
          const uint64_t limit = s.options.max_value_size * (plan.read == Read::wtext ? 2 : 1);
          if (ind != SQL_NO_TOTAL && limit != 0 && static_cast<uint64_t>(ind) > limit) {
            return Error::value_too_large(s.options.max_value_size);
          }
          if (!s.reread) {
            // Only a full-width binding gets here, and its width is the most
            // the column can hold: the driver broke its own description.
            return protocol_error("XX000", "the ODBC driver returned a value of column " +
                                               std::to_string(i + 1) +
                                               " longer than the width it declared");
          }
          if (!ok(SQLSetPos(hd.h, static_cast<SQLSETPOSIROW>(r + 1), SQL_POSITION,
                            SQL_LOCK_NO_CHANGE))) {
            return s.stmt_error(hd.h);
          }
          bool is_null = false;
          if (auto e = get_data(i, plan, raw, is_null)) return e;
          ++s.stats.rereads;
          p = reinterpret_cast<const unsigned char*>(raw.data());
          len = raw.size();
          reread = true;
        } else {
          len = static_cast<size_t>(ind);
        }
      }
    }
    convert_cell(plan, p, len, reread, hd.shape->columns[i], own, out);
    return std::nullopt;
  }

  /// Takes the handle of an execution: a cancel of its last one is over.
  void start(HandlePtr hd) {
    hd_ = std::move(hd);
    auto& cancelled = hd_->session->cancelled;
    if (cancelled.load(std::memory_order_relaxed) == hd_->h) cancelled.store(SQL_NULL_HSTMT);
  }

  /// SQLCancel reached this execution (Session::cancelled).
  bool cancel_reached() const { return hd_->session->cancelled.load() == hd_->h; }

  /// The verb of the statement whose result this is.
  const std::string& verb() const {
    static const std::string none;
    const auto& verbs = hd_->verb_list();
    return result_index_ < verbs.size() ? verbs[result_index_] : none;
  }

  struct Spare {
    void* p = nullptr;
    ~Spare() { ::operator delete(p); }
  };
  static thread_local Spare spare_;

  HandlePtr hd_;
  size_t result_index_ = 0;
  int64_t affected_ = -1;  // rows the statement of this result changed (CommandInfo)
  SQLULEN pos_ = 0;
  uint64_t rows_read_ = 0;
  bool done_ = false;
  bool no_cursor_ = false;  // nothing left for SQLFreeStmt(SQL_CLOSE) to close
};

thread_local OdbcRows::Spare OdbcRows::spare_;

}  // namespace

Result<std::unique_ptr<db::RowsImpl>> run_direct(HandlePtr hd, const std::string& text,
                                                 const std::u16string& wtext, db::Params params,
                                                 const std::vector<size_t>& binds) {
  auto rows = std::make_unique<OdbcRows>();
  if (auto e = rows->run_direct(std::move(hd), text, wtext, params, binds)) return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

Result<std::unique_ptr<db::RowsImpl>> run_prepared(HandlePtr hd, db::Params params,
                                                   const std::vector<size_t>& binds) {
  auto rows = std::make_unique<OdbcRows>();
  if (auto e = rows->run_prepared(std::move(hd), params, binds)) [[unlikely]]
    return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

}  // namespace wirepool::odbc::detail
