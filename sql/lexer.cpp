// The SQL lexers of lexer.hpp on the tokenizer of tokenizer.hpp: statement
// splitting, leading words, command verbs, parameter markers and what a
// PostgreSQL statement does to session state.

#include "sql/lexer.hpp"
#include "sql/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

namespace wirepool::sql {

using namespace detail;

std::string_view to_string(Dialect d) {
  switch (d) {
    case Dialect::ansi:
      return "ansi";
    case Dialect::postgres:
      return "postgres";
    case Dialect::sqlite:
      return "sqlite";
    case Dialect::mysql:
      return "mysql";
    case Dialect::tsql:
      return "tsql";
  }
  return "unknown";
}

namespace {

/// Decides which semicolons end a statement. Most dialects end at every
/// top-level semicolon; some statements hold semicolons in bodies that are
/// code, not literals:
///  - sqlite: CREATE [TEMP] TRIGGER ... BEGIN ...; END; (sqlite3_complete()'s state machine)
///  - postgres: psql's rule: not inside parentheses, and in CREATE [OR REPLACE]
///    FUNCTION|PROCEDURE, not inside BEGIN ATOMIC ... END (CASE ... END counted inside)
///  - tsql: not inside BEGIN ... END blocks (BEGIN TRAN[SACTION] is not a block)
///  - mysql: in CREATE PROCEDURE|FUNCTION|TRIGGER|EVENT, not inside BEGIN ... END
class StatementEnd {
 public:
  StatementEnd(std::string_view text, Dialect d) : text_(text), d_(d) {}

  /// Feeds a non-semicolon token; `after` is a lexer positioned after it (for look-ahead).
  void feed(const Token& tok, const Lexer& after) {
    switch (d_) {
      case Dialect::sqlite:
        feed_sqlite(tok);
        break;
      case Dialect::postgres:
        feed_postgres(tok);
        break;
      case Dialect::tsql:
        feed_tsql(tok, after);
        break;
      case Dialect::mysql:
        feed_mysql(tok, after);
        break;
      case Dialect::ansi:
        break;
    }
    ++tokens_;
  }

  /// Feeds a semicolon; answers true when it ends the statement (and resets).
  bool semicolon() {
    bool ends = true;
    switch (d_) {
      case Dialect::sqlite:
        state_ = kTrans[state_][kSemi];
        ends = state_ == 1;
        break;
      case Dialect::postgres:
        ends = paren_ == 0 && block_ == 0;
        break;
      case Dialect::tsql:
      case Dialect::mysql:
        ends = block_ == 0;
        break;
      case Dialect::ansi:
        break;
    }
    if (ends) reset();
    return ends;
  }

 private:
  void reset() {
    state_ = 1;
    paren_ = 0;
    block_ = 0;
    words_ = 0;
    tokens_ = 0;
    idents_.fill(0);
    routine_ = false;
    object_seen_ = false;
  }

  // sqlite3_complete(): tokens and the transition table, verbatim.
  static constexpr int kSemi = 0, kWs = 1, kOther = 2, kExplain = 3, kCreate = 4, kTemp = 5,
                       kTrigger = 6, kEnd = 7;
  static constexpr uint8_t kTrans[8][8] = {
      /* 0 INVALID */ {1, 0, 2, 3, 4, 2, 2, 2},
      /* 1 START   */ {1, 1, 2, 3, 4, 2, 2, 2},
      /* 2 NORMAL  */ {1, 2, 2, 2, 2, 2, 2, 2},
      /* 3 EXPLAIN */ {1, 3, 3, 2, 4, 2, 2, 2},
      /* 4 CREATE  */ {1, 4, 2, 2, 2, 4, 5, 2},
      /* 5 TRIGGER */ {6, 5, 5, 5, 5, 5, 5, 5},
      /* 6 SEMI    */ {6, 6, 5, 5, 5, 5, 5, 7},
      /* 7 END     */ {1, 7, 5, 5, 5, 5, 5, 5},
  };

  void feed_sqlite(const Token& tok) {
    int token = kOther;
    if (tok.type == Tok::word) {
      const std::string_view w = text_of(text_, tok);
      if (iequals(w, "EXPLAIN")) {
        token = kExplain;
      } else if (iequals(w, "CREATE")) {
        token = kCreate;
      } else if (iequals(w, "TEMP") || iequals(w, "TEMPORARY")) {
        token = kTemp;
      } else if (iequals(w, "TRIGGER")) {
        token = kTrigger;
      } else if (iequals(w, "END")) {
        token = kEnd;
      }
    }
    state_ = kTrans[state_][token];
  }

