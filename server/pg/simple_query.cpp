// PgClient: the simple query protocol (Query), split into statements or
// passed whole to a PostgreSQL backend.

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
#include <optional>

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

awaitable<void> PgClient::simple_query(std::string_view text) {
  // As in PostgreSQL, a simple query drops the unnamed portal; named ones
  // stay (their transaction may go on).
  if (ext_) {
    if (auto it = ext_->portals.find(""); it != ext_->portals.end()) {
      if (it->second->open && it->second->open->rows.is_open()) {
        auto* streamer = it->second->open.get();
        co_await session_->run([streamer](Backend&) { return streamer->rows.close(); });
      }
      ext_->portals.erase(it);
    }
  }
  co_await park_portals();
  if (session_->pool().pg_native()) {
    co_await native_simple_query(text);
    co_return;
  }
  auto dialect = session_->pool().dialect();
  auto stmts = sql::split_statements(text, dialect);
  session_->statement_begin();
  bool failed = false;
  if (stmts.empty()) {
    pg::Encoder(out_).empty_query_response();
  } else if (stmts.size() == 1) {
    failed = !co_await simple_statement(
        stmts[0], classify(stmts[0], dialect, session_->pool().backend_keeps_settings()));
  } else {
    // Several statements outside a transaction run as one implicit transaction,
    // as in PostgreSQL: an error rolls back the ones before it. Statements that
    // control transactions themselves opt out.
    std::vector<Classified> cls;
    bool controls_tx = false;
    for (auto s : stmts) {
      cls.push_back(classify(s, dialect, session_->pool().backend_keeps_settings()));
      controls_tx = controls_tx || is_transaction_control(cls.back());
    }
    if (!controls_tx && !session_->in_transaction() &&
        session_->mode() != config::PoolMode::statement) {
      auto st = co_await session_->begin_implicit();
      if (!st.ok()) {
        co_await backend_error(st.take_error());
        stmts.clear();
      }
    }
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (!co_await simple_statement(stmts[i], cls[i])) {
        failed = true;
        break;
      }
    }
  }
  // A simple query ends the implicit transaction it ran in, its own or that
  // of extended-query messages before it, as a Sync would.
  auto ended = co_await session_->end_implicit(failed);
  if (!ended.ok() && !failed) co_await backend_error(ended.take_error());
  session_->statement_end();
  session_->sync_tx_state();
  session_->release_if_idle(portals_open());
  send_parameter_changes();
  ready_for_query();
}

awaitable<void> PgClient::native_simple_query(std::string_view text) {
  // PostgreSQL to PostgreSQL: the text goes through whole (one round trip; the
  // backend keeps its own implicit transaction, SET, SHOW and the rest); the
  // session layer only looks at the statements to keep what follows the client.
  auto stmts =
      sql::split_statements(text, sql::Dialect::postgres, session_->settings().backslash_quotes());
  // read_only.route_transactions: SET TRANSACTION READ ONLY first after a plain
  // BEGIN moves the transaction to a standby (asked before statement_begin).
  const bool move =
      session_->transaction_movable() && !stmts.empty() && sets_transaction_read_only(stmts[0]);
  session_->statement_begin();
  std::vector<Classified> cls;
  for (auto st : stmts)
    cls.push_back(classify(st, sql::Dialect::postgres, true));
  bool session_level = false;  // DEALLOCATE, DISCARD ALL
  bool listens = false;
  for (size_t i = 0; i < stmts.size(); ++i) {
    auto k = cls[i].kind;
    session_level = session_level || k == StatementKind::deallocate || k == StatementKind::discard;
    auto w = sql::leading_words(stmts[i], sql::Dialect::postgres, 1);
    listens = listens || (!w.empty() && w[0] == "LISTEN");
  }
  bool begins = false;
  for (const auto& c : cls)
    begins = begins || c.kind == StatementKind::begin;
  listening_ = listening_ || (listens && session_->mode() == config::PoolMode::session);
  if (begins && session_->implicit()) session_->make_explicit();
  bool resync = false;  // a RESET put a startup value back in the client's settings
  bool failed = false;
  std::optional<db::Error> lost;  // the move lost the client's transaction
  if (move) lost = co_await session_->move_to_reads();
  if (lost) {
    failed = true;
    co_await backend_error(std::move(*lost));
  } else if (stmts.empty()) {
    pg::Encoder(out_).empty_query_response();
  } else if (begins && session_->mode() == config::PoolMode::statement) {
    send_error("0A000", "transaction blocks are not allowed in statement pool mode (database \"" +
                            session_->pool().config().name + "\")");
  } else if (listens && session_->mode() != config::PoolMode::session) {
    // A notification would reach whichever client holds the backend later.
    send_error("0A000", "LISTEN needs a backend of its own: database \"" +
                            session_->pool().config().name + "\" is pooled in " +
                            std::string(config::to_string(session_->mode())) +
                            " mode; use a database entry in session mode");
  } else if (session_level && stmts.size() > 1) {
    send_error("0A000",
               "DEALLOCATE and DISCARD ALL must be sent on their own through wirepool, not "
               "with other statements in one query");
  } else if (session_level) {
    (void)co_await session_statement(stmts[0], cls[0], true);
  } else if (stmts.size() == 1 && is_copy_with_client(stmts[0])) {
    if (auto refused = co_await session_->ensure_backend()) {
      send_error(*refused);
    } else {
      std::string sql(stmts[0]);  // the message bytes are released before COPY data arrives
      co_await copy(sql);
    }
  } else if (auto refused = co_await session_->ensure_backend()) {
    send_error(*refused);
  } else {
    std::optional<Streamer> sp(std::in_place);  // in the frame: no allocation per query
    db::Error err;
    Fetch f = co_await run_native(text, *sp, err);
    std::optional<db::Error> refused_again;
    if (f == Fetch::error && retry_on_primary(err)) {
      // read_only.route_statements: the standby refused a write the words did
      // not show (a function's); nothing reached the client, the primary runs it.
      spdlog::debug("client {}: the standby refused a routed query ({}), it runs on the primary",
                    peer_, err.sqlstate);
      out_.resize(static_cast<size_t>(*route_mark_ - out_sent_));
      route_mark_.reset();
      co_await session_->leave_standby();
      sp.emplace();
      err = db::Error();
      refused_again = co_await session_->ensure_backend();
      if (!refused_again) f = co_await run_native(text, *sp, err);
    }
    Streamer& s = *sp;
    // SET / RESET that ran: read back what the backend holds once its
    // transaction is over.
    std::vector<std::string> touched;
    for (size_t i = 0; i < s.tags.size() && i < stmts.size(); ++i) {
      if (s.tags[i] != "SET" && s.tags[i] != "RESET") continue;
      if (auto parsed = parse_setting_command(stmts[i])) {
        if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
          if (auto* set = std::get_if<SetCommand>(cmd); set && !set->local) {
            touched.push_back(set->name);
          } else if (auto* reset = std::get_if<ResetCommand>(cmd)) {
            if (reset->name == "all") {
              session_->settings().reset_all();
              // The backend reset to its own defaults: the client's startup
              // settings must go back on it.
              session_->backend()->settings_unknown = true;
            } else if (session_->tx_state() == db::TxState::idle) {
              // RESET returns to the client's startup value, as PostgreSQL
              // keeps it; the backend got that value as a SET and now holds
              // its own default: the value goes back on it below.
              (void)session_->settings().reset(reset->name);
              std::erase_if(session_->backend()->applied_settings,
                            [&](const auto& kv) { return kv.first == reset->name; });
              resync = true;
            } else {
              touched.push_back(reset->name);
            }
          }
        }
      }
    }
    if (session_->mode() != config::PoolMode::session) {
      // What the statements did beyond SET: settings to follow, or state only
      // a reset undoes.
      auto effects = sql::session_effects(text, session_->settings().backslash_quotes());
      touched.insert(touched.end(), effects.settings.begin(), effects.settings.end());
      if (effects.opaque) session_->mark_dirty();
    }
    if (!touched.empty()) session_->note_set(std::move(touched));
    failed = f == Fetch::error || refused_again;
    if (refused_again) {
      send_error(*refused_again);
    } else if (failed) {
      co_await backend_error(std::move(err));
    }
    forward_events();
  }
  // Extended-query messages before this query opened an implicit transaction:
  // the query ends it, as a Sync would.
  auto ended = co_await session_->end_implicit(failed);
  if (!ended.ok() && !failed) co_await backend_error(ended.take_error());
  if (session_->backend()) co_await session_->settle_settings();
  session_->statement_end();
  session_->sync_tx_state();
  if (session_->backend() && (session_->backend()->settings_unknown || resync) &&
      !session_->in_transaction()) {
    (void)co_await session_->sync_settings();
  }
  // A transaction that ended took its portals with it (cursors among them).
  if (!session_->in_transaction()) co_await close_portals();
  session_->release_if_idle(portals_open());
  forward_events();
  ready_for_query();
}

