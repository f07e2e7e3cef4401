// PgClient: the extended query protocol (Parse, Bind, Describe, Execute,
// Close, Sync) and its portals.

#include "server/pg/client.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

#include "protocol/pg/datetime.hpp"
#include "protocol/pg/scram.hpp"
#include "server/admin.hpp"
#include "server/pg/backend_sql.hpp"
#include "server/pg/client_detail.hpp"
#include "tls/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace pg_detail;

namespace {

/// A PostgreSQL backend takes the client's parameter types as they are;
/// other backends type parameters themselves.
std::vector<db::ParamInfo> param_hints(bool pg_native, const std::vector<uint32_t>& oids) {
  std::vector<db::ParamInfo> hints;
  if (!pg_native) return hints;
  hints.reserve(oids.size());
  for (uint32_t oid : oids) {
    db::ParamInfo h;
    h.native.pg_oid = oid;
    hints.push_back(h);
  }
  return hints;
}

/// A portal name that SQL can quote as it is, as an identifier (in double
/// quotes) and as a literal (in single quotes, inside a dollar-quoted body).
bool plain_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ' ';
  });
}

std::string quote_ident(std::string_view name) {
  return "\"" + std::string(name) + "\"";
}

}  // namespace

bool PgClient::cursor_portal(const Prepared& p, std::string_view portal) const {
  // A named portal in a transaction lives on, and SQL may name it (asyncpg's
  // MOVE): on a PostgreSQL backend it becomes a cursor of that name. Only
  // queries can be cursors; a name over 63 bytes would be cut by the lexer,
  // and one with quotes or dollars stays emulated.
  if (portal.empty() || portal.size() > 63 || !plain_name(portal) ||
      !session_->pool().pg_native() || !session_->backend() || !session_->in_transaction() ||
      !to_backend(p.cls) || p.blank) {
    return false;
  }
  auto w = sql::leading_words(p.sql, sql::Dialect::postgres, 1);
  return !w.empty() && (w[0] == "SELECT" || w[0] == "VALUES" || w[0] == "TABLE");
}

bool PgClient::next_is_sync() const {
  auto rest = in_.view().subspan(std::min<size_t>(unconsumed_, in_.size()));
  return !rest.empty() && rest[0] == 'S';
}

bool PgClient::sync_follows() {
  // Clients often send the Sync right behind the Execute in a second write:
  // one read that does not wait saves the implicit transaction's round trips.
  if (in_.size() <= unconsumed_ && !read_now()) return false;
  return next_is_sync();
}

PgClient::Extended& PgClient::ext() {
  if (!ext_) ext_ = std::make_unique<Extended>();
  return *ext_;
}

std::string PgClient::cache_key(const std::string& sql, const std::vector<uint32_t>& oids) const {
  std::string key = sql;
  key += '\0';
  for (auto o : oids) {
    key += std::to_string(o);
    key += ',';
  }
  return key;
}

