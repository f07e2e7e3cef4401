// The prepared statement: executions on its handle (a fresh copy beside a
// reader still open) and batches as parameter arrays.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

VerbsPtr verbs_of(std::string_view text, sql::Dialect d) {
  auto out = std::make_shared<std::vector<std::string>>();
  for (auto piece : sql::split_statements(text, d))
    out->push_back(sql::command_verb(piece, d));
  return out;
}

namespace {

/// SQLExecute of the parameter array bound to `hd` (`rows` rows) and the counts
/// it reports: each row's where the driver has them (Session::batch_row_counts),
/// else the total. Answers the last SQLRETURN; the array was cancellable
/// (Running) throughout.
SQLRETURN execute_array(Session& s, const Handle& hd, size_t rows, db::BatchInfo& out) {
  const SQLHSTMT h = hd.h;
  Running running(hd);
  SQLRETURN rc = SQLExecute(h);
  if (rc != SQL_NO_DATA && ok(rc)) {
    SQLLEN count = -1;
    if (ok(SQLRowCount(h, &count)) && count >= 0) out.total = count;
    if (s.batch_row_counts) {
      // psqlODBC: the first row's count now, each next one after SQLMoreResults.
      out.affected.push_back(std::max<int64_t>(out.total, 0));
      while (out.affected.size() < rows) {
        rc = SQLMoreResults(h);
        if (rc == SQL_NO_DATA || !ok(rc)) break;
        count = -1;
        SQLRowCount(h, &count);
        out.affected.push_back(std::max<int64_t>(count, 0));
      }
      // To the end, as a C program would (the caller closes the cursor anyway).
      while (ok(rc) && rc != SQL_NO_DATA)
        rc = SQLMoreResults(h);
      if (rc == SQL_NO_DATA) rc = SQL_SUCCESS;
      out.total = 0;
      for (int64_t a : out.affected)
        out.total += a;
      if (out.affected.size() != rows) out.affected.clear();
    }
  } else if (rc == SQL_NO_DATA) {
    out.total = 0;  // nothing matched (UPDATE, DELETE)
    rc = SQL_SUCCESS;
  }
  return rc;
}

class OdbcStatement final : public db::StatementImpl {
 public:
  OdbcStatement(SessionPtr session, HandlePtr hd, Rewritten rw, std::u16string text,
                std::span<const db::ParamInfo> hints)
      : session_(std::move(session)),
        hd_(std::move(hd)),
        rw_(std::move(rw)),
        text_(std::move(text)) {
    params_.resize(std::max(rw_.needed, hints.size()));
    for (size_t i = 0; i < hints.size(); ++i)
      params_[i] = hints[i];
    // What SQLPrepare told of the result, settled now so that every execution
    // reuses one row array.
    if (settle_prepared(*session_, *hd_).ok() && hd_->shape) columns_ = hd_->shape->columns;
  }

  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params, const db::QueryOptions&) override {
    if (!hd_) return Error::closed("statement");
    if (session_->closed) return Error::closed();
    if (params.size() != rw_.needed) return count_mismatch(params.size(), rw_.needed);
    HandlePtr use;
    if (hd_.use_count() > 1) [[unlikely]] {  // a reader of this statement holds it
      auto copy = fresh_copy();
      if (!copy.ok()) return copy.take_error();
      use = std::move(copy.value());
    } else {
      use = hd_;
    }
    return run_prepared(std::move(use), params, rw_.binds);
  }

  /// A reader of this statement is still open: a fresh copy to run beside it.
  [[gnu::noinline]] Result<HandlePtr> fresh_copy() {
    ++session_->stats.statement_copies;
    auto use = std::make_shared<Handle>(session_);
    use->set_verbs(hd_->verbs, session_->flavor);
    if (auto st = use->alloc(); !st.ok()) return st.take_error();
    if (!ok(prepare_text(*session_, use->h, rw_.text, text_))) return session_->stmt_error(use->h);
    return use;
  }