awaitable<PgClient::Fetch> PgClient::run_native(std::string_view text, Streamer& s,
                                                db::Error& err) {
  s.native = true;
  s.multi = true;
  std::string* out = &out_;
  db::QueryOptions options;
  options.native = true;
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    return s.start([&] { return b.conn.query(text, {}, options); }, s, *out, 0, err);
  });
  co_return co_await pump_result(s, s, out_, 0, err, first);
}

bool PgClient::retry_on_primary(const db::Error& err) const {
  return route_mark_ && session_->routed_statement() && err.sqlstate == "25006" &&
         out_sent_ <= *route_mark_ && out_sent_ + out_.size() >= *route_mark_;
}

void PgClient::forward_events() {
  auto ev = session_->take_events();
  if (!ev) return;
  pg::Encoder enc(out_);
  for (const auto& n : ev->notices) {
    pg::ErrorFields f;
    f.severity = n.severity.empty() ? "NOTICE" : std::string_view(n.severity);
    f.sqlstate = n.sqlstate.size() == 5 ? std::string_view(n.sqlstate) : "00000";
    f.message = n.message;
    f.detail = n.detail;
    f.hint = n.hint;
    f.more = n.fields;
    enc.notice_response(f);
  }
  for (const auto& p : ev->parameters)
    enc.parameter_status(p.name, p.value);
  for (const auto& n : ev->notifications) {
    enc.notification_response(n.pid, n.channel, n.payload);
  }
}

awaitable<bool> PgClient::simple_statement(std::string_view stmt, const Classified& cls) {
  if (cls.kind != StatementKind::backend) {
    co_return co_await session_statement(stmt, cls, true);
  }
  if (auto err = co_await session_->ensure_backend()) {
    send_error(*err);
    co_return false;
  }
  Streamer s;
  db::Error err;
  std::string* out = &out_;
  const db::QueryOptions text_results;
  std::string rewritten;
  const std::string_view sql = pg_sql_for_backend(*session_, stmt, rewritten);
  // One hop to the executor for a small result: query and rows together.
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    return s.start([&] { return b.conn.query(sql, {}, text_results); }, s, *out, 0, err);
  });
  Fetch f = co_await pump_result(s, s, out_, 0, err, first);
  if (f == Fetch::error) {
    co_await backend_error(std::move(err));
    co_return false;
  }
  pg::Encoder(out_).command_complete(command_tag(s.info, cls.verb, s.has_columns, s.sent));
  co_return true;
}

}  // namespace wirepool::server
