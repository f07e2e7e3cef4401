// Statement routing for the session layer (statement.hpp).
#include "session/statement.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

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

namespace {

/// Which transaction statement `stmt` is, by its leading words.
enum class TxOpener : uint8_t { none, begin, set_transaction };

TxOpener tx_opener(std::string_view stmt) {
  const auto w = sql::leading_words(stmt, sql::Dialect::postgres, 3);
  if (w.empty()) return TxOpener::none;
  if (w[0] == "BEGIN" || (w[0] == "START" && w.size() >= 2 && w[1] == "TRANSACTION")) {
    return TxOpener::begin;
  }
  // SET [LOCAL | SESSION] TRANSACTION modes (SET SESSION CHARACTERISTICS is
  // the session's default, followed as default_transaction_read_only).
  if (w[0] == "SET" && w.size() >= 2 &&
      (w[1] == "TRANSACTION" ||
       ((w[1] == "LOCAL" || w[1] == "SESSION") && w.size() == 3 && w[2] == "TRANSACTION"))) {
    return TxOpener::set_transaction;
  }
  return TxOpener::none;
}

struct TxModes {
  bool read_only = false;
  bool serializable = false;  ///< a standby refuses it (hot standby)
};

/// `w` is the keyword `kw` (upper case) in any case.
bool same_word(std::string_view w, std::string_view kw) {
  return w.size() == kw.size() && std::equal(w.begin(), w.end(), kw.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == y;
         });
}

/// The modes a transaction statement names, from its tokens. The tokens skip
/// comments, so a comment cannot route a transaction.
TxModes tx_modes(std::string_view stmt, const std::vector<sql::PgToken>& toks) {
  TxModes m;
  bool after_read = false;
  for (const auto& t : toks) {
    const std::string_view w = stmt.substr(t.begin, t.end - t.begin);
    const bool word = t.kind == sql::PgToken::Kind::word;
    if (word && after_read && same_word(w, "ONLY")) m.read_only = true;
    if (word && same_word(w, "SERIALIZABLE")) m.serializable = true;
    after_read = word && same_word(w, "READ");
  }
  return m;
}

TxModes tx_modes(std::string_view stmt) {
  return tx_modes(stmt, sql::pg_client_tokens(stmt, sql::Dialect::postgres));
}

/// A value PostgreSQL's parse_bool reads as true: on, 1, or a prefix of true
/// or yes, in any case (a word, a number or a string literal's value).
bool true_value(std::string_view v) {
  auto prefix_of = [&v](std::string_view full) {
    return !v.empty() && v.size() <= full.size() && same_word(v, full.substr(0, v.size()));
  };
  return v == "1" || same_word(v, "ON") || prefix_of("TRUE") || prefix_of("YES");
}

/// The forms of transaction_read_only = on that the token walk reads exactly:
///   SET [LOCAL | SESSION] transaction_read_only { = | TO } <true>
///   SELECT set_config('transaction_read_only', '<true>', { true | false })
/// Anything else (DEFAULT, an expression, a quoted name) is not one.
bool sets_read_only_variable(std::string_view stmt, const std::vector<sql::PgToken>& toks) {
  using K = sql::PgToken::Kind;
  size_t n = toks.size();
  while (n > 0 && toks[n - 1].kind == K::semicolon)
    --n;
  auto text = [&](size_t i) { return stmt.substr(toks[i].begin, toks[i].end - toks[i].begin); };
  auto word = [&](size_t i, std::string_view kw) {
    return i < n && toks[i].kind == K::word && same_word(text(i), kw);
  };
  auto value = [&](size_t i) -> std::string {
    if (toks[i].kind == K::string) return sql::pg_string_value(text(i));
    if (toks[i].kind == K::word || toks[i].kind == K::number) return std::string(text(i));
    return {};
  };
  if (word(0, "SET")) {
    const size_t name = word(1, "LOCAL") || word(1, "SESSION") ? 2 : 1;
    return n == name + 3 && word(name, "TRANSACTION_READ_ONLY") &&
           ((toks[name + 1].kind == K::other && text(name + 1) == "=") || word(name + 1, "TO")) &&
           toks[name + 2].kind != K::other && true_value(value(name + 2));
  }
  return n == 9 && word(0, "SELECT") && word(1, "SET_CONFIG") && toks[2].kind == K::lparen &&
         toks[3].kind == K::string &&
         same_word(sql::pg_string_value(text(3)), "TRANSACTION_READ_ONLY") &&
         toks[4].kind == K::comma && toks[5].kind == K::string && true_value(value(5)) &&
         toks[6].kind == K::comma && (word(7, "TRUE") || word(7, "FALSE")) &&
         toks[8].kind == K::rparen;
}

}  // namespace