awaitable<void> PgClient::on_parse(const pg::Parse& m) {
  if (skip_until_sync_) co_return;
  std::string name(m.name);
  if (!name.empty() && ext().statements.count(name)) {
    send_error("42P05", "prepared statement \"" + name + "\" already exists");
    skip_until_sync_ = true;
    co_return;
  }
  auto dialect = session_->pool().dialect();
  auto pieces = sql::split_statements(
      m.sql, dialect, dialect == sql::Dialect::postgres && session_->settings().backslash_quotes());
  if (pieces.size() > 1) {
    send_error("42601", "cannot insert multiple commands into a prepared statement");
    skip_until_sync_ = true;
    co_return;
  }
  auto p = std::make_shared<Prepared>();
  p->sql = pieces.empty() ? std::string() : std::string(pieces[0]);
  p->param_oids = m.param_types;
  p->blank = pieces.empty();
  p->cls = classify(p->sql, dialect, session_->pool().backend_keeps_settings());
  if (to_backend(p->cls)) {
    std::string rewritten;
    const std::string_view sql = pg_sql_for_backend(*session_, p->sql, rewritten);
    if (sql.data() != p->sql.data()) p->sql = std::move(rewritten);
  }
  p->key = cache_key(p->sql, p->param_oids);
  p->nparams = p->param_oids.size();
  if (session_->pool().pg_native() && session_->mode() != config::PoolMode::session) {
    p->effects = sql::session_effects(p->sql, session_->settings().backslash_quotes());
  } else if (session_->pool().pg_native()) {
    auto w = sql::leading_words(p->sql, sql::Dialect::postgres, 1);
    listening_ = listening_ || (!w.empty() && w[0] == "LISTEN");
  }
  if (p->cls.kind == StatementKind::setting) {
    if (auto parsed = parse_setting_command(p->sql)) {
      if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
        if (auto* show = std::get_if<ShowCommand>(cmd)) p->show_name = show->name;
      }
    }
  }
  // Prepared now, so errors come back at Parse as in PostgreSQL, except for a
  // Parse followed only by Sync while the session holds no backend: that is a
  // client waiting for ParseComplete synchronously (libpq's PQprepare, as
  // pgbench -M prepared does). If its other connections hold every backend in
  // open transactions, waiting for one would deadlock with them until
  // acquire_timeout; so it is answered at once and prepared on first use.
  p->described = !to_backend(p->cls) || p->blank;
  bool defer = false;
  if (!p->described && !session_->backend() && next_is_sync()) {
    (void)session_->try_backend_now();  // an idle backend: prepared now, errors at Parse
    defer = !session_->backend();
  }
  if (!p->described && !defer && !co_await describe(*p)) co_return;
  ext().statements[name] = std::move(p);
  pg::Encoder(out_).parse_complete();
}

awaitable<bool> PgClient::describe(Prepared& p) {
  if (p.described) co_return true;
  co_await park_portals();
  if (auto err = co_await session_->ensure_backend()) {
    send_error(*err);
    skip_until_sync_ = true;
    co_return false;
  }
  session_->prepare_begin();
  auto stmt = co_await session_->backend_statement(
      p.key, p.sql, param_hints(session_->pool().pg_native(), p.param_oids));
  session_->prepare_end();
  if (!stmt.ok()) {
    if (stmt.error().code != db::Errc::connection) {
      // A statement whose Parse was answered before it was prepared: the
      // server refused it, so, as in PostgreSQL, it does not exist.
      std::erase_if(ext().statements, [&p](const auto& e) { return e.second.get() == &p; });
    }
    co_await backend_error(stmt.take_error());
    skip_until_sync_ = true;
    co_return false;
  }
  auto params = stmt.value()->params();
  p.backend_params.assign(params.begin(), params.end());
  p.nparams = std::max(p.nparams, params.size());
  auto cols = stmt.value()->columns();
  p.columns.assign(cols.begin(), cols.end());
  p.described = true;
  co_return true;
}

