// PgClient: the statements the session layer answers itself (transaction
// control, SET / RESET / SHOW, DISCARD, DEALLOCATE, LISTEN ...).

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

#include "protocol/pg/scram.hpp"
#include "server/admin.hpp"
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

/// The next word of `rest` (up to a space or ';'), taken off it.
std::string_view next_word(std::string_view& rest) {
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) {
    rest.remove_prefix(1);
  }
  size_t n = 0;
  while (n < rest.size() && !std::isspace(static_cast<unsigned char>(rest[n])) && rest[n] != ';') {
    ++n;
  }
  std::string_view w = rest.substr(0, n);
  rest.remove_prefix(n);
  return w;
}

/// `a` equals the upper-case word `b`, whatever `a`'s case.
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == y;
         });
}

}  // namespace

awaitable<bool> PgClient::session_statement(std::string_view stmt, const Classified& cls,
                                            bool describe_rows) {
  switch (cls.kind) {
    case StatementKind::begin:
      co_return co_await begin_statement(stmt, cls);
    case StatementKind::commit:
    case StatementKind::rollback:
      co_return co_await end_statement(cls.kind == StatementKind::commit);
    case StatementKind::setting:
      co_return setting_statement(stmt, describe_rows);
    case StatementKind::discard:
      co_return co_await discard_statement(stmt);
    case StatementKind::deallocate:
      co_return deallocate_statement(stmt);
    case StatementKind::listen: {
      send_error("0A000", "LISTEN/NOTIFY is not supported by the " +
                              session_->pool().config().driver + " backend of database \"" +
                              session_->pool().config().name + "\"");
      co_return false;
    }
    case StatementKind::backend:
      break;
  }
  co_return false;
}

awaitable<bool> PgClient::begin_statement(std::string_view stmt, const Classified& cls) {
  pg::Encoder enc(out_);
  if (session_->implicit()) {
    session_->make_explicit();  // as PostgreSQL: silently, with what ran before it
  } else if (session_->in_transaction()) {
    send_notice("25001", "there is already a transaction in progress");
  } else {
    auto st = co_await session_->begin(stmt);
    if (!st.ok()) {
      co_await backend_error(st.take_error());
      co_return false;
    }
  }
  enc.command_complete(cls.verb == "START TRANSACTION" ? "START TRANSACTION" : "BEGIN");
  co_return true;
}

awaitable<bool> PgClient::end_statement(bool commit) {
  pg::Encoder enc(out_);
  if (session_->implicit()) {
    // PostgreSQL warns, then ends the block's transaction all the same.
    send_notice("25P01", "there is no transaction in progress");
    session_->make_explicit();
  }
  if (!session_->in_transaction()) {
    send_notice("25P01", "there is no transaction in progress");
  } else {
    co_await close_portals();
    bool failed_tx = session_->tx_state() == db::TxState::failed;
    db::Status st;  // if/else, not ?: around co_await (GCC 12)
    if (commit) {
      st = co_await session_->commit();
    } else {
      st = co_await session_->rollback();
    }
    session_->sync_tx_state();
    if (!st.ok()) {
      co_await backend_error(st.take_error());
      co_return false;
    }
    if (commit && failed_tx) {
      enc.command_complete("ROLLBACK");
      co_return true;
    }
  }
  enc.command_complete(commit ? "COMMIT" : "ROLLBACK");
  co_return true;
}

