// TdsClient: SQL batches, their statements (some answered by wirepool, the
// rest run on the backend) and their results' encoding as TDS tokens.

#include "server/tds/client.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "protocol/tds/errors.hpp"
#include "server/tds/client_detail.hpp"
#include "sql/classify.hpp"
#include "sql/lexer.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace tds_detail;

namespace {

/// DONE's CurCmd for a statement verb (what SQL Server reports).
uint16_t command_of(std::string_view verb) {
  if (verb == "SELECT") return 0xC1;
  if (verb == "INSERT") return 0xC3;
  if (verb == "DELETE") return 0xC4;
  if (verb == "UPDATE") return 0xC5;
  return 0;
}

}  // namespace

/// A result being sent (ResultPump) and its encoding as COLMETADATA and ROW /
/// NBCROW tokens.
struct TdsClient::Result final : ResultPump, RowSink {
  Result() { first_row_first = true; }

  void begin_columns(std::span<const db::Column> cols, const std::vector<db::ValueView>* first,
                     std::string& out) override {
    meta.resize(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      db::Column c = cols[i];
      const db::ValueView* sample = first ? &(*first)[i] : nullptr;
      if (c.kind == db::Kind::Null && sample && !sample->is_null()) c.kind = sample->kind;
      meta[i].name = c.name;
      meta[i].flags = tds::col_flag::kNullable;
      meta[i].type = tds::column_type(c, tds::kDefaultCollation, sample);
    }
    tds::TokenEncoder(out).col_metadata(meta);
  }

  bool add_row(std::span<const db::ValueView> values, std::string& out,
               std::optional<db::Error>& failure) override {
    // A dynamically typed backend may hold another kind than the column's:
    // the codec converts what converts exactly (numbers to text, integers
    // to float) and refuses the rest (docs/tds.md).
    auto st = tds::TokenEncoder(out).row(meta, values);
    if (st.ok()) return true;
    failure = st.take_error();
    return false;
  }

  std::vector<tds::ColumnMeta> meta;
};

awaitable<bool> TdsClient::session_statement(std::string_view stmt, bool in_proc, bool more,
                                             bool* ok) {
  *ok = true;
  const auto c = sql::classify_tsql(stmt);
  if (c.kind == sql::TsqlKind::other) co_return false;
  const uint8_t done_tok = in_proc ? tds::token::kDoneInProc : tds::token::kDone;
  const uint16_t more_bit = more ? tds::done::kMore : 0;
  if (c.kind == sql::TsqlKind::rollback_named) {
    error_token(6401, 16,
                "wirepool does not support ROLLBACK TRANSACTION to a savepoint or a named "
                "transaction from TDS clients");
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    *ok = false;
    co_return true;
  }
  const bool begin = c.kind == sql::TsqlKind::begin;
  const bool commit = c.kind == sql::TsqlKind::commit;
  const bool rollback = c.kind == sql::TsqlKind::rollback;
  if (begin || commit || rollback) {
    db::Status st;
    if (begin) {
      st = co_await begin_tx();
    } else if (commit) {
      st = co_await commit_tx();
    } else {
      st = co_await rollback_tx();
    }
    if (!st.ok()) {
      backend_error(st.take_error());
      done_token(done_tok, tds::done::kError | more_bit, 0, 0);
      *ok = false;
    } else {
      done_token(done_tok, more_bit, 0, 0);
    }
    co_return true;
  }
  // A backend that is not SQL Server has no equivalent of T-SQL's session
  // options: wirepool acknowledges them and honours NOCOUNT itself.
  if (c.kind == sql::TsqlKind::set_option && session_->pool().dialect() != sql::Dialect::tsql) {
    if (c.option == "nocount" && !c.value.empty()) nocount_ = c.value == "on";
    if (c.option == "implicit_transactions" && c.value == "on") {
      error_token(15001, 16,
                  "wirepool does not support SET IMPLICIT_TRANSACTIONS ON for this backend");
      done_token(done_tok, tds::done::kError | more_bit, 0, 0);
      *ok = false;
      co_return true;
    }
    done_token(done_tok, more_bit, 0, 0);
    co_return true;
  }
  co_return false;
}

awaitable<void> TdsClient::sql_batch(const std::string& text) {
  auto dialect = session_->pool().dialect();
  auto stmts = sql::split_statements(
      text, dialect == sql::Dialect::postgres || dialect == sql::Dialect::sqlite
                ? dialect
                : sql::Dialect::tsql);
  session_->statement_begin();
  if (stmts.empty()) {
    done_token(tds::token::kDone, tds::done::kFinal, 0, 0);
  }
  const std::vector<db::Param> none;
  for (size_t i = 0; i < stmts.size(); ++i) {
    bool more = i + 1 < stmts.size();
    bool ok = true;
    std::string stmt(stmts[i]);
    if (!co_await session_statement(stmt, false, more, &ok)) {
      ok = co_await run_statement(stmt, none, false, more);
    }
    if (!ok) {
      // SQL Server goes on after most statement errors; wirepool stops the
      // batch at the first one (docs/tds.md), so the DONE above ends it.
      if (more) {
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
      }
      break;
    }
    if (attention_ || gone_) break;
  }
  session_->statement_end();
}

std::optional<std::string> TdsClient::backend_text(const std::string& sql) const {
  if (session_->pool().dialect() != sql::Dialect::sqlite) return std::nullopt;
  return sql::drop_national_prefixes(sql);
}

awaitable<bool> TdsClient::run_statement(const std::string& sql,
                                         const std::vector<db::Param>& params, bool in_proc,
                                         bool more) {
  const uint8_t done_tok = in_proc ? tds::token::kDoneInProc : tds::token::kDone;
  const uint16_t more_bit = (more || in_proc) ? tds::done::kMore : 0;
  if (auto err = co_await session_->ensure_backend()) {
    error_token(*err);
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    co_return false;
  }
  Result r;
  db::Error err;
  std::string* out = &payload_;
  const auto rewritten = backend_text(sql);
  const std::string& text = rewritten ? *rewritten : sql;
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    return r.start([&] { return b.conn.query(text, params); }, r, *out, 0, err);
  });
  Fetch f = co_await pump_result(r, r, payload_, 0, err, first);
  forward_notices();
  if (f == Fetch::error) {
    if (attention_ && err.sqlstate == "57014") {
      done_token(done_tok, more_bit, command_of(r.info.verb), static_cast<uint64_t>(r.sent));
      co_return false;
    }
    backend_error(std::move(err));
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    co_return false;
  }
  const std::string verb =
      r.info.verb.empty() ? sql::command_verb(sql, session_->pool().dialect()) : r.info.verb;
  uint64_t count = r.has_columns ? static_cast<uint64_t>(r.sent)
                                 : static_cast<uint64_t>(std::max<int64_t>(r.info.affected, 0));
  bool has_count = !nocount_ && (r.has_columns || r.info.affected >= 0);
  done_token(done_tok, more_bit | (has_count ? tds::done::kCount : 0), command_of(verb), count);
  co_return true;
}

}  // namespace wirepool::server
