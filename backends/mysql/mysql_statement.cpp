// The prepared statement handle: the text protocol without parameters, the
// binary protocol with them.

#include "backends/mysql/mysql_internal.hpp"

#include <algorithm>

namespace wirepool::mysql::detail {

namespace {

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

}  // namespace

std::unique_ptr<db::StatementImpl> make_statement(SessionPtr s, PreparedPtr p, std::string text,
                                                  int required,
                                                  std::span<const db::ParamInfo> hints) {
  return std::make_unique<MysqlStatement>(std::move(s), std::move(p), std::move(text), required,
                                          hints);
}

}  // namespace wirepool::mysql::detail
