// The reader of the text protocol: mysql_real_query + mysql_use_result, one
// result after another for multi-statement text.

#include "backends/mysql/mysql_internal.hpp"

#include <algorithm>

namespace wirepool::mysql::detail {

namespace {

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

}  // namespace

Result<std::unique_ptr<db::RowsImpl>> run_text(const SessionPtr& s, std::string_view text) {
  auto rows = std::make_unique<TextRows>(s);
  if (auto e = rows->start(text)) return *e;
  return std::unique_ptr<db::RowsImpl>(std::move(rows));
}

}  // namespace wirepool::mysql::detail