  Result<db::BatchInfo> execute_batch(std::span<const db::Params> rows) override {
    if (!hd_) return Error::closed("statement");
    if (session_->closed) return Error::closed();
    for (const db::Params& row : rows) {
      if (row.size() != rw_.needed) return count_mismatch(row.size(), rw_.needed);
    }
    // A statement with a result runs row by row; so does a batch of one.
    if (rows.size() < 2 || !columns_.empty()) {
      return db::StatementImpl::execute_batch(rows);
    }
    Session& s = *session_;
    ParamArrays arrays;
    bool fits = true;
    if (auto e = arrays.fill(rows, rw_.binds, s.flavor == Flavor::sqlite, fits)) return *e;
    if (!fits) return db::StatementImpl::execute_batch(rows);
    // A handle of its own, prepared and never described: psqlODBC runs an
    // array on a handle it has not described as one round trip of
    // statements ("INSERT …;INSERT …"), but on a described one (the single-row
    // handle, settle_prepared) as one Bind/Execute per row
    // (docs/performance-notes.md). It also leaves the single-row handle's
    // bindings alone.
    if (!batch_hd_) {
      auto b = std::make_shared<Handle>(session_);
      if (auto st = b->alloc(); !st.ok()) return st.take_error();
      if (!ok(prepare_text(s, b->h, rw_.text, text_))) return session_->stmt_error(b->h);
      batch_hd_ = std::move(b);
    }
    const SQLHSTMT h = batch_hd_->h;
    std::vector<SQLUSMALLINT> status(rows.size(), SQL_PARAM_UNUSED);
    SQLULEN processed = 0;
    auto attr = [&](SQLINTEGER what, SQLPOINTER v) { return SQLSetStmtAttrW(h, what, v, 0); };
    auto restore = [&] {
      SQLFreeStmt(h, SQL_CLOSE);
      SQLFreeStmt(h, SQL_RESET_PARAMS);
      attr(SQL_ATTR_PARAMSET_SIZE, reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(1)));
      attr(SQL_ATTR_PARAM_STATUS_PTR, nullptr);
      attr(SQL_ATTR_PARAMS_PROCESSED_PTR, nullptr);
    };
    if (!ok(attr(SQL_ATTR_PARAM_BIND_TYPE,
                 reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(SQL_PARAM_BIND_BY_COLUMN)))) ||
        !ok(attr(SQL_ATTR_PARAMSET_SIZE,
                 reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(rows.size()))))) {
      restore();  // no parameter arrays in this driver
      return db::StatementImpl::execute_batch(rows);
    }
    attr(SQL_ATTR_PARAM_STATUS_PTR, status.data());
    attr(SQL_ATTR_PARAMS_PROCESSED_PTR, &processed);
    if (auto st = arrays.bind(s, h); !st.ok()) {
      restore();
      return st.take_error();
    }
    // A failed batch leaves none of its rows behind. psqlODBC sends the array
    // as one query under its own savepoint (statement-level rollback,
    // _EXEC_SVP_; ours would be released with it); SQLite ODBC keeps the rows
    // before a failing one, and another driver may too, so in a transaction
    // the batch runs under a savepoint. Outside one, the caller brackets it.
    const bool guard = s.in_tx && s.flavor != Flavor::postgresql;
    if (guard && !run_text("SAVEPOINT wp_batch")) {
      restore();
      return db::StatementImpl::execute_batch(rows);  // no savepoints here: row by row
    }
    ++s.stats.batches;
    db::BatchInfo out;
    const SQLRETURN rc = execute_array(s, *batch_hd_, rows.size(), out);
    const bool failed = s.timed_out || !ok(rc);
    std::optional<Error> err;
    if (s.timed_out) {
      err = statement_timeout(s.options);
    } else if (failed) {
      err = s.stmt_error(h);
    }
    restore();
    if (guard) {
      if (failed) (void)run_text("ROLLBACK TO SAVEPOINT wp_batch");
      (void)run_text("RELEASE SAVEPOINT wp_batch");
    }
    if (err) return std::move(*err);
    return out;
  }

  /// Runs a statement without parameters or result on a handle of its own.
  bool run_text(const std::string& text) {
    Handle tmp(session_);
    if (!tmp.alloc().ok()) return false;
    std::u16string wtext(text.begin(), text.end());  // ASCII
    SQLRETURN rc;
    {
      Running running(tmp);
      rc = exec_direct(*session_, tmp.h, text, wtext);
    }
    if (!ok(rc) && rc != SQL_NO_DATA) {
      const Error e = session_->stmt_error(tmp.h);
      spdlog::debug("odbc: {}: {} {}", text, e.sqlstate, e.message);
      return false;
    }
    return true;
  }

  Status close() override {
    batch_hd_.reset();
    hd_.reset();  // freed now, or by the reader still running it
    return {};
  }

 private:
  SessionPtr session_;
  HandlePtr hd_;
  HandlePtr batch_hd_;  // execute_batch's (created on the first batch)
  Rewritten rw_;
  std::u16string text_;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
};

}  // namespace

std::unique_ptr<db::StatementImpl> make_statement(SessionPtr session, HandlePtr hd, Rewritten rw,
                                                  std::u16string text,
                                                  std::span<const db::ParamInfo> hints) {
  return std::make_unique<OdbcStatement>(std::move(session), std::move(hd), std::move(rw),
                                         std::move(text), hints);
}

}  // namespace wirepool::odbc::detail
