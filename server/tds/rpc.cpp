// TdsClient: RPC requests: sp_executesql, sp_prepare / sp_execute /
// sp_prepexec / sp_unprepare.

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
#include "sql/lexer.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace tds_detail;

namespace {

/// "Could not find stored procedure".
constexpr int32_t kNoSuchProcedure = 2812;

/// Parses sp_executesql / sp_prepare's parameter declaration
/// ("@p1 int, @name nvarchar(50) OUTPUT") into the names, lower case, without '@'.
std::vector<std::string> declared_names(std::string_view decl) {
  std::vector<std::string> names;
  int depth = 0;
  bool at_start = true;
  for (size_t i = 0; i < decl.size(); ++i) {
    char c = decl[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      at_start = true;
      continue;
    }
    if (at_start && c == '@') {
      size_t j = i + 1;
      while (j < decl.size() && (std::isalnum(static_cast<unsigned char>(decl[j])) ||
                                 decl[j] == '_' || decl[j] == '@' || decl[j] == '#' ||
                                 decl[j] == '$' || static_cast<unsigned char>(decl[j]) >= 0x80))
        ++j;
      names.push_back(lower(decl.substr(i + 1, j - i - 1)));
      at_start = false;
      i = j - 1;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      at_start = false;
    }
  }
  return names;
}

/// Rewrites T-SQL's @name markers of declared parameters to $n (1-based, in
/// declaration order), which every driver binds positionally (SQLite by
/// name, MySQL and ODBC rewriting $n to ?). Other @names (local variables,
/// @@ROWCOUNT) stay as they are. The lexer skips literals, [identifiers],
/// "identifiers" and comments.
std::string rewrite_markers(std::string_view sql, const std::vector<std::string>& names) {
  if (names.empty()) return std::string(sql);
  std::string out;
  size_t at = 0;
  for (const auto& m : sql::find_markers(sql, sql::Dialect::tsql)) {
    if (m.type != sql::Marker::Type::named) continue;
    if (m.offset > 0 && sql[m.offset - 1] == '@') continue;  // @@global
    auto it = std::find(names.begin(), names.end(), lower(m.name));
    if (it == names.end()) continue;
    out.append(sql.substr(at, m.offset - at));
    out += '$';
    out += std::to_string(it - names.begin() + 1);
    at = m.offset + m.length;
  }
  out.append(sql.substr(at));
  return out;
}

/// The text of an nvarchar/varchar parameter (sp_executesql's @stmt and @params).
std::optional<std::string> text_param(const tds::RpcParam& p) {
  if (p.value.value.kind == db::Kind::Text) return p.value.value.str;
  if (p.value.value.kind == db::Kind::Null) return std::string();
  return std::nullopt;
}

std::string proc_name_of(const tds::RpcRequest& r) {
  return r.proc_name.empty() ? tds::proc_name(r.proc_id) : r.proc_name;
}

std::optional<int64_t> int_param(const tds::RpcParam& p) {
  if (p.value.value.kind == db::Kind::I64) return p.value.value.i64;
  return std::nullopt;
}

}  // namespace

