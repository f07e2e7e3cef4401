// Statement routing for the session layer (statement.hpp).
#include "session/statement.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "sql/lexer.hpp"
#include "sql/pg_tokens.hpp"

namespace wirepool::server {

namespace {

/// Where the session layer runs a statement of kind `k`. Prepared statement
/// names are the session's own (a backend knows them under other names), and
/// DISCARD ALL resets what the session keeps: both stay with the session layer
/// even for backends that keep their own settings.
StatementKind route(sql::StatementKind k, bool backend_keeps_settings) {
  using K = sql::StatementKind;
  switch (k) {
    case K::begin:
      return StatementKind::begin;
    case K::commit:
      return StatementKind::commit;
    case K::rollback:
      return StatementKind::rollback;
    case K::deallocate:
      return StatementKind::deallocate;
    case K::discard_all:
      return StatementKind::discard;
    case K::set:
    case K::reset:
    case K::show:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::setting;
    case K::discard:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::discard;
    case K::listen:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::listen;
    case K::other:
      break;
  }
  return StatementKind::backend;
}

}  // namespace

Classified classify(std::string_view stmt, sql::Dialect dialect, bool backend_keeps_settings) {
  auto info = sql::classify(stmt, dialect);
  Classified c;
  c.kind = route(info.kind, backend_keeps_settings);
  c.verb = std::move(info.verb);
  c.block = info.block;
  c.block_name = info.block_name;
  return c;
}

bool begins_read_only(std::string_view text, bool backslash_quotes) {
  auto stmts = sql::split_statements(text, sql::Dialect::postgres, backslash_quotes);
  if (stmts.empty()) return false;
  const auto verb = sql::leading_words(stmts[0], sql::Dialect::postgres, 2);
  if (verb.empty()) return false;
  if (verb[0] != "BEGIN" && !(verb[0] == "START" && verb.size() == 2 && verb[1] == "TRANSACTION")) {
    return false;
  }
  // The modes are keywords separated by commas: READ ONLY among them. The
  // tokens skip comments, so a comment cannot route a transaction.
  bool after_read = false;
  for (const auto& t : sql::pg_client_tokens(stmts[0], sql::Dialect::postgres)) {
    const std::string_view w = std::string_view(stmts[0]).substr(t.begin, t.end - t.begin);
    auto is = [&w](std::string_view kw) {
      return w.size() == kw.size() &&
             std::equal(w.begin(), w.end(), kw.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) == y;
             });
    };
    const bool word = t.kind == sql::PgToken::Kind::word;
    if (word && after_read && is("ONLY")) return true;
    after_read = word && is("READ");
  }
  return false;
}

}  // namespace wirepool::server