awaitable<void> PgClient::on_bind(const pg::Bind& m) {
  if (skip_until_sync_) co_return;
  auto fail = [this](std::string_view state, std::string msg) {
    send_error(state, msg);
    skip_until_sync_ = true;
  };
  auto it = ext().statements.find(m.statement);
  if (it == ext().statements.end()) {
    fail("26000", "prepared statement \"" + std::string(m.statement) + "\" does not exist");
    co_return;
  }
  auto p = it->second;  // shared: kept even if the client closes it meanwhile
  if (!co_await describe(*p)) co_return;
  std::string portal_name(m.portal);
  if (auto existing = ext().portals.find(portal_name); existing != ext().portals.end()) {
    if (!portal_name.empty()) {
      fail("42P03", "portal \"" + portal_name + "\" already exists");
      co_return;
    }
    if (existing->second->open && existing->second->open->rows.is_open()) {
      auto* streamer = existing->second->open.get();
      co_await session_->run([streamer](Backend&) { return streamer->rows.close(); });
    }
    ext().portals.erase(existing);
  }
  auto portal = std::make_unique<Portal>();
  portal->stmt = p;
  portal->result_formats = m.result_formats;
  if (auto e = bind_params(m, *p, portal->params)) {
    fail(e->sqlstate, e->message);
    co_return;
  }
  if (cursor_portal(*p, portal_name)) {
    // Declared now: the plan is made at Bind, so its errors come here, as in
    // PostgreSQL.
    co_await park_portals();
    auto st = co_await session_->execute_text(
        "DECLARE " + quote_ident(portal_name) + " NO SCROLL CURSOR FOR " + p->sql, portal->params);
    if (!st.ok()) {
      co_await backend_error(st.take_error());
      skip_until_sync_ = true;
      co_return;
    }
    portal->cursor = true;
  }
  if (portal_name.empty() && !batch_refused_ && session_->pool().param_arrays() &&
      !session_->pool().pg_native()) {
    // `m` may point at bytes a read for the batch moves: nothing below uses it.
    const std::string statement_name(m.statement);
    const bool batched = co_await try_batch(p, statement_name, *portal);
    if (batched) co_return;
  }
  if (session_->pool().pg_native() && !portal->cursor) {
    bind_mark_ = BindMark{portal.get(), out_.size()};
  }
  ext().portals[portal_name] = std::move(portal);
  pg::Encoder(out_).bind_complete();
}

std::optional<db::Error> PgClient::bind_params(const pg::Bind& m, const Prepared& p,
                                               std::vector<db::Param>& out) const {
  auto error = [](std::string state, std::string msg) {
    db::Error e;
    e.sqlstate = std::move(state);
    e.message = std::move(msg);
    return e;
  };
  if (m.params.size() != p.nparams) {
    return error("08P01", "bind message supplies " + std::to_string(m.params.size()) +
                              " parameters, but prepared statement \"" + std::string(m.statement) +
                              "\" requires " + std::to_string(p.nparams));
  }
  if (m.param_formats.size() > 1 && m.param_formats.size() != m.params.size()) {
    return error("08P01", "bind message has " + std::to_string(m.param_formats.size()) +
                              " parameter formats but " + std::to_string(m.params.size()) +
                              " parameters");
  }
  out.clear();
  out.reserve(m.params.size());
  const bool native = session_->pool().pg_native();
  for (size_t i = 0; i < m.params.size(); ++i) {
    uint32_t oid = i < p.param_oids.size() ? p.param_oids[i] : 0;
    int16_t fmt = m.param_formats.empty()       ? 0
                  : m.param_formats.size() == 1 ? m.param_formats[0]
                                                : m.param_formats[i];
    if (native) {
      // PostgreSQL to PostgreSQL: the client's bytes, typed as the server chose.
      db::Param param;
      if (oid == 0 && i < p.backend_params.size()) oid = p.backend_params[i].native.pg_oid;
      param.pg_oid = oid;
      param.pg_format = fmt;
      if (m.params[i]) param.value = db::Value::bytes(std::string(*m.params[i]));
      out.push_back(std::move(param));
      continue;
    }
    auto decoded = pg::decode_param(m.params[i], oid, fmt);
    if (!decoded.ok()) {
      const auto& e = decoded.error();
      return error(e.sqlstate, e.message + " (parameter $" + std::to_string(i + 1) + ")");
    }
    db::Param param;
    param.value = std::move(decoded.value().value);
    param.untyped = decoded.value().untyped;
    if (param.untyped && oid == 0 && param.value.kind == db::Kind::Text &&
        param.value.str.size() >= 14) {
      // PgJDBC's setDate ("2024-01-02 +00", untyped, 14 characters or more): the
      // date PostgreSQL would store, a form every backend takes for a date (docs/reach.md).
      if (auto date = pg::date_of_zoned_date(param.value.str)) param.value.str = std::move(*date);
    }
    out.push_back(std::move(param));
  }
  return std::nullopt;
}

