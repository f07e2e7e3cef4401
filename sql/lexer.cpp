// The SQL lexers of sql.hpp: one tokenizer parameterised by dialect, and on top
// of it statement splitting, leading words, command verbs and parameter markers.
//
// The tokenizer only separates what is code from what is not (literals, quoted
// identifiers, comments, dollar-quoted bodies); it never validates SQL. An
// unterminated literal or comment runs to the end of the text, as the backends'
// own lexers treat it (they then report the error).

#include "sql/lexer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <map>
#include <optional>

namespace wirepool::sql {

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

enum class Tok : uint8_t {
  word,       // identifier or keyword, unquoted
  quoted,     // quoted identifier: "x", `x`, [x]
  string,     // string literal (incl. E'', dollar-quoted bodies)
  number,     // numeric literal
  marker,     // parameter marker of the dialect
  semicolon,  // ;
  lparen,     // (
  rparen,     // )
  comma,      // ,
  other,      // any other operator or punctuation
  end,        // end of text
};

struct Token {
  Tok type = Tok::end;
  size_t begin = 0;
  size_t end = 0;
  Marker::Type marker_type = Marker::Type::question;
  int number = 0;         // $N / ?NNN digits; -1 for a bare ?
  std::string_view name;  // named markers: without the sigil
};

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// First character of an unquoted identifier. Bytes >= 0x80 (UTF-8) count as letters.
bool is_ident_start(unsigned char c, Dialect d) {
  if (is_alpha(c) || c == '_' || c >= 0x80) return true;
  return d == Dialect::tsql && c == '#';  // #temp tables
}

/// Later characters of an unquoted identifier ('$' is allowed after the first
/// character in PostgreSQL, SQLite and MySQL; T-SQL also allows @ and #).
bool is_ident_char(unsigned char c, Dialect d) {
  if (is_alpha(c) || is_digit(c) || c == '_' || c >= 0x80) return true;
  if (c == '$') return d != Dialect::ansi;
  if (c == '@' || c == '#') return d == Dialect::tsql;
  return false;
}

/// SQLite's IdChar(): what may follow a variable's sigil.
bool sqlite_id_char(unsigned char c) {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || c >= 0x80;
}

/// Parses a run of digits with saturation at INT_MAX.
int parse_number(std::string_view digits) {
  int64_t v = 0;
  for (char c : digits) {
    v = v * 10 + (c - '0');
    if (v > INT_MAX) return INT_MAX;
  }
  return static_cast<int>(v);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x >= 'a' && x <= 'z') x = static_cast<unsigned char>(x - 32);
    if (y >= 'a' && y <= 'z') y = static_cast<unsigned char>(y - 32);
    if (x != y) return false;
  }
  return true;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

/// The tokenizer. A small value type: copy it to look ahead.
class Lexer {
 public:
  Lexer(std::string_view text, Dialect d, bool client_markers = false,
        bool backslash_quotes = false)
      : t_(text), d_(d), client_markers_(client_markers), backslash_quotes_(backslash_quotes) {}

  /// The next token after whitespace and comments.
  Token next() {
    skip_space();
    Token tok;
    tok.begin = pos_;
    if (pos_ >= t_.size()) {
      tok.type = Tok::end;
      tok.end = pos_;
      return tok;
    }
    const unsigned char c = at(pos_);
    size_t e = pos_ + 1;
    tok.type = Tok::other;
    switch (c) {
      case ';':
        tok.type = Tok::semicolon;
        break;
      case '(':
        tok.type = Tok::lparen;
        break;
      case ')':
        tok.type = Tok::rparen;
        break;
      case ',':
        tok.type = Tok::comma;
        break;
      case '\'':
        tok.type = Tok::string;
        e = skip_quoted(pos_ + 1, '\'', d_ == Dialect::mysql || backslash_quotes_);
        break;
      case '"':
        tok.type = d_ == Dialect::mysql ? Tok::string : Tok::quoted;
        e = skip_quoted(pos_ + 1, '"', d_ == Dialect::mysql);
        break;
      case '`':
        if (d_ == Dialect::sqlite || d_ == Dialect::mysql) {
          tok.type = Tok::quoted;
          e = skip_quoted(pos_ + 1, '`', false);
        }
        break;
      case '[':
        if (d_ == Dialect::sqlite) {  // [name]: no escape, ends at the first ]
          tok.type = Tok::quoted;
          const size_t close = t_.find(']', pos_ + 1);
          e = close == std::string_view::npos ? t_.size() : close + 1;
        } else if (d_ == Dialect::tsql) {  // [name]: ]] escapes a ]
          tok.type = Tok::quoted;
          e = skip_quoted(pos_ + 1, ']', false);
        }
        break;
      case '$':
        e = lex_dollar(tok);
        break;
      case '?':
        e = lex_question(tok);
        break;
      case ':':
        if (at(pos_ + 1) == ':') {
          e = pos_ + 2;  // a cast, never a marker
        } else if (d_ == Dialect::sqlite) {
          e = lex_sqlite_variable(tok);
        }
        break;
      case '@':
        if (d_ == Dialect::sqlite) {
          e = lex_sqlite_variable(tok);
        } else if (d_ == Dialect::tsql) {
          e = lex_tsql_variable(tok);
        }
        break;
      default:
        if (is_digit(c) || (c == '.' && is_digit(at(pos_ + 1)))) {
          tok.type = Tok::number;
          e = skip_number(pos_);
        } else if (is_ident_start(c, d_)) {
          e = pos_ + 1;
          while (e < t_.size() && is_ident_char(at(e), d_))
            ++e;
          tok.type = Tok::word;
          // PostgreSQL E'...': backslash escapes. Only a lone E directly before the quote.
          if (d_ == Dialect::postgres && e == pos_ + 1 && (c == 'E' || c == 'e') && at(e) == '\'') {
            tok.type = Tok::string;
            e = skip_quoted(e + 1, '\'', true);
          }
        }
        break;
    }
    pos_ = e;
    tok.end = e;
    return tok;
  }