  // psqlscan.l: the first letters of the leading CREATE/OR/REPLACE/FUNCTION/PROCEDURE words.
  void feed_postgres(const Token& tok) {
    if (tok.type == Tok::lparen) {
      ++paren_;
    } else if (tok.type == Tok::rparen) {
      if (paren_ > 0) --paren_;
    } else if (tok.type == Tok::word) {
      const std::string_view w = text_of(text_, tok);
      if (words_ < idents_.size() &&
          (iequals(w, "create") || iequals(w, "function") || iequals(w, "procedure") ||
           iequals(w, "or") || iequals(w, "replace"))) {
        idents_[words_] = static_cast<char>(w[0] | 0x20);
      }
      ++words_;
      const bool routine =
          idents_[0] == 'c' &&
          (idents_[1] == 'f' || idents_[1] == 'p' ||
           (idents_[1] == 'o' && idents_[2] == 'r' && (idents_[3] == 'f' || idents_[3] == 'p')));
      if (routine && paren_ == 0) {
        if (iequals(w, "begin")) {
          ++block_;
        } else if (iequals(w, "case")) {
          if (block_ >= 1) ++block_;
        } else if (iequals(w, "end")) {
          if (block_ > 0) --block_;
        }
      }
    }
  }

  static bool next_word_is(Lexer after, std::string_view text,
                           std::initializer_list<std::string_view> words) {
    const Token t = after.next();
    if (t.type != Tok::word) return false;
    const std::string_view w = text_of(text, t);
    return std::any_of(words.begin(), words.end(),
                       [&](std::string_view x) { return iequals(w, x); });
  }

  void feed_tsql(const Token& tok, const Lexer& after) {
    if (tok.type != Tok::word) return;
    const std::string_view w = text_of(text_, tok);
    if (iequals(w, "BEGIN")) {
      Lexer peek = after;
      const Token t = peek.next();
      const bool transaction =
          t.type != Tok::word ||
          next_word_is(after, text_,
                       {"TRAN", "TRANSACTION", "DISTRIBUTED", "DIALOG", "CONVERSATION"});
      if (!transaction) ++block_;
    } else if (iequals(w, "CASE")) {
      ++block_;
    } else if (iequals(w, "END")) {
      if (block_ > 0) --block_;
    }
  }

  void feed_mysql(const Token& tok, const Lexer& after) {
    if (tok.type != Tok::word) return;
    const std::string_view w = text_of(text_, tok);
    if (tokens_ == 0) {
      create_ = iequals(w, "CREATE");
      return;
    }
    if (create_ && !object_seen_) {
      // The object keyword after CREATE [OR REPLACE] [DEFINER = ...] [AGGREGATE] ...
      static constexpr std::array<std::string_view, 4> kRoutines = {"PROCEDURE", "FUNCTION",
                                                                    "TRIGGER", "EVENT"};
      static constexpr std::array<std::string_view, 9> kObjects = {
          "TABLE", "VIEW", "INDEX", "DATABASE", "SCHEMA", "USER", "ROLE", "SERVER", "SEQUENCE"};
      if (std::any_of(kRoutines.begin(), kRoutines.end(), [&](auto x) { return iequals(w, x); })) {
        routine_ = true;
        object_seen_ = true;
      } else if (std::any_of(kObjects.begin(), kObjects.end(),
                             [&](auto x) { return iequals(w, x); })) {
        object_seen_ = true;
      }
      return;
    }
    if (!routine_) return;
    if (iequals(w, "BEGIN")) {
      ++block_;
    } else if (iequals(w, "CASE")) {
      if (block_ > 0) ++block_;
    } else if (iequals(w, "END")) {
      // END IF / END LOOP / END WHILE / END REPEAT close blocks never counted.
      if (block_ > 0 && !next_word_is(after, text_, {"IF", "LOOP", "WHILE", "REPEAT"})) --block_;
    }
  }

  std::string_view text_;
  Dialect d_;
  uint8_t state_ = 0;  // sqlite3_complete() state; 0 = nothing seen yet
  int paren_ = 0;
  int block_ = 0;
  size_t words_ = 0;
  size_t tokens_ = 0;
  std::array<char, 4> idents_{};
  bool create_ = false;
  bool routine_ = false;
  bool object_seen_ = false;
};

// ---- command verbs ----------------------------------------------------------

/// The words of a statement as upper-case tokens, read lazily.
class Words {
 public:
  Words(std::string_view text, Dialect d) : text_(text), lex_(text, d) {}