awaitable<void> PgClient::on_describe(const pg::Describe& m) {
  if (skip_until_sync_) co_return;
  pg::Encoder enc(out_);
  std::shared_ptr<Prepared> p;
  std::span<const int16_t> formats;
  if (m.kind == 'S') {
    auto it = ext().statements.find(m.name);
    if (it == ext().statements.end()) {
      send_error("26000", "prepared statement \"" + std::string(m.name) + "\" does not exist");
      skip_until_sync_ = true;
      co_return;
    }
    p = it->second;
    if (!co_await describe(*p)) co_return;
    std::vector<uint32_t> oids;
    const bool native = session_->pool().pg_native();
    for (size_t i = 0; i < p->nparams; ++i) {
      uint32_t oid = i < p->param_oids.size() ? p->param_oids[i] : 0;
      if (native && i < p->backend_params.size()) {
        oid = p->backend_params[i].native.pg_oid;  // the server's resolution
      } else if (oid == 0) {
        oid = i < p->backend_params.size() ? pg::wire_type_for(p->backend_params[i]).oid
                                           : pg::oid::kText;
      }
      oids.push_back(oid);
    }
    enc.parameter_description(oids);
  } else {
    auto it = ext().portals.find(m.name);
    if (it == ext().portals.end() && session_->pool().pg_native() && session_->backend()) {
      // Not bound through wirepool: a portal the client opened with SQL
      // (DECLARE … CURSOR) lives on its backend, which describes it.
      const std::string name(m.name);
      auto described = co_await session_->run(
          [&name](Backend& b) { return b.conn.impl()->describe_portal(name); });
      if (!described.ok()) {
        co_await backend_error(described.take_error());
        skip_until_sync_ = true;
        co_return;
      }
      std::vector<int16_t> cursor_formats;
      for (const auto& c : described.value())
        cursor_formats.push_back(c.native.pg_format);
      if (described->empty()) {
        enc.no_data();
      } else {
        describe_columns(described.value(), cursor_formats, true, out_);
      }
      co_return;
    }
    if (it == ext().portals.end()) {
      send_error("34000", "portal \"" + std::string(m.name) + "\" does not exist");
      skip_until_sync_ = true;
      co_return;
    }
    p = it->second->stmt;
    formats = it->second->result_formats;
  }
  if (!p->show_name.empty()) {
    std::vector<pg::FieldDescription> f(1);
    f[0].name = p->show_name;
    enc.row_description(f);
  } else if (p->columns.empty()) {
    enc.no_data();
  } else {
    describe_columns(p->columns, formats, session_->pool().pg_native(), out_);
  }
}