bool begins_read_only(std::string_view text, bool backslash_quotes) {
  auto stmts = sql::split_statements(text, sql::Dialect::postgres, backslash_quotes);
  if (stmts.empty() || tx_opener(stmts[0]) != TxOpener::begin) return false;
  const TxModes m = tx_modes(stmts[0]);
  if (m.serializable) return false;  // a hot standby refuses SERIALIZABLE
  if (m.read_only) return true;
  // BEGIN; SET TRANSACTION READ ONLY: set before the transaction's first query.
  return stmts.size() > 1 && sets_transaction_read_only(stmts[1]);
}

bool sets_transaction_read_only(std::string_view stmt) {
  const auto toks = sql::pg_client_tokens(stmt, sql::Dialect::postgres);
  if (tx_opener(stmt) != TxOpener::set_transaction) return sets_read_only_variable(stmt, toks);
  const TxModes m = tx_modes(stmt, toks);
  return m.read_only && !m.serializable;
}

bool begins_movable(std::string_view text, bool backslash_quotes) {
  auto stmts = sql::split_statements(text, sql::Dialect::postgres, backslash_quotes);
  if (stmts.size() != 1 || tx_opener(stmts[0]) != TxOpener::begin) return false;
  const TxModes m = tx_modes(stmts[0]);
  return !m.read_only && !m.serializable;
}

bool reads_only(std::string_view text, bool backslash_quotes) {
  if (backslash_quotes) return false;
  const auto stmts = sql::split_statements(text, sql::Dialect::postgres, false);
  if (stmts.empty()) return false;
  auto upper = [](std::string_view w) {
    std::string u(w);
    for (auto& ch : u)
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return u;
  };
  for (const auto st : stmts) {
    const auto toks = sql::pg_client_tokens(st, sql::Dialect::postgres);
    if (toks.empty() || toks[0].kind != sql::PgToken::Kind::word) return false;
    const std::string first = upper(st.substr(toks[0].begin, toks[0].end - toks[0].begin));
    if (first != "SELECT" && first != "VALUES" && first != "TABLE" && first != "WITH") {
      return false;
    }
    for (const auto& t : toks) {
      if (t.kind != sql::PgToken::Kind::word) continue;
      const std::string w = upper(st.substr(t.begin, t.end - t.begin));
      // Writes, row locks (FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE), SELECT INTO.
      if (w == "INSERT" || w == "UPDATE" || w == "DELETE" || w == "MERGE" || w == "SHARE" ||
          w == "INTO" || w == "LISTEN" || w == "NOTIFY") {
        return false;
      }
      // Functions that write, lock or set state on whichever server runs them.
      if (w == "NEXTVAL" || w == "SETVAL" || w == "SET_CONFIG" || w == "PG_NOTIFY" ||
          w.starts_with("PG_ADVISORY") || w.starts_with("PG_TRY_ADVISORY") ||
          w.starts_with("LO_") || w == "TXID_CURRENT" || w == "PG_CURRENT_XACT_ID") {
        return false;
      }
    }
  }
  return true;
}

}  // namespace wirepool::server