awaitable<void> TdsClient::rpc(tds::RpcRequest& req) {
  const uint16_t id = req.proc_id;
  std::string name = lower(req.proc_name);
  auto proc_is = [&](uint16_t pid, std::string_view pname) {
    return id == pid || name == pname || name == std::string("sys.") + std::string(pname);
  };
  auto fail = [&](int32_t number, std::string_view message) {
    error_token(number, 16, message);
    done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
  };
  std::vector<db::Param> params;
  std::string sql;
  int32_t handle_out = 0;
  bool returns_handle = false;
  size_t first_value = 0;
  std::vector<std::string> names;
  if (proc_is(tds::proc::kExecuteSql, "sp_executesql") ||
      proc_is(tds::proc::kPrepExec, "sp_prepexec")) {
    // sp_executesql @stmt [, @params, values...];
    // sp_prepexec @handle OUTPUT, @params, @stmt, values...
    bool prepexec = proc_is(tds::proc::kPrepExec, "sp_prepexec");
    const size_t stmt_at = prepexec ? 2 : 0, decl_at = 1;
    if (req.params.size() <= stmt_at) {
      fail(8144, "Procedure or function " + proc_name_of(req) + " has too few arguments.");
      co_return;
    }
    auto stmt = text_param(req.params[stmt_at]);
    auto decl = req.params.size() > decl_at ? text_param(req.params[decl_at])
                                            : std::optional<std::string>(std::string());
    if (!stmt || !decl) {
      fail(214, "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'.");
      co_return;
    }
    names = declared_names(*decl);
    sql = rewrite_markers(*stmt, names);
    first_value = prepexec ? 3 : 2;
    if (prepexec) {
      Prepared p;
      p.sql = sql;
      p.names = names;
      handle_out = next_handle_++;
      prepared_[handle_out] = std::move(p);
      returns_handle = true;
    }
  } else if (proc_is(tds::proc::kPrepare, "sp_prepare")) {
    // sp_prepare @handle OUTPUT, @params, @stmt [, @options]
    if (req.params.size() < 3) {
      fail(8144, "Procedure or function sp_prepare has too few arguments.");
      co_return;
    }
    auto decl = text_param(req.params[1]);
    auto stmt = text_param(req.params[2]);
    if (!stmt || !decl) {
      fail(214, "Procedure expects parameter '@stmt' of type 'ntext/nchar/nvarchar'.");
      co_return;
    }
    Prepared p;
    p.names = declared_names(*decl);
    p.sql = rewrite_markers(*stmt, p.names);
    // @options 0x0001 (RETURN_METADATA): SQL Server prepares the statement now,
    // refusing bad SQL, and describes its result with a COLMETADATA.
    const auto options = req.params.size() > 3 ? int_param(req.params[3]) : std::nullopt;
    if (options && (*options & 1) != 0) {
      std::vector<db::Column> cols;
      if (auto err = co_await describe(p.sql, cols)) {
        backend_error(std::move(*err));
        done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
        co_return;
      }
      if (!cols.empty()) {
        std::vector<tds::ColumnMeta> meta(cols.size());
        for (size_t i = 0; i < cols.size(); ++i) {
          meta[i].name = cols[i].name;
          meta[i].flags = tds::col_flag::kNullable;
          meta[i].type = tds::column_type(cols[i], tds::kDefaultCollation, nullptr);
        }
        tds::TokenEncoder(payload_).col_metadata(meta);
      }
    }
    handle_out = next_handle_++;
    prepared_[handle_out] = std::move(p);
    tds::TokenEncoder enc(payload_);
    enc.return_status(0);
    tds::TypeInfo t;
    t.type = tds::type::kIntN;
    t.max_length = 4;
    auto v = db::ValueView::int64(handle_out);
    (void)enc.return_value(0, req.params[0].name, 0x01, t, v);
    done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
    co_return;
  } else if (proc_is(tds::proc::kUnprepare, "sp_unprepare")) {
    if (!req.params.empty()) {
      if (auto h = int_param(req.params[0])) prepared_.erase(static_cast<int32_t>(*h));
    }
    tds::TokenEncoder(payload_).return_status(0);
    done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
    co_return;
  } else if (proc_is(tds::proc::kExecute, "sp_execute")) {
    std::optional<int64_t> h = req.params.empty() ? std::nullopt : int_param(req.params[0]);
    auto it = h ? prepared_.find(static_cast<int32_t>(*h)) : prepared_.end();
    if (it == prepared_.end()) {
      fail(8179, "Could not find prepared statement with handle " +
                     (h ? std::to_string(*h) : std::string("(none)")) + ".");
      co_return;
    }
    sql = it->second.sql;
    names = it->second.names;
    first_value = 1;
  } else {
    std::string shown = req.proc_name.empty() ? tds::proc_name(id) : req.proc_name;
    spdlog::info("client {}: RPC {} refused: not supported", peer_, shown);
    fail(kNoSuchProcedure, "Could not find stored procedure '" + shown + "'.");
    co_return;
  }

  // The values, in declaration order: named ones by name, others by position.
  std::vector<const tds::RpcParam*> ordered(names.size(), nullptr);
  std::vector<std::pair<size_t, const tds::RpcParam*>> outputs;
  size_t position = 0;
  for (size_t i = first_value; i < req.params.size(); ++i) {
    const auto& p = req.params[i];
    size_t at = position;
    if (!p.name.empty()) {
      std::string n = lower(p.name);
      if (!n.empty() && n[0] == '@') n.erase(0, 1);
      auto it = std::find(names.begin(), names.end(), n);
      if (it == names.end()) {
        fail(8145, p.name + " is not a parameter for procedure " + proc_name_of(req) + ".");
        co_return;
      }
      at = static_cast<size_t>(it - names.begin());
    }
    ++position;
    if (at >= ordered.size()) ordered.resize(at + 1, nullptr);
    ordered[at] = &p;
    if (p.output()) outputs.emplace_back(i, &p);
  }
  for (size_t i = 0; i < ordered.size(); ++i) {
    db::Param param;
    if (ordered[i]) param.value = ordered[i]->value.value;
    params.push_back(std::move(param));
  }

  session_->statement_begin();
  bool ok = true;
  bool handled = co_await session_statement(sql, true, true, &ok);
  if (!handled) ok = co_await run_statement(sql, params, true, true);
  session_->statement_end();
  tds::TokenEncoder enc(payload_);
  if (!ok) {
    done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
    co_return;
  }
  enc.return_status(0);
  if (returns_handle) {
    tds::TypeInfo t;
    t.type = tds::type::kIntN;
    t.max_length = 4;
    auto v = db::ValueView::int64(handle_out);
    (void)enc.return_value(0, req.params[0].name, 0x01, t, v);
  }
  for (const auto& [ordinal, p] : outputs) {
    // The backends have no output parameters: they come back as they went in.
    auto v = db::view_of(p->value.value);
    if (!enc.return_value(static_cast<uint16_t>(ordinal), p->name, 0x01, p->value.type, v).ok()) {
      auto null = db::ValueView();
      (void)enc.return_value(static_cast<uint16_t>(ordinal), p->name, 0x01, p->value.type, null);
    }
  }
  done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
}

awaitable<std::optional<db::Error>> TdsClient::describe(const std::string& sql,
                                                        std::vector<db::Column>& cols) {
  if (auto err = co_await session_->ensure_backend()) co_return err;
  const auto rewritten = backend_text(sql);
  const std::string& text = rewritten ? *rewritten : sql;
  auto stmt = co_await session_->backend_statement(text, text, {});
  std::optional<db::Error> failed;
  if (stmt.ok()) {
    auto c = stmt.value()->columns();
    cols.assign(c.begin(), c.end());
  } else {
    failed = stmt.take_error();
  }
  session_->release_if_idle(false);
  co_return failed;
}

}  // namespace wirepool::server