awaitable<void> PgClient::on_execute(const pg::Execute& m) {
  if (skip_until_sync_) co_return;
  auto it = ext().portals.find(m.portal);
  if (it == ext().portals.end()) {
    send_error("34000", "portal \"" + std::string(m.portal) + "\" does not exist");
    skip_until_sync_ = true;
    co_return;
  }
  Portal& portal = *it->second;
  if (bind_mark_ && bind_mark_->portal != &portal) bind_mark_.reset();
  const auto& p = *portal.stmt;
  if (p.blank) {
    pg::Encoder(out_).empty_query_response();
    co_return;
  }
  if (!to_backend(p.cls) || (session_->implicit() && is_transaction_control(p.cls))) {
    co_await park_portals(&portal);
    session_->statement_begin();
    bool ok = co_await session_statement(p.sql, p.cls, false);
    session_->statement_end();
    send_parameter_changes();
    if (!ok) skip_until_sync_ = true;
    co_return;
  }
  if (portal.cursor) {
    co_await fetch_cursor(portal, m.portal, m.max_rows);
    co_return;
  }
  if (portal.done) {
    pg::Encoder(out_).command_complete(command_tag({}, p.cls.verb, true, 0));
    co_return;
  }
  db::Error err;
  if (!portal.open) {
    co_await park_portals(&portal);
    session_->statement_begin();
    if (!co_await enter_block(p.cls)) {
      session_->statement_end();
      skip_until_sync_ = true;
      co_return;
    }
    std::unique_ptr<Streamer> s;
    const int64_t limit = m.max_rows > 0 ? m.max_rows : 0;
    Fetch first = Fetch::error;
    // A second pass only for read_only.route_statements: the standby refused
    // the routed Execute as a write before any row reached the client, the
    // primary runs it.
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) {
        spdlog::debug(
            "client {}: the standby refused a routed Execute ({}), it runs on the primary", peer_,
            err.sqlstate);
        route_mark_.reset();
        co_await session_->leave_standby();
        err = db::Error();
      }
      if (auto e = co_await session_->ensure_backend()) {
        send_error(*e);
        skip_until_sync_ = true;
        co_return;
      }
      // Prepared on demand: the backend serving this Execute may not be the one
      // that saw the Parse (transaction pooling).
      auto stmt = co_await session_->backend_statement(
          p.key, p.sql, param_hints(session_->pool().pg_native(), p.param_oids));
      if (!stmt.ok()) {
        co_await backend_error(stmt.take_error());
        skip_until_sync_ = true;
        co_return;
      }
      s = std::make_unique<Streamer>();
      db::Statement* statement = stmt.value();
      auto* streamer = s.get();
      streamer->native = session_->pool().pg_native();
      streamer->requested = portal.result_formats;
      const auto& params = portal.params;
      streamer->describe = false;  // Execute sends no RowDescription (Describe does)
      streamer->described = p.columns;
      db::QueryOptions options;
      options.native = streamer->native;
      options.formats = portal.result_formats;
      std::string* out = &out_;
      const size_t before = out_.size();
      // One hop to the executor for a small result: execution and rows together.
      first = co_await session_->run([&](Backend&) -> Fetch {
        return streamer->start([&] { return statement->query(params, options); }, *streamer, *out,
                               limit, err);
      });
      // Only a routed Execute may run again: it pumps here to see whether the
      // standby refused it; any other leaves the pumping to finish_execute
      // (one coroutine less per Execute).
      if (pass == 1 || !route_mark_ || !session_->routed_statement()) break;
      first = co_await pump_result(*streamer, *streamer, out_, limit, err, first);
      const bool retry = first == Fetch::error && streamer->sent == 0 && !session_->implicit() &&
                         out_.size() == before && retry_on_primary(err);
      if (!retry) break;
    }
    portal.open = std::move(s);
    co_await finish_execute(portal, p, limit, err, first);
    co_return;
  }
  portal.open->sent = 0;
  co_await finish_execute(portal, p, m.max_rows > 0 ? m.max_rows : 0, err, Fetch::more);
}

awaitable<void> PgClient::fetch_cursor(Portal& portal, std::string_view name, int32_t max_rows) {
  const Prepared& p = *portal.stmt;
  co_await park_portals(&portal);
  if (!session_->backend()) {
    send_error("34000", "portal \"" + std::string(name) + "\" does not exist");
    skip_until_sync_ = true;
    co_return;
  }
  const std::string sql =
      (max_rows > 0 ? "FETCH FORWARD " + std::to_string(max_rows) : std::string("FETCH ALL")) +
      " FROM " + quote_ident(name);
  Streamer s;
  s.native = true;
  s.requested = portal.result_formats;
  s.describe = false;  // Execute sends no RowDescription (Describe does)
  s.described = p.columns;
  db::QueryOptions options;
  options.native = true;
  options.formats = portal.result_formats;
  db::Error err;
  std::string* out = &out_;
  session_->statement_begin();
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    return s.start([&] { return b.conn.query(sql, {}, options); }, s, *out, 0, err);
  });
  Fetch f = co_await pump_result(s, s, out_, 0, err, first);
  session_->statement_end();
  if (f == Fetch::error) {
    co_await backend_error(std::move(err));
    skip_until_sync_ = true;
    co_return;
  }
  // PostgreSQL suspends a portal that gave all the rows asked for, even when
  // none are left; the Execute that finds fewer completes it.
  if (max_rows > 0 && s.sent == max_rows) {
    pg::Encoder(out_).portal_suspended();
  } else {
    pg::Encoder(out_).command_complete("SELECT " + std::to_string(s.sent));
  }
  session_->sync_tx_state();
  forward_events();
}