  /// The next token; words are upper-cased in `word`.
  Token next() {
    Token t = lex_.next();
    word = t.type == Tok::word ? upper(text_of(text_, t)) : std::string();
    return t;
  }
  /// Upper-cased word of the next token without consuming it ("" if not a word).
  std::string peek() const {
    Lexer copy = lex_;
    const Token t = copy.next();
    return t.type == Tok::word ? upper(text_of(text_, t)) : std::string();
  }
  /// Skips a balanced parenthesised group whose '(' was just read.
  void skip_group() {
    int depth = 1;
    while (depth > 0) {
      const Token t = lex_.next();
      if (t.type == Tok::end) return;
      if (t.type == Tok::lparen) ++depth;
      if (t.type == Tok::rparen) --depth;
    }
  }

  std::string word;

 private:
  std::string_view text_;
  Lexer lex_;
};

bool one_of(const std::string& w, std::initializer_list<std::string_view> set) {
  return std::any_of(set.begin(), set.end(), [&](std::string_view x) { return w == x; });
}

/// CREATE / DROP / ALTER: "<VERB> <OBJECT>", noise words skipped, multi-word objects kept.
std::string object_verb(const std::string& verb, Words& w) {
  static const std::map<std::string, std::vector<std::vector<std::string>>> kMultiWord = {
      {"MATERIALIZED", {{"VIEW"}}},
      {"FOREIGN", {{"DATA", "WRAPPER"}, {"TABLE"}}},
      {"EVENT", {{"TRIGGER"}}},
      {"TEXT",
       {{"SEARCH", "CONFIGURATION"},
        {"SEARCH", "DICTIONARY"},
        {"SEARCH", "PARSER"},
        {"SEARCH", "TEMPLATE"}}},
      {"USER", {{"MAPPING"}}},
      {"ACCESS", {{"METHOD"}}},
      {"OPERATOR", {{"CLASS"}, {"FAMILY"}}},
      {"DEFAULT", {{"PRIVILEGES"}}},
  };
  Token t = w.next();
  if (verb == "CREATE") {
    // CREATE OR REPLACE, CREATE OR ALTER (T-SQL), TEMP, UNIQUE, VIRTUAL (SQLite), ...
    while (t.type == Tok::word &&
           one_of(w.word, {"OR", "REPLACE", "ALTER", "TEMP", "TEMPORARY", "GLOBAL", "LOCAL",
                           "UNLOGGED", "UNIQUE", "VIRTUAL", "RECURSIVE", "CONSTRAINT", "TRUSTED",
                           "PROCEDURAL", "CLUSTERED", "NONCLUSTERED", "FULLTEXT", "SPATIAL"})) {
      t = w.next();
    }
    if (t.type == Tok::word && w.word == "DEFAULT" && w.peek() != "PRIVILEGES") t = w.next();
  } else if (verb == "DROP") {
    while (t.type == Tok::word && one_of(w.word, {"TEMPORARY"}))
      t = w.next();
  }
  if (t.type != Tok::word) return verb;
  std::string out = verb + " " + w.word;
  const auto it = kMultiWord.find(w.word);
  if (it != kMultiWord.end()) {
    const std::string second = w.peek();
    for (const auto& tail : it->second) {
      if (tail.front() != second) continue;
      Words probe = w;
      bool match = true;
      for (const auto& part : tail) {
        probe.next();
        if (probe.word != part) {
          match = false;
          break;
        }
      }
      if (match) {
        for (const auto& part : tail)
          out += " " + part;
        return out;
      }
    }
  }
  return out;
}

std::string verb_from(Words& w, Dialect d, const Token& first);

/// WITH [RECURSIVE] name [(cols)] AS [NOT] [MATERIALIZED] ( ... ) [, ...] <main statement>
std::string with_verb(Words& w, Dialect d) {
  for (;;) {
    const Token t = w.next();
    switch (t.type) {
      case Tok::end:
      case Tok::semicolon:
        return "SELECT";
      case Tok::lparen:
        w.skip_group();
        break;
      case Tok::word:
        if (one_of(w.word, {"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "TABLE",
                            "REPLACE"})) {
          return verb_from(w, d, t);
        }
        break;
      default:
        break;
    }
  }
}

std::string verb_from(Words& w, Dialect d, const Token& first) {
  Token t = first;
  while (t.type == Tok::lparen)
    t = w.next();  // (SELECT ...) UNION ...
  if (t.type != Tok::word) return std::string();
  const std::string word = w.word;
  if (word == "SELECT" || word == "VALUES" || word == "TABLE") return "SELECT";
  if (word == "INSERT" || word == "REPLACE") return "INSERT";
  if (word == "WITH") return with_verb(w, d);
  if (word == "CREATE" || word == "DROP" || word == "ALTER") return object_verb(word, w);
  if (word == "START") return w.peek() == "TRANSACTION" ? "START TRANSACTION" : "START";
  if (word == "END") return "COMMIT";
  if (word == "ABORT") return "ROLLBACK";
  if (word == "COMMIT" || word == "ROLLBACK") {
    return w.peek() == "PREPARED" ? word + " PREPARED" : word;
  }
  if (word == "PREPARE") return w.peek() == "TRANSACTION" ? "PREPARE TRANSACTION" : "PREPARE";
  if (word == "ANALYSE") return "ANALYZE";
  if (word == "TRUNCATE") return "TRUNCATE TABLE";
  if (word == "LOCK") return "LOCK TABLE";
  if (word == "REFRESH") return "REFRESH MATERIALIZED VIEW";
  if (word == "IMPORT") return "IMPORT FOREIGN SCHEMA";
  if (word == "SECURITY") return "SECURITY LABEL";
  if (word == "DISCARD" || word == "DEALLOCATE") {
    const std::string next = w.peek();
    if (word == "DISCARD" && !next.empty())
      return word + " " + (next == "TEMPORARY" ? "TEMP" : next);
    if (word == "DEALLOCATE" && next == "ALL") return "DEALLOCATE ALL";
    return word;
  }
  if (d == Dialect::postgres && word == "DECLARE") return "DECLARE CURSOR";
  if (d == Dialect::postgres && word == "CLOSE") {
    return w.peek() == "ALL" ? "CLOSE CURSOR ALL" : "CLOSE CURSOR";
  }
  return word;  // BEGIN, SET, SHOW, PRAGMA, VACUUM, ANALYZE, EXPLAIN, SAVEPOINT, RELEASE, ...
}

}  // namespace

// ---- public functions -------------------------------------------------------

std::vector<std::string_view> split_statements(std::string_view text, Dialect d,
                                               bool backslash_quotes) {
  std::vector<std::string_view> out;
  Lexer lex(text, d, false, backslash_quotes);
  StatementEnd ender(text, d);
  size_t start = 0;
  bool content = false;
  for (;;) {
    const Token t = lex.next();
    if (t.type == Tok::end) break;
    if (t.type == Tok::semicolon) {
      if (ender.semicolon()) {
        if (content) out.push_back(trim(text.substr(start, t.begin - start)));
        start = t.end;
        content = false;
      }
      continue;
    }
    content = true;
    ender.feed(t, lex);
  }
  if (content) out.push_back(trim(text.substr(start)));
  return out;
}

bool is_blank(std::string_view text, Dialect d) {
  Lexer lex(text, d);
  for (;;) {
    const Token t = lex.next();
    if (t.type == Tok::end) return true;
    if (t.type != Tok::semicolon) return false;
  }
}

std::vector<std::string> leading_words(std::string_view stmt, Dialect d, size_t n) {
  std::vector<std::string> out;
  Lexer lex(stmt, d);
  while (out.size() < n) {
    const Token t = lex.next();
    if (t.type != Tok::word) break;
    out.push_back(upper(text_of(stmt, t)));
  }
  return out;
}

size_t leading_words(std::string_view stmt, Dialect d, std::span<std::string_view> out) {
  Lexer lex(stmt, d);
  size_t n = 0;
  while (n < out.size()) {
    const Token t = lex.next();
    if (t.type != Tok::word) break;
    out[n++] = text_of(stmt, t);
  }
  return n;
}

bool iequals_upper(std::string_view word, std::string_view upper) {
  return iequals(word, upper);
}

bool inserts_one_row(std::string_view stmt, Dialect d) {
  Words w(stmt, d);
  Token t = w.next();
  if (w.word != "INSERT") return false;
  w.next();
  if (w.word != "INTO") return false;
  auto is_name = [](const Token& tok) { return tok.type == Tok::word || tok.type == Tok::quoted; };
  t = w.next();
  if (!is_name(t)) return false;
  for (t = w.next(); t.type == Tok::other && stmt.substr(t.begin, t.end - t.begin) == ".";
       t = w.next()) {
    if (!is_name(w.next())) return false;  // schema.table
  }
  if (t.type == Tok::lparen) {
    w.skip_group();
    t = w.next();
  }
  if (w.word != "VALUES") return false;
  if (w.next().type != Tok::lparen) return false;
  for (int depth = 1; depth > 0;) {  // the tuple, which must close
    t = w.next();
    if (t.type == Tok::end) return false;
    depth += t.type == Tok::lparen ? 1 : t.type == Tok::rparen ? -1 : 0;
  }
  t = w.next();
  if (t.type == Tok::semicolon) t = w.next();
  return t.type == Tok::end;
}

std::string command_verb(std::string_view stmt, Dialect d) {
  Words w(stmt, d);
  Token t = w.next();
  while (t.type == Tok::semicolon)
    t = w.next();
  return verb_from(w, d, t);
}

namespace {
std::vector<Marker> find_markers_impl(std::string_view text, Dialect d, bool client_markers);
}  // namespace

std::vector<Marker> find_markers(std::string_view text, Dialect d) {
  return find_markers_impl(text, d, false);
}

std::vector<Marker> find_client_markers(std::string_view text, Dialect d) {
  return find_markers_impl(text, d, d == Dialect::tsql);
}

namespace {
std::vector<Marker> find_markers_impl(std::string_view text, Dialect d, bool client_markers) {
  std::vector<Marker> out;
  Lexer lex(text, d, client_markers);
  int ordinal = 0;
  // SQLite numbers every distinct variable: ? takes the largest index so far + 1,
  // ?NNN takes NNN, and a name keeps the index of its first appearance.
  int sqlite_max = 0;
  std::map<std::string_view, int> sqlite_names;
  for (;;) {
    const Token t = lex.next();
    if (t.type == Tok::end) break;
    if (t.type != Tok::marker) continue;
    Marker m{t.marker_type, t.begin, t.end - t.begin, 0, t.name};
    if (d == Dialect::sqlite) {
      if (t.marker_type == Marker::Type::question) {
        if (t.number < 0) {
          m.number = ++sqlite_max;
        } else {
          m.number = t.number;
          sqlite_max = std::max(sqlite_max, t.number);
        }
      } else {
        const auto [it, inserted] = sqlite_names.emplace(text_of(text, t), sqlite_max + 1);
        if (inserted) ++sqlite_max;
        m.number = t.marker_type == Marker::Type::dollar ? t.number : 0;
      }
    } else if (t.marker_type == Marker::Type::question) {
      m.number = ++ordinal;
    } else if (t.marker_type == Marker::Type::dollar) {
      m.number = t.number;
    }
    out.push_back(m);
  }
  return out;
}
}  // namespace

QuestionText to_question_markers(std::string_view text, Dialect d) {
  QuestionText out;
  const std::vector<Marker> markers = find_markers(text, d);
  bool dollar = false, question = false;
  out.text.reserve(text.size());
  size_t copied = 0;
  for (const Marker& m : markers) {
    if (m.type == Marker::Type::dollar) {
      dollar = true;
      if (m.number < 1) {
        out.error = "parameter marker $" + std::to_string(m.number) + " is out of range";
        return out;
      }
      out.slots.push_back(m.number - 1);
      out.required = std::max(out.required, m.number);
      out.text.append(text.substr(copied, m.offset - copied));
      out.text.push_back('?');
      copied = m.offset + m.length;
    } else if (m.type == Marker::Type::question) {
      question = true;
      out.slots.push_back(m.number - 1);
      out.required = std::max(out.required, m.number);
    }
  }
  if (dollar && question) {
    out.error = "the statement mixes $N and ? parameter markers";
    return out;
  }
  out.text.append(text.substr(copied));
  return out;
}

std::optional<std::string> drop_national_prefixes(std::string_view tsql) {
  if (tsql.find('\'') == std::string_view::npos) return std::nullopt;
  std::string out;
  size_t copied = 0;
  Lexer lex(tsql, Dialect::tsql);
  Token prev{};
  for (Token t = lex.next(); t.type != Tok::end; prev = t, t = lex.next()) {
    if (t.type != Tok::string || prev.type != Tok::word || prev.end != t.begin ||
        prev.end != prev.begin + 1 || (tsql[prev.begin] | 0x20) != 'n') {
      continue;
    }
    out.append(tsql.substr(copied, prev.begin - copied));
    copied = t.begin;
  }
  if (copied == 0) return std::nullopt;
  out.append(tsql.substr(copied));
  return out;
}

// ---- session effects (PostgreSQL) ----------------------------------------------

namespace {

/// The value of a '...' literal token, lower-cased ('' unescaped); nullopt
/// for any other token (E'' with escapes, dollar quotes, a marker).
std::optional<std::string> literal_name(std::string_view text, const Token& t) {
  std::string_view v = text_of(text, t);
  if (t.type != Tok::string || v.size() < 2 || v.front() != '\'' || v.back() != '\'') {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    if (v[i] == '\\') return std::nullopt;  // an escape wirepool would have to interpret
    if (v[i] == '\'' && v[i + 1] == '\'') ++i;
    out += v[i] >= 'A' && v[i] <= 'Z' ? static_cast<char>(v[i] + 32) : v[i];
  }
  return out;
}

}  // namespace

bool mentions_session_functions(std::string_view text) {
  // Both names contain '_': look only around each '_' (statements have few).
  auto at = [&](size_t from, std::string_view word) {
    return from + word.size() <= text.size() && iequals(text.substr(from, word.size()), word);
  };
  for (size_t i = text.find('_'); i != std::string_view::npos; i = text.find('_', i + 1)) {
    if (i >= 3 && at(i - 3, "set_config")) return true;
    if (i >= 8 && at(i - 8, "advisory_lock")) return true;
  }
  return false;
}

SessionEffects session_effects(std::string_view text, bool backslash_quotes) {
  SessionEffects out;
  Lexer lex(text, Dialect::postgres, false, backslash_quotes);
  std::vector<std::string> head;  // the statement's leading words
  bool in_head = true;
  Token t = lex.next();
  while (t.type != Tok::end) {
    if (t.type == Tok::semicolon) {
      head.clear();
      in_head = true;
      t = lex.next();
      continue;
    }
    if (t.type != Tok::word) {
      in_head = false;
      t = lex.next();
      continue;
    }
    const std::string w = upper(text_of(text, t));
    if (in_head) {
      head.push_back(w);
      const std::string& w0 = head[0];
      if (head.size() == 1 &&
          (w0 == "DO" || w0 == "CALL" || w0 == "PREPARE" || w0 == "LISTEN" || w0 == "LOAD")) {
        out.opaque = true;
      }
      if (w0 == "CREATE" && (w == "TEMP" || w == "TEMPORARY")) out.opaque = true;
      if (w0 == "DECLARE" && w == "HOLD") out.opaque = true;
      // SET SESSION CHARACTERISTICS AS TRANSACTION ...: the session's defaults.
      if (head.size() == 3 && w0 == "SET" && head[1] == "SESSION" && w == "CHARACTERISTICS") {
        for (const char* n : {"default_transaction_isolation", "default_transaction_read_only",
                              "default_transaction_deferrable"})
          out.settings.emplace_back(n);
      }
    }
    if (w == "INTO") {  // SELECT ... INTO TEMP t
      Lexer ahead = lex;
      Token n = ahead.next();
      if (n.type == Tok::word) {
        const std::string nw = upper(text_of(text, n));
        if (nw == "TEMP" || nw == "TEMPORARY") out.opaque = true;
      }
    }
    if (w.size() >= 13 && (w.ends_with("ADVISORY_LOCK") || w.ends_with("ADVISORY_LOCK_SHARED"))) {
      out.opaque = true;  // session-level advisory locks (not the _xact_ ones)
    }
    if (w != "SET_CONFIG") {
      t = lex.next();
      continue;
    }
    // set_config(name, value, is_local): its three arguments' tokens.
    Token open = lex.next();
    if (open.type != Tok::lparen) {
      t = open;
      continue;
    }
    std::vector<std::vector<Token>> args(1);
    int depth = 1;
    for (t = lex.next(); t.type != Tok::end; t = lex.next()) {
      if (t.type == Tok::lparen) ++depth;
      if (t.type == Tok::rparen && --depth == 0) break;
      if (t.type == Tok::comma && depth == 1) {
        args.emplace_back();
        continue;
      }
      args.back().push_back(t);
    }
    std::string scope;
    if (args.size() == 3 && args[2].size() == 1 && args[2][0].type == Tok::word) {
      scope = upper(text_of(text, args[2][0]));
    }
    if (scope != "TRUE") {
      auto name = args[0].size() == 1 ? literal_name(text, args[0][0]) : std::nullopt;
      if (name && scope == "FALSE") {
        out.settings.push_back(std::move(*name));
      } else {
        out.opaque = true;
      }
    }
    if (t.type != Tok::end) t = lex.next();
  }
  return out;
}

}  // namespace wirepool::sql