  size_t pos() const { return pos_; }

 private:
  unsigned char at(size_t i) const { return i < t_.size() ? static_cast<unsigned char>(t_[i]) : 0; }

  void skip_space() {
    for (;;) {
      if (pos_ >= t_.size()) return;
      const unsigned char c = at(pos_);
      if (is_space(c)) {
        ++pos_;
      } else if (c == '-' && at(pos_ + 1) == '-' &&
                 (d_ != Dialect::mysql || pos_ + 2 >= t_.size() || at(pos_ + 2) <= ' ')) {
        // MySQL needs whitespace or a control character after "--".
        skip_line();
      } else if (c == '#' && d_ == Dialect::mysql) {
        skip_line();
      } else if (c == '/' && at(pos_ + 1) == '*') {
        if (d_ == Dialect::mysql &&
            (at(pos_ + 2) == '!' || (at(pos_ + 2) == 'M' && at(pos_ + 3) == '!'))) {
          // MySQL/MariaDB executable comment: its content is code.
          pos_ += at(pos_ + 2) == '!' ? 3 : 4;
          while (pos_ < t_.size() && is_digit(at(pos_)))
            ++pos_;  // version number
          ++exec_depth_;
          continue;
        }
        skip_block_comment();
      } else if (exec_depth_ > 0 && c == '*' && at(pos_ + 1) == '/') {
        --exec_depth_;
        pos_ += 2;
      } else {
        return;
      }
    }
  }

  void skip_line() {
    const size_t nl = t_.find('\n', pos_);
    pos_ = nl == std::string_view::npos ? t_.size() : nl + 1;
  }

  /// /* ... */, nested in PostgreSQL and T-SQL.
  void skip_block_comment() {
    const bool nested = d_ == Dialect::postgres || d_ == Dialect::tsql;
    int depth = 1;
    size_t i = pos_ + 2;
    while (i < t_.size()) {
      if (at(i) == '*' && at(i + 1) == '/') {
        i += 2;
        if (--depth == 0) break;
      } else if (nested && at(i) == '/' && at(i + 1) == '*') {
        i += 2;
        ++depth;
      } else {
        ++i;
      }
    }
    pos_ = std::min(i, t_.size());
  }

  /// Skips a quoted run starting after its opening quote; a doubled quote is one
  /// quote, and with `backslash` a backslash escapes the next byte. Answers the
  /// index after the closing quote (or the end of text).
  size_t skip_quoted(size_t i, char quote, bool backslash) const {
    while (i < t_.size()) {
      const char c = t_[i];
      if (backslash && c == '\\') {
        i += 2;
      } else if (c == quote) {
        if (at(i + 1) == static_cast<unsigned char>(quote)) {
          i += 2;
        } else {
          return i + 1;
        }
      } else {
        ++i;
      }
    }
    return t_.size();
  }

  size_t skip_number(size_t i) const {
    const size_t start = i;
    while (i < t_.size()) {
      const unsigned char c = at(i);
      if (is_alpha(c) || is_digit(c) || c == '_' || c == '.') {
        ++i;
      } else if ((c == '+' || c == '-') && (at(i - 1) == 'e' || at(i - 1) == 'E') &&
                 is_digit(at(i + 1)) && !(at(start) == '0' && (at(start + 1) | 0x20) == 'x')) {
        ++i;  // exponent sign
      } else {
        break;
      }
    }
    return i;
  }