awaitable<bool> PgClient::enter_block(const Classified& cls) {
  // PostgreSQL runs the messages up to a Sync in one transaction: an error
  // rolls back what ran before it, and nothing commits before the Sync (nor
  // without one). Driver calls commit one by one, so the session opens a
  // transaction unless this statement is known to be the block's last.
  if (session_->implicit()) {
    if (cls.block == BlockRule::require) {
      send_error("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
      co_return false;
    }
    if (cls.block == BlockRule::warn) {
      send_notice("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
    }
    co_return true;
  }
  if (session_->in_transaction() || session_->mode() == config::PoolMode::statement ||
      is_transaction_control(cls) || cls.block == BlockRule::prevent ||
      cls.block == BlockRule::require || sync_follows()) {
    co_return true;
  }
  auto st = co_await session_->begin_implicit();
  if (!st.ok()) {
    co_await backend_error(st.take_error());
    co_return false;
  }
  if (cls.block == BlockRule::warn) {
    send_notice("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
  }
  co_return true;
}

awaitable<void> PgClient::finish_execute(Portal& portal, const Prepared& p, int64_t limit,
                                         db::Error& err, Fetch first) {
  Streamer& s = *portal.open;
  const auto mark = std::exchange(bind_mark_, std::nullopt);
  Fetch f = co_await pump_result(s, s, out_, limit, err, first);
  if (f == Fetch::error) {
    if (mark && mark->portal == &portal && s.sent == 0 && !s.suspended && err.before_bind &&
        out_.size() >= mark->at + 5 && out_[mark->at] == '2') {
      out_.resize(mark->at);  // BindComplete and what Describe answered: not sent
    }
    portal.open.reset();
    portal.done = true;
    session_->statement_end();
    co_await backend_error(std::move(err));
    skip_until_sync_ = true;
    co_return;
  }
  if (f == Fetch::limit) {
    s.suspended = true;
    pg::Encoder(out_).portal_suspended();
    co_return;
  }
  std::string tag = command_tag(s.info, p.cls.verb, s.has_columns, s.sent);
  // A query read in steps: PostgreSQL counts the rows of the last step only.
  if (s.suspended && tag.starts_with("SELECT ")) tag = "SELECT " + std::to_string(s.sent);
  pg::Encoder(out_).command_complete(tag);
  const bool native = s.native;
  portal.open.reset();  // `s` is gone from here on
  portal.done = true;
  session_->statement_end();
  session_->sync_tx_state();
  if (!p.effects.settings.empty()) session_->note_set(p.effects.settings);
  if (p.effects.opaque) session_->mark_dirty();
  if (native && (p.cls.verb == "SET" || p.cls.verb == "RESET")) {
    if (auto parsed = parse_setting_command(p.sql)) {
      if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
        if (auto* set = std::get_if<SetCommand>(cmd); set && !set->local) {
          session_->note_set({set->name});
        } else if (auto* reset = std::get_if<ResetCommand>(cmd); reset && reset->name != "all") {
          session_->note_set({reset->name});
        }
      }
    }
  }
  forward_events();
}

awaitable<void> PgClient::on_close(const pg::Close& m) {
  if (skip_until_sync_) co_return;
  std::string name(m.name);
  if (m.kind == 'S') {
    ext().statements.erase(name);
  } else if (auto it = ext().portals.find(name); it != ext().portals.end()) {
    if (it->second->cursor && session_->backend() &&
        session_->tx_state() == db::TxState::in_transaction) {
      // Closed unless SQL closed it already (which Close does not mind, but
      // CLOSE would fail the transaction over).
      const std::string lit = "'" + name + "'";  // plain_name
      auto st = co_await session_->execute_text(
          "DO $wp$BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_cursors WHERE name = " + lit +
          ") THEN EXECUTE 'CLOSE ' || pg_catalog.quote_ident(" + lit + "); END IF; END$wp$");
      if (!st.ok()) {
        co_await backend_error(st.take_error());
        skip_until_sync_ = true;
        co_return;
      }
    }
    if (it->second->open && it->second->open->rows.is_open()) {
      auto* s = it->second->open.get();
      co_await session_->run([s](Backend&) { return s->rows.close(); });
    }
    ext().portals.erase(it);
  }
  pg::Encoder(out_).close_complete();
}

awaitable<void> PgClient::on_sync() {
  const bool failed = skip_until_sync_;
  skip_until_sync_ = false;
  batch_refused_ = false;
  session_->sync_tx_state();
  if (session_->implicit()) {
    // The block's implicit transaction ends here, and its portals with it.
    co_await close_portals();
    auto st = co_await session_->end_implicit(failed);
    if (!st.ok()) co_await backend_error(st.take_error());
  }
  co_await session_->settle_settings();
  forward_events();
  // Outside a transaction block, Sync ends the implicit transaction and with it
  // every portal.
  if (!session_->in_transaction()) co_await close_portals();
  if (!portals_open()) session_->statement_end();
  session_->release_if_idle(portals_open());
  ready_for_query();
}

bool PgClient::portals_open() const {
  if (!ext_) return false;
  for (const auto& [name, p] : ext_->portals) {
    if (p->open) return true;
  }
  return false;
}

awaitable<void> PgClient::park_portals(const Portal* keep) {
  if (!ext_ || !session_->backend()) co_return;
  const size_t cap = server_.config().server.max_message_size;
  for (auto& [name, p] : ext_->portals) {
    if (p.get() == keep || !p->open || !p->open->rows.is_open() || p->open->is_parked) continue;
    Streamer& s = *p->open;
    const int64_t sent = s.sent;
    s.flush_at = kFlushBytes;
    db::Error err;
    Fetch f = Fetch::more;
    while (f != Fetch::done && f != Fetch::error) {
      if (f == Fetch::flush) {
        s.flush_at = s.parked.size() + kFlushBytes;
        if (s.parked.size() > cap) {
          s.fail(make_error("54000", "the rest of portal \"" + name +
                                         "\" exceeds server.max_message_size, which "
                                         "wirepool buffers to run another statement meanwhile"));
        }
      }
      f = co_await session_->run([&](Backend&) { return s.fetch(s, s.parked, 0, err); });
    }
    // Served by later Executes, its end (or error) after the last row.
    s.flush_at = kFlushBytes;
    s.is_parked = true;
    s.sent = sent;
    s.phase = Streamer::Phase::rows;
  }
}

awaitable<void> PgClient::close_portals() {
  if (!ext_) co_return;
  if (portals_open() && session_->backend()) {
    co_await session_->run([this](Backend&) -> db::Status {
      for (auto& [name, p] : ext_->portals) {
        if (!p->open || !p->open->rows.is_open()) continue;
        auto st = p->open->rows.close();
        if (db::is_would_block(st)) return st;  // repeated: closed ones are skipped
      }
      return {};
    });
  }
  ext_->portals.clear();
}

}  // namespace wirepool::server