bool PgClient::setting_statement(std::string_view stmt, bool describe_rows) {
  pg::Encoder enc(out_);
  auto parsed = parse_setting_command(stmt);
  if (!parsed) {
    send_error("42601", "syntax error");
    return false;
  }
  if (auto* e = std::get_if<SettingError>(&*parsed)) {
    send_error(e->sqlstate, e->message);
    return false;
  }
  auto& cmd = std::get<SettingCommand>(*parsed);
  if (auto* set = std::get_if<SetCommand>(&cmd);
      set && (set->name == "role" || set->name == "session_authorization")) {
    // This backend has no roles to switch to.
    send_error("0A000", set->name == "role"
                            ? "SET ROLE is not supported by wirepool"
                            : "SET SESSION AUTHORIZATION is not supported by wirepool");
    return false;
  }
  auto& settings = session_->settings();
  std::optional<SettingError> err;
  std::string tag;
  std::visit(overloaded{
                 [&](const SetCommand& c) {
                   tag = "SET";
                   if (c.local && !session_->in_transaction()) {
                     // PostgreSQL: a warning, and no effect.
                     send_notice("25P01", "SET LOCAL can only be used in transaction blocks");
                   } else if (c.local) {
                     err = settings.set_local(c.name, c.value.value_or(""));
                     if (!c.value) err = settings.reset(c.name);
                   } else {
                     err = c.value ? settings.set(c.name, *c.value) : settings.reset(c.name);
                   }
                 },
                 [&](const ResetCommand& c) {
                   if (c.name == "all")
                     settings.reset_all();
                   else
                     err = settings.reset(c.name);
                   tag = "RESET";
                 },
                 [&](const ShowCommand& c) {
                   tag = "SHOW";
                   std::vector<std::pair<std::string, std::string>> rows;
                   if (c.name == "all") {
                     rows = settings.all();
                   } else if (auto v = settings.get(c.name)) {
                     rows.emplace_back(c.name, *v);
                   } else {
                     err = SettingError{"42704",
                                        "unrecognized configuration parameter \"" + c.name + "\""};
                     return;
                   }
                   std::vector<pg::FieldDescription> fields;
                   if (c.name == "all") {
                     fields.resize(3);
                     fields[0].name = "name";
                     fields[1].name = "setting";
                     fields[2].name = "description";
                   } else {
                     fields.resize(1);
                     fields[0].name = c.name;
                   }
                   if (describe_rows) enc.row_description(fields);
                   for (auto& [name, value] : rows) {
                     enc.begin_data_row(static_cast<int16_t>(fields.size()));
                     if (c.name == "all") {
                       enc.field(name);
                       enc.field(value);
                       enc.field("");
                     } else {
                       enc.field(value);
                     }
                     enc.end_data_row();
                   }
                 },
                 [&](const IgnoredSet&) { tag = "SET"; },
             },
             cmd);
  if (err) {
    send_error(err->sqlstate, err->message);
    return false;
  }
  enc.command_complete(tag);
  return true;
}

awaitable<bool> PgClient::discard_statement(std::string_view stmt) {
  pg::Encoder enc(out_);
  auto words = sql::leading_words(stmt, session_->pool().dialect(), 2);
  std::string what = words.size() > 1 ? words[1] : "";
  if (what == "ALL") {
    if (session_->in_transaction()) {
      send_error("25001", "DISCARD ALL cannot run inside a transaction block");
      co_return false;
    }
    session_->settings().reset_all();
    co_await close_portals();
    ext().portals.clear();
    ext().statements.clear();
    if (session_->pool().pg_native() && session_->mode() == config::PoolMode::session &&
        session_->backend()) {
      // The backend is this client's alone: it gets the DISCARD ALL too
      // (temporary tables, advisory locks, LISTEN), then the client's
      // startup settings back.
      Backend* b = session_->backend();
      auto st = co_await session_->execute_text("DISCARD ALL");
      b->statements.forget();
      b->applied_settings.clear();
      b->applied_session = 0;
      if (st.ok()) st = co_await session_->sync_settings();
      if (!st.ok()) {
        co_await backend_error(st.take_error());
        co_return false;
      }
    }
  } else if (what != "PLANS" && what != "SEQUENCES" && what != "TEMP" && what != "TEMPORARY") {
    send_error("42601", "syntax error at or near \"" + what + "\"");
    co_return false;
  }
  enc.command_complete(what == "TEMPORARY" ? "DISCARD TEMP" : "DISCARD " + what);
  co_return true;
}

bool PgClient::deallocate_statement(std::string_view stmt) {
  pg::Encoder enc(out_);
  // DEALLOCATE [PREPARE] { name | ALL }; the name keeps its case and quotes.
  std::string_view rest = stmt;
  next_word(rest);  // DEALLOCATE
  std::string_view name = next_word(rest);
  if (iequals(name, "PREPARE")) name = next_word(rest);
  if (iequals(name, "ALL")) {
    ext().statements.clear();
  } else {
    std::string n(name);
    if (n.size() >= 2 && n.front() == '"' && n.back() == '"') {
      n = n.substr(1, n.size() - 2);
    } else {
      std::transform(n.begin(), n.end(), n.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    if (ext().statements.erase(n) == 0) {
      send_error("26000", "prepared statement \"" + n + "\" does not exist");
      return false;
    }
  }
  enc.command_complete(iequals(name, "ALL") ? "DEALLOCATE ALL" : "DEALLOCATE");
  return true;
}

}  // namespace wirepool::server