  size_t lex_dollar(Token& tok) {
    if (d_ == Dialect::sqlite) return lex_sqlite_variable(tok);
    if (d_ == Dialect::tsql && client_markers_) {
      // $N as a PostgreSQL client writes it. (T-SQL reads "$1" as a money literal;
      // a client of the TDS driver that means money writes 1.00 or CAST instead.)
      size_t i = pos_ + 1;
      if (!is_digit(at(i))) return i;
      while (is_digit(at(i)))
        ++i;
      tok.type = Tok::marker;
      tok.marker_type = Marker::Type::dollar;
      tok.number = parse_number(t_.substr(pos_ + 1, i - pos_ - 1));
      return i;
    }
    // $N is also a marker in mysql and ansi text: PostgreSQL clients write it,
    // and the mysql and odbc drivers rewrite it to ? (neither dialect has any
    // other use for a '$' that starts a token). tsql keeps '$' as code.
    if (d_ == Dialect::tsql) return pos_ + 1;
    size_t i = pos_ + 1;
    if (d_ != Dialect::postgres && !is_digit(at(i))) return pos_ + 1;
    if (is_digit(at(i))) {  // $N
      while (is_digit(at(i)))
        ++i;
      tok.type = Tok::marker;
      tok.marker_type = Marker::Type::dollar;
      tok.number = parse_number(t_.substr(pos_ + 1, i - pos_ - 1));
      return i;
    }
    // $tag$ ... $tag$ (the tag is an identifier without '$', or empty)
    if (at(i) != '$') {
      if (!(is_alpha(at(i)) || at(i) == '_' || at(i) >= 0x80)) return pos_ + 1;
      while (is_alpha(at(i)) || is_digit(at(i)) || at(i) == '_' || at(i) >= 0x80)
        ++i;
      if (at(i) != '$') return pos_ + 1;
    }
    const std::string_view tag = t_.substr(pos_, i + 1 - pos_);
    tok.type = Tok::string;
    const size_t close = t_.find(tag, i + 1);
    return close == std::string_view::npos ? t_.size() : close + tag.size();
  }

  size_t lex_question(Token& tok) {
    if (d_ == Dialect::sqlite) {
      size_t i = pos_ + 1;
      while (is_digit(at(i)))
        ++i;
      tok.type = Tok::marker;
      tok.marker_type = Marker::Type::question;
      tok.number = i > pos_ + 1 ? parse_number(t_.substr(pos_ + 1, i - pos_ - 1)) : -1;
      return i;
    }
    if (d_ == Dialect::mysql || d_ == Dialect::ansi || (d_ == Dialect::tsql && client_markers_)) {
      tok.type = Tok::marker;
      tok.marker_type = Marker::Type::question;
      tok.number = -1;
    }
    return pos_ + 1;
  }

  /// SQLite's variables $name, :name, @name, following its tokenizer: any run of
  /// identifier characters, with "::" continuations and a TCL "(...)" suffix.
  /// $ followed by digits is $N. A sigil with no identifier character is not a
  /// marker.
  size_t lex_sqlite_variable(Token& tok) {
    size_t i = pos_ + 1;
    size_t ids = 0;
    size_t first_sep = std::string_view::npos;  // where "::" or "(" starts
    while (i < t_.size()) {
      const unsigned char c = at(i);
      if (sqlite_id_char(c)) {
        ++ids;
        ++i;
      } else if (c == ':' && at(i + 1) == ':') {
        if (first_sep == std::string_view::npos) first_sep = i;
        i += 2;
      } else if (c == '(' && ids > 0) {
        if (first_sep == std::string_view::npos) first_sep = i;
        while (i < t_.size() && !is_space(at(i)) && at(i) != ')')
          ++i;
        if (at(i) == ')') ++i;
        break;
      } else {
        break;
      }
    }
    if (ids == 0) return pos_ + 1;
    tok.type = Tok::marker;
    tok.name = t_.substr(pos_ + 1, i - pos_ - 1);
    const std::string_view head =
        first_sep == std::string_view::npos ? tok.name : t_.substr(pos_ + 1, first_sep - pos_ - 1);
    if (t_[pos_] == '$' && !head.empty() &&
        std::all_of(head.begin(), head.end(), [](char ch) { return is_digit(ch); })) {
      tok.marker_type = Marker::Type::dollar;
      tok.number = parse_number(head);
    } else {
      tok.marker_type = Marker::Type::named;
    }
    return i;
  }

  /// T-SQL @name; @@name is a global variable, not a marker.
  size_t lex_tsql_variable(Token& tok) {
    size_t i = pos_ + 1;
    if (at(i) == '@') {
      ++i;
      while (i < t_.size() && is_ident_char(at(i), d_))
        ++i;
      return i;
    }
    if (!is_ident_char(at(i), d_)) return i;
    while (i < t_.size() && is_ident_char(at(i), d_))
      ++i;
    tok.type = Tok::marker;
    tok.marker_type = Marker::Type::named;
    tok.name = t_.substr(pos_ + 1, i - pos_ - 1);
    return i;
  }

  std::string_view t_;
  Dialect d_;
  bool client_markers_ = false;    // tsql: also ? and $N (find_client_markers)
  bool backslash_quotes_ = false;  // '...' with backslash escapes (split_statements)
  size_t pos_ = 0;
  int exec_depth_ = 0;  // inside MySQL /*! ... */
};

std::string_view text_of(std::string_view text, const Token& t) {
  return text.substr(t.begin, t.end - t.begin);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && is_space(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

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

// ---- session effects (PostgreSQL) ----------------------------------------------

namespace {

bool icontains(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return (a >= 'A' && a <= 'Z' ? static_cast<char>(a + 32) : a) == b;
  });
  return it != text.end();
}

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
  return icontains(text, "set_config") || icontains(text, "advisory_lock");
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
