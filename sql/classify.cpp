#include "sql/classify.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <span>
#include <utility>
#include <vector>

namespace wirepool::sql {

namespace {

/// PostgreSQL's rule for a statement outside a transaction block, from its
/// leading words (PreventInTransactionBlock, RequireTransactionBlock and
/// WarnNoTransactionBlock in PostgreSQL's sources).
/// The first words of a statement as written (sql::leading_words' views).
using WordViews = std::span<const std::string_view>;

void block_rule(std::string_view stmt, WordViews words, StatementInfo& c) {
  auto is = [&words](size_t i, std::string_view w) {
    return words.size() > i && iequals_upper(words[i], w);
  };
  auto rule = [&c](BlockRule r, const char* name) {
    c.block = r;
    c.block_name = name;
  };
  auto w0 = [&is](std::string_view w) { return is(0, w); };
  if (w0("SAVEPOINT")) {
    rule(BlockRule::require, "SAVEPOINT");
  } else if (w0("RELEASE")) {
    rule(BlockRule::require, "RELEASE SAVEPOINT");
  } else if ((w0("ROLLBACK") || w0("ABORT")) &&
             (is(1, "TO") || ((is(1, "WORK") || is(1, "TRANSACTION")) && is(2, "TO")))) {
    rule(BlockRule::require, "ROLLBACK TO SAVEPOINT");
  } else if (w0("LOCK")) {
    rule(BlockRule::require, "LOCK TABLE");
  } else if (w0("DECLARE")) {
    // A cursor WITH HOLD outlives its transaction; others need a block.
    auto more = leading_words(stmt, Dialect::postgres, 10);
    bool hold = false;
    for (size_t i = 1; i + 1 < more.size() && more[i] != "FOR"; ++i) {
      hold = hold || (more[i] == "WITH" && more[i + 1] == "HOLD");
    }
    if (!hold) rule(BlockRule::require, "DECLARE CURSOR");
  } else if (w0("SET") && is(1, "LOCAL")) {
    rule(BlockRule::warn, "SET LOCAL");
  } else if (w0("SET") && is(1, "TRANSACTION")) {
    rule(BlockRule::warn, "SET TRANSACTION");
  } else if (w0("VACUUM") || (w0("ALTER") && is(1, "SYSTEM")) ||
             ((w0("CREATE") || w0("DROP")) &&
              (is(1, "DATABASE") || is(1, "TABLESPACE") || is(1, "SUBSCRIPTION"))) ||
             ((w0("COMMIT") || w0("ROLLBACK")) && is(1, "PREPARED")) ||
             (w0("CLUSTER") && words.size() == 1)) {
    rule(BlockRule::prevent, "");
  } else if (w0("CREATE") || w0("DROP") || w0("REINDEX")) {
    auto more = leading_words(stmt, Dialect::postgres, 5);
    for (const auto& w : more) {
      if (w == "CONCURRENTLY") rule(BlockRule::prevent, "");
    }
    if (w0("REINDEX") && (is(1, "DATABASE") || is(1, "SYSTEM"))) rule(BlockRule::prevent, "");
  }
}

/// SHOW forms MariaDB does not have: PostgreSQL's, answered by the session
/// layer on a mysql backend (docs/catalog.md); MariaDB's own SHOW goes to it.
bool pg_show(std::string_view w1) {
  static constexpr std::string_view kNames[] = {"TRANSACTION",
                                                "SERVER_VERSION",
                                                "SERVER_VERSION_NUM",
                                                "SERVER_ENCODING",
                                                "CLIENT_ENCODING",
                                                "DATESTYLE",
                                                "INTERVALSTYLE",
                                                "TIMEZONE",
                                                "SEARCH_PATH",
                                                "APPLICATION_NAME",
                                                "STANDARD_CONFORMING_STRINGS",
                                                "INTEGER_DATETIMES",
                                                "TRANSACTION_ISOLATION",
                                                "DEFAULT_TRANSACTION_ISOLATION",
                                                "STATEMENT_TIMEOUT",
                                                "LOCK_TIMEOUT",
                                                "EXTRA_FLOAT_DIGITS",
                                                "MAX_IDENTIFIER_LENGTH",
                                                "IS_SUPERUSER"};
  for (std::string_view n : kNames) {
    if (iequals_upper(w1, n)) return true;
  }
  return false;
}

StatementKind kind_of(WordViews words, Dialect d) {
  auto w0 = [&words](std::string_view w) { return iequals_upper(words[0], w); };
  auto w1 = [&words](std::string_view w) { return words.size() > 1 && iequals_upper(words[1], w); };
  if (w0("BEGIN") || (w0("START") && w1("TRANSACTION"))) return StatementKind::begin;
  if ((w0("COMMIT") || w0("END")) && !w1("PREPARED")) return StatementKind::commit;
  if (w0("ROLLBACK") || w0("ABORT")) {
    // ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] x and ROLLBACK PREPARED are the backend's.
    bool to = w1("TO") || (words.size() > 2 && iequals_upper(words[2], "TO"));
    return w1("PREPARED") || to ? StatementKind::other : StatementKind::rollback;
  }
  if (w0("DEALLOCATE")) return StatementKind::deallocate;
  if (w0("DISCARD")) return w1("ALL") ? StatementKind::discard_all : StatementKind::discard;
  if (w0("SET")) return StatementKind::set;
  if (w0("RESET")) return StatementKind::reset;
  if (w0("SHOW") && (d != Dialect::mysql || (words.size() > 1 && pg_show(words[1])))) {
    return StatementKind::show;
  }
  if (w0("LISTEN") || w0("UNLISTEN") || w0("NOTIFY")) return StatementKind::listen;
  return StatementKind::other;
}

/// command_verb() for the first words that name their verb alone (most
/// statements), without a second lexer pass; empty for the others.
std::string_view plain_verb(WordViews words) {
  static constexpr std::pair<std::string_view, std::string_view> kVerbs[] = {
      {"SELECT", "SELECT"}, {"INSERT", "INSERT"}, {"UPDATE", "UPDATE"}, {"DELETE", "DELETE"},
      {"VALUES", "SELECT"}, {"TABLE", "SELECT"},  {"BEGIN", "BEGIN"},   {"END", "COMMIT"},
  };
  for (const auto& [word, verb] : kVerbs) {
    if (iequals_upper(words[0], word)) return verb;
  }
  return {};
}

bool is_tran(std::string_view w) {
  return w == "tran" || w == "transaction" || w == "work";
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

StatementInfo classify(std::string_view stmt, Dialect d) {
  StatementInfo c;
  std::array<std::string_view, 3> first;
  const WordViews words(first.data(), leading_words(stmt, d, first));
  const std::string_view verb = words.empty() ? std::string_view() : plain_verb(words);
  c.verb = verb.empty() ? command_verb(stmt, d) : std::string(verb);
  if (words.empty()) return c;
  if (d == Dialect::postgres) block_rule(stmt, words, c);
  c.kind = kind_of(words, d);
  c.relay = relay_use(words[0]);
  return c;
}

RelayUse relay_use(std::string_view w) {
  static constexpr std::string_view kWords[] = {
      "SELECT", "INSERT", "UPDATE", "DELETE", "WITH",     "VALUES", "TABLE",     "EXPLAIN", "MERGE",
      "BEGIN",  "START",  "COMMIT", "END",    "ROLLBACK", "ABORT",  "SAVEPOINT", "RELEASE",
  };
  constexpr size_t kPlain = 9;  // the first ones
  for (size_t i = 0; i < std::size(kWords); ++i) {
    const auto k = kWords[i];
    if (w.size() == k.size() && std::equal(w.begin(), w.end(), k.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == b;
        })) {
      return i < kPlain ? RelayUse::plain : RelayUse::transaction;
    }
  }
  return RelayUse::no;
}

bool relay_may_send(std::string_view text, bool single, bool& plain, bool backslash_quotes) {
  // set_config() and advisory locks may outlive the transaction: the session
  // layer follows them (session_effects).
  if (mentions_session_functions(text)) return false;
  size_t end = text.size();
  while (end > 0 &&
         (std::isspace(static_cast<unsigned char>(text[end - 1])) || text[end - 1] == ';'))
    --end;
  std::string_view body = text.substr(0, end);
  if (body.empty()) return false;  // the empty query: the session layer answers it
  // The common case (one statement, no comment before it) is decided without the lexer.
  if (body.find(';') == std::string_view::npos) {
    size_t b = 0;
    while (b < body.size() && std::isspace(static_cast<unsigned char>(body[b])))
      ++b;
    size_t e = b;
    while (e < body.size() && std::isalpha(static_cast<unsigned char>(body[e])))
      ++e;
    if (e > b && (e == body.size() || !std::isalnum(static_cast<unsigned char>(body[e])))) {
      const RelayUse use = relay_use(body.substr(b, e - b));
      plain = plain && use == RelayUse::plain;
      return use != RelayUse::no;
    }
  }
  auto stmts = split_statements(text, Dialect::postgres, backslash_quotes);
  if (stmts.empty() || (single && stmts.size() != 1)) return false;
  for (auto st : stmts) {
    auto words = leading_words(st, Dialect::postgres, 1);
    const RelayUse use = words.empty() ? RelayUse::no : relay_use(words[0]);
    if (use == RelayUse::no) return false;
    plain = plain && use == RelayUse::plain;
  }
  return true;
}

TsqlStatementInfo classify_tsql(std::string_view stmt) {
  TsqlStatementInfo c;
  auto words = leading_words(stmt, Dialect::tsql, 3);
  if (words.empty()) return c;
  for (auto& w : words)
    w = lower(w);
  const std::string& w0 = words[0];
  const size_t n = words.size();
  if (w0 == "rollback" && n >= 3) {
    c.kind = TsqlKind::rollback_named;
  } else if ((w0 == "begin" && (n == 1 || is_tran(words[1]))) ||
             (w0 == "start" && n > 1 && words[1] == "transaction")) {
    c.kind = TsqlKind::begin;
  } else if ((w0 == "commit" || w0 == "end") && (n == 1 || is_tran(words[1]))) {
    c.kind = TsqlKind::commit;
  } else if (w0 == "rollback" && (n == 1 || is_tran(words[1]))) {
    c.kind = TsqlKind::rollback;
  } else if (w0 == "set" && n > 1 && is_tsql_option(words[1])) {
    c.kind = TsqlKind::set_option;
    c.option = words[1];
    if (n > 2) c.value = words[2];
  }
  return c;
}

bool is_tsql_option(std::string_view name) {
  static constexpr std::string_view kOptions[] = {"textsize",
                                                  "quoted_identifier",
                                                  "arithabort",
                                                  "arithignore",
                                                  "numeric_roundabort",
                                                  "ansi_warnings",
                                                  "ansi_padding",
                                                  "ansi_nulls",
                                                  "concat_null_yields_null",
                                                  "cursor_close_on_commit",
                                                  "implicit_transactions",
                                                  "language",
                                                  "dateformat",
                                                  "datefirst",
                                                  "xact_abort",
                                                  "lock_timeout",
                                                  "deadlock_priority",
                                                  "ansi_null_dflt_on",
                                                  "ansi_null_dflt_off",
                                                  "ansi_defaults",
                                                  "nocount",
                                                  "rowcount",
                                                  "transaction",
                                                  "context_info",
                                                  "query_governor_cost_limit",
                                                  "statistics",
                                                  "showplan_all",
                                                  "showplan_text",
                                                  "showplan_xml",
                                                  "noexec",
                                                  "parseonly",
                                                  "fmtonly",
                                                  "forceplan",
                                                  "remote_proc_transactions"};
  return std::find(std::begin(kOptions), std::end(kOptions), name) != std::end(kOptions);
}

}  // namespace wirepool::sql
