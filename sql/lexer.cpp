// The SQL lexers of sql.hpp: one tokenizer parameterised by dialect, and on top
// of it statement splitting, leading words, command verbs and parameter markers.
//
// The tokenizer only separates what is code from what is not (literals, quoted
// identifiers, comments, dollar-quoted bodies); it never validates SQL. An
// unterminated literal or comment runs to the end of the text, as the backends'
// own lexers treat it (they then report the error).

#include "sql/lexer.hpp"
#include "sql/pg_tokens.hpp"
#include "sql/rewrite.hpp"
#include "sql/rewrite_mysql.hpp"
#include "sql/utf8.hpp"

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

bool is_sql_keyword(std::string_view w);  // below, with the PostgreSQL rewrites

/// The tokenizer. A small value type: copy it to look ahead.
class Lexer {
 public:
  Lexer(std::string_view text, Dialect d, bool client_markers = false,
        bool backslash_quotes = false)
      : t_(text), d_(d), client_markers_(client_markers), backslash_quotes_(backslash_quotes) {}

  /// PostgreSQL client text read for a rewrite (rewrite_pg_sql): E'...' strings,
  /// $N ends at its digits ($1::int is $1 and a cast), and '[' after an operand
  /// is a subscript, not a [quoted] identifier.
  void set_pg_client() { pg_client_ = true; }

  /// The next token after whitespace and comments.
  Token next() {
    Token tok = next_token();
    const std::string_view w = t_.substr(tok.begin, tok.end - tok.begin);
    prev_operand_ =
        (tok.type == Tok::word && !(pg_client_ && is_sql_keyword(w) && !iequals(w, "array"))) ||
        tok.type == Tok::quoted || tok.type == Tok::string || tok.type == Tok::number ||
        tok.type == Tok::marker || tok.type == Tok::rparen ||
        (tok.type == Tok::other && at(tok.begin) == ']');
    return tok;
  }

 private:
  Token next_token() {
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
        if (pg_client_ && prev_operand_) break;  // a subscript: x[1], ARRAY[...]
        if (d_ == Dialect::sqlite) {             // [name]: no escape, ends at the first ]
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
          if ((d_ == Dialect::postgres || pg_client_) && e == pos_ + 1 && (c == 'E' || c == 'e') &&
              at(e) == '\'') {
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

 public:
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

  /// The index of the closing '$' of a $tag$ opening at pos_, or 0.
  size_t dollar_tag_end() const {
    size_t i = pos_ + 1;
    if (at(i) != '$' && !(is_alpha(at(i)) || at(i) == '_' || at(i) >= 0x80)) return 0;
    while (is_alpha(at(i)) || is_digit(at(i)) || at(i) == '_' || at(i) >= 0x80)
      ++i;
    return at(i) == '$' ? i : 0;
  }

  size_t lex_dollar(Token& tok) {
    if (d_ == Dialect::sqlite && !(pg_client_ && (is_digit(at(pos_ + 1)) || dollar_tag_end()))) {
      return lex_sqlite_variable(tok);
    }
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
    if (d_ != Dialect::postgres && !pg_client_ && !is_digit(at(i))) return pos_ + 1;
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
  bool pg_client_ = false;         // set_pg_client()
  bool prev_operand_ = false;      // the last token ends an operand
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

// ---- PostgreSQL SQL for SQLite (docs/catalog.md) ------------------------------

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

/// 'text' as a SQLite literal.
std::string sql_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  out.push_back('\'');
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The value of an E'...' token (its text from the E), PostgreSQL's escapes applied.
std::string e_string_value(std::string_view tok) {
  std::string out;
  std::string_view body = tok.substr(2);
  if (!body.empty() && body.back() == '\'') body.remove_suffix(1);
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\'' && i + 1 < body.size() && body[i + 1] == '\'') {
      out.push_back('\'');
      ++i;
    } else if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
    } else {
      const char e = body[++i];
      switch (e) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'x': {
          int v = 0, n = 0;
          while (n < 2 && i + 1 < body.size() && hex_value(body[i + 1]) >= 0) {
            v = v * 16 + hex_value(body[++i]);
            ++n;
          }
          if (n == 0)
            out.push_back('x');
          else
            out.push_back(static_cast<char>(v));
          break;
        }
        case 'u':
        case 'U': {
          const int want = e == 'u' ? 4 : 8;
          uint32_t v = 0;
          int n = 0;
          while (n < want && i + 1 < body.size() && hex_value(body[i + 1]) >= 0) {
            v = v * 16 + static_cast<uint32_t>(hex_value(body[++i]));
            ++n;
          }
          append_utf8(out, v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', n = 1;
            while (n < 3 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7') {
              v = v * 8 + (body[++i] - '0');
              ++n;
            }
            out.push_back(static_cast<char>(v));
          } else {
            out.push_back(e);  // \\, \', and any other character as itself
          }
      }
    }
  }
  return out;
}

/// Words before '(' that are SQL, not a function's name; words that end no operand.
bool is_sql_keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 52> kKeywords = {
      "select",    "from",     "where",  "and",     "or",        "not",     "in",     "on",
      "when",      "then",     "else",   "as",      "exists",    "values",  "join",   "using",
      "by",        "case",     "is",     "like",    "ilike",     "any",     "all",    "some",
      "over",      "filter",   "with",   "union",   "intersect", "except",  "into",   "set",
      "returning", "distinct", "having", "limit",   "offset",    "between", "escape", "array",
      "glob",      "regexp",   "match",  "lateral", "to",        "do",      "update", "insert",
      "delete",    "create",   "table",  "default"};
  for (auto k : kKeywords) {
    if (iequals(w, k)) return true;
  }
  return false;
}

/// What a cast to a PostgreSQL type becomes on SQLite.
struct CastTarget {
  enum Kind : uint8_t { drop, cast, function } kind = drop;
  std::string_view name;  ///< the SQLite type (cast) or the driver's function
};

CastTarget sqlite_cast(const std::string& type, bool array) {
  if (array) return {};
  static const std::map<std::string_view, CastTarget> kTypes = {
      {"int", {CastTarget::cast, "INTEGER"}},
      {"int2", {CastTarget::cast, "INTEGER"}},
      {"int4", {CastTarget::cast, "INTEGER"}},
      {"int8", {CastTarget::cast, "INTEGER"}},
      {"integer", {CastTarget::cast, "INTEGER"}},
      {"smallint", {CastTarget::cast, "INTEGER"}},
      {"bigint", {CastTarget::cast, "INTEGER"}},
      {"oid", {CastTarget::cast, "INTEGER"}},
      {"xid", {CastTarget::cast, "INTEGER"}},
      {"real", {CastTarget::cast, "REAL"}},
      {"float", {CastTarget::cast, "REAL"}},
      {"float4", {CastTarget::cast, "REAL"}},
      {"float8", {CastTarget::cast, "REAL"}},
      {"double precision", {CastTarget::cast, "REAL"}},
      {"numeric", {CastTarget::cast, "NUMERIC"}},
      {"decimal", {CastTarget::cast, "NUMERIC"}},
      {"text", {CastTarget::cast, "TEXT"}},
      {"varchar", {CastTarget::cast, "TEXT"}},
      {"character varying", {CastTarget::cast, "TEXT"}},
      {"char", {CastTarget::cast, "TEXT"}},
      {"character", {CastTarget::cast, "TEXT"}},
      {"bpchar", {CastTarget::cast, "TEXT"}},
      {"name", {CastTarget::cast, "TEXT"}},
      {"citext", {CastTarget::cast, "TEXT"}},
      {"bool", {CastTarget::function, "pg_bool"}},
      {"boolean", {CastTarget::function, "pg_bool"}},
      {"bytea", {CastTarget::function, "pg_bytea"}},
      {"regclass", {CastTarget::function, "pg_regclass"}},
      {"regtype", {CastTarget::function, "pg_regtype"}},
      {"regnamespace", {CastTarget::function, "pg_regnamespace"}},
      {"regproc", {CastTarget::function, "pg_regproc"}},
      {"regprocedure", {CastTarget::function, "pg_regproc"}},
      {"regrole", {CastTarget::function, "pg_regrole"}},
  };
  auto it = kTypes.find(type);
  return it == kTypes.end() ? CastTarget{} : it->second;
}

/// The replacement for a PostgreSQL pattern-match operator on SQLite (REGEXP
/// calls the driver's regexp(); a "(?i)" prefix makes it case-insensitive).
std::optional<std::string> regex_operator(std::string_view op) {
  if (op == "~") return " REGEXP ";
  if (op == "~*") return " REGEXP '(?i)' || ";
  if (op == "!~") return " NOT REGEXP ";
  if (op == "!~*") return " NOT REGEXP '(?i)' || ";
  if (op == "~~" || op == "~~*") return " LIKE ";
  if (op == "!~~" || op == "!~~*") return " NOT LIKE ";
  return std::nullopt;
}

class PgRewriter {
 public:
  PgRewriter(std::string_view text, const RewriteOptions& options) : t_(text), o_(options) {
    Lexer lex(text, Dialect::sqlite);
    lex.set_pg_client();
    for (;;) {
      const Token tk = lex.next();
      if (tk.type == Tok::end) break;
      toks_.push_back(tk);
    }
    const size_t n = toks_.size();
    match_.assign(n, kNone);
    pstart_.assign(n, kNone);
    std::vector<size_t> open;
    for (size_t i = 0; i < n; ++i) {
      if (toks_[i].type == Tok::lparen || ch(i, '[')) {
        open.push_back(i);
      } else if ((toks_[i].type == Tok::rparen || ch(i, ']')) && !open.empty()) {
        const size_t o = open.back();
        if ((toks_[i].type == Tok::rparen) == (toks_[o].type == Tok::lparen)) {
          match_[i] = o;
          match_[o] = i;
          open.pop_back();
        }
      }
    }
  }

  std::optional<std::string> run() {
    for (size_t i = 0; i < toks_.size(); ++i)
      i = step(i);
    if (edits_.empty()) return std::nullopt;
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) {
      if (a.pos != b.pos) return a.pos < b.pos;
      if ((a.len > 0) != (b.len > 0)) return a.len == 0;
      return a.len == 0 && a.seq > b.seq;  // insertions: the outer (later) one first
    });
    std::string out;
    out.reserve(t_.size() + 64);
    size_t copied = 0;
    for (const Edit& e : edits_) {
      if (e.pos < copied) continue;  // inside a span already replaced
      out.append(t_.substr(copied, e.pos - copied));
      out.append(e.text);
      copied = e.pos + e.len;
    }
    out.append(t_.substr(copied));
    return out;
  }

 private:
  static constexpr size_t kNone = std::string_view::npos;

  struct Edit {
    size_t pos;
    size_t len;  // bytes replaced; 0 inserts
    std::string text;
    int seq;
  };

  std::string_view txt(size_t i) const { return text_of(t_, toks_[i]); }
  bool ch(size_t i, char c) const {
    return i < toks_.size() && toks_[i].type == Tok::other && toks_[i].end == toks_[i].begin + 1 &&
           t_[toks_[i].begin] == c;
  }
  bool word(size_t i, std::string_view w) const {
    return i < toks_.size() && toks_[i].type == Tok::word && iequals(txt(i), w);
  }
  bool is(size_t i, Tok type) const { return i < toks_.size() && toks_[i].type == type; }
  bool adjacent(size_t i) const {
    return i + 1 < toks_.size() && toks_[i].end == toks_[i + 1].begin;
  }
  /// Whether token i ends an operand (so a following '~' or '[' is binary).
  bool ends_operand(size_t i) const {
    if (i >= toks_.size()) return false;
    switch (toks_[i].type) {
      case Tok::word:
        return !is_sql_keyword(txt(i));
      case Tok::quoted:
      case Tok::string:
      case Tok::number:
      case Tok::marker:
      case Tok::rparen:
        return true;
      default:
        return ch(i, ']');
    }
  }
  /// An identifier's name: unquoted and lower-cased.
  std::string name_of(size_t i) const {
    std::string_view s = txt(i);
    if (toks_[i].type == Tok::quoted && s.size() >= 2)
      return std::string(s.substr(1, s.size() - 2));
    return lower(s);
  }

  void replace(size_t from, size_t to, std::string text) {
    edits_.push_back({from, to - from, std::move(text), seq_++});
  }
  void insert(size_t at, std::string text) { edits_.push_back({at, 0, std::move(text), seq_++}); }
  void replace_tokens(size_t first, size_t last, std::string text) {
    replace(toks_[first].begin, toks_[last].end, std::move(text));
  }

  /// Rewrites what starts at token i; answers the last token it consumed.
  size_t step(size_t i) {
    const Token& k = toks_[i];
    switch (k.type) {
      case Tok::word:
        return step_word(i);
      case Tok::quoted:
        pstart_[i] = qualified_start(i);
        return i;
      case Tok::string:
        if ((t_[k.begin] == 'E' || t_[k.begin] == 'e') && k.end > k.begin + 1 &&
            t_[k.begin + 1] == '\'') {
          replace(k.begin, k.end, sql_literal(e_string_value(txt(i))));
        } else if (t_[k.begin] == '$') {  // $tag$ body $tag$: the same text as a SQLite literal
          const std::string_view d = txt(i);
          const size_t tag = d.find('$', 1) + 1;
          const size_t body_end = d.size() >= 2 * tag ? d.size() - tag : d.size();
          replace(k.begin, k.end, sql_literal(d.substr(tag, body_end - tag)));
        }
        pstart_[i] = k.begin;
        return i;
      case Tok::number:
      case Tok::marker:
        pstart_[i] = k.begin;
        return i;
      case Tok::rparen: {
        const size_t o = match_[i];
        if (o == kNone) return i;
        if (pstart_[i] != kNone) return i;  // set by a rewrite that ends here
        if (o > 0 && is(o - 1, Tok::word) && !is_sql_keyword(txt(o - 1)) &&
            pstart_[o - 1] != kNone) {
          pstart_[i] = pstart_[o - 1];
        } else {
          pstart_[i] = toks_[o].begin;
        }
        return i;
      }
      case Tok::other:
        return step_other(i);
      default:
        return i;
    }
  }

  size_t qualified_start(size_t i) const {
    if (i >= 2 && ch(i - 1, '.') && (is(i - 2, Tok::word) || is(i - 2, Tok::quoted)) &&
        pstart_[i - 2] != kNone) {
      return pstart_[i - 2];
    }
    return toks_[i].begin;
  }

  size_t step_other(size_t i) {
    const Token& k = toks_[i];
    const std::string_view s = txt(i);
    if (s == "::") return cast(i);
    if ((s == "~" || s == "!") && i > 0 && ends_operand(i - 1)) {
      // ~ ~* !~ !~* ~~ ~~* !~~ !~~*: adjacent single-character tokens
      std::string op(s);
      size_t j = i;
      while (adjacent(j) && (ch(j + 1, '~') || ch(j + 1, '*')) && op.size() < 4) {
        op += txt(++j);
      }
      if (auto r = regex_operator(op)) {
        replace(k.begin, toks_[j].end, *r);
        return j;
      }
      return i;
    }
    if (s == "[" && i > 0 && match_[i] != kNone && pstart_[i - 1] != kNone) {
      // x[i] -> pg_array_get(x, i) (slices x[a:b] stay as they are)
      const size_t close = match_[i];
      insert(pstart_[i - 1], "pg_array_get(");
      replace(k.begin, k.end, ", ");
      replace(toks_[close].begin, toks_[close].end, ")");
      pstart_[close] = pstart_[i - 1];
    }
    return i;
  }

  size_t cast(size_t i) {
    const size_t start = i > 0 ? pstart_[i - 1] : kNone;
    size_t j = i + 1;
    if (word(j, "pg_catalog") && ch(j + 1, '.')) j += 2;
    if (!(is(j, Tok::word) || is(j, Tok::quoted))) return i;
    std::string type = name_of(j++);
    static constexpr std::array<std::string_view, 6> kMore = {"precision", "varying", "with",
                                                              "without",   "time",    "zone"};
    while (is(j, Tok::word) && std::find_if(kMore.begin(), kMore.end(), [&](std::string_view m) {
                                 return iequals(txt(j), m);
                               }) != kMore.end()) {
      type += ' ';
      type += lower(txt(j++));
    }
    if (type.rfind("time", 0) == 0 || type.rfind("timestamp", 0) == 0) type = "time";
    if (is(j, Tok::lparen) && match_[j] != kNone) j = match_[j] + 1;  // typmod
    bool array = false;
    while (ch(j, '[') && ch(j + 1, ']')) {
      array = true;
      j += 2;
    }
    const size_t last = j - 1;
    if (start == kNone) return last;  // no operand we can delimit: left to the backend
    const CastTarget target = sqlite_cast(type, array);
    const size_t from = toks_[i].begin, to = toks_[last].end;
    switch (target.kind) {
      case CastTarget::drop:
        replace(from, to, "");
        break;
      case CastTarget::cast:
        insert(start, "CAST(");
        replace(from, to, " AS " + std::string(target.name) + ")");
        break;
      case CastTarget::function:
        insert(start, std::string(target.name) + "(");
        replace(from, to, ")");
        break;
    }
    pstart_[last] = start;
    return last;
  }

  size_t step_word(size_t i) {
    const Token& k = toks_[i];
    const std::string w = lower(txt(i));
    const bool call = is(i + 1, Tok::lparen);
    const bool after_dot = i > 0 && ch(i - 1, '.') && !(word(i - 2, "pg_catalog") && call);
    pstart_[i] = qualified_start(i);
    if (w == "pg_catalog" && ch(i + 1, '.') && is(i + 2, Tok::word) && is(i + 3, Tok::lparen)) {
      replace(k.begin, toks_[i + 1].end, "");  // SQLite has no schema-qualified functions
      return i + 1;
    }
    if (w == "collate") return collate(i);
    if (w == "operator" && call && match_[i + 1] != kNone) {
      const size_t close = match_[i + 1];
      std::string op;
      for (size_t j = i + 2; j < close; ++j) {
        if (word(j, "pg_catalog") && ch(j + 1, '.')) {
          ++j;
          continue;
        }
        op += txt(j);
      }
      if (auto r = regex_operator(op)) {
        replace_tokens(i, close, *r);
      } else {
        replace_tokens(i, close, " " + op + " ");
      }
      return close;
    }
    if (after_dot) return i;
    if (w == "ilike") {
      replace(k.begin, k.end, "LIKE");  // SQLite's LIKE ignores ASCII case
      return i;
    }
    if ((w == "current_user" || w == "session_user" || w == "current_role") && !call) {
      replace(k.begin, k.end, sql_literal(o_.user));
      return i;
    }
    if (w == "now" && call && is(i + 2, Tok::rparen)) {
      replace_tokens(i, i + 2, "strftime('%Y-%m-%d %H:%M:%f+00','now')");
      pstart_[i + 2] = k.begin;
      return i + 2;
    }
    if (w == "json_build_object" && call) {
      replace(k.begin, k.end, "json_object");
      return i;
    }
    if (w == "array" && call && match_[i + 1] != kNone &&
        (word(i + 2, "select") || word(i + 2, "with") || word(i + 2, "values"))) {
      // ARRAY(subquery): its one column aggregated to an array literal
      const size_t close = match_[i + 1];
      replace_tokens(
          i, i + 1,
          "(SELECT pg_array_agg(column1) FROM (SELECT NULL AS column1 WHERE 0 UNION ALL ");
      replace(toks_[close].begin, toks_[close].end, "))");
      pstart_[close] = k.begin;
      return i + 1;
    }
    if (w == "array" && ch(i + 1, '[') && match_[i + 1] != kNone) {
      const size_t close = match_[i + 1];
      replace_tokens(i, i + 1, "pg_array(");
      replace(toks_[close].begin, toks_[close].end, ")");
      pstart_[close] = k.begin;
      return i + 1;
    }
    if ((w == "any" || w == "some" || w == "all") && call && match_[i + 1] != kNone) return any(i);
    if ((w == "unnest" || w == "generate_subscripts") && call && match_[i + 1] != kNone) {
      return set_returning(i, w == "unnest");
    }
    if (w == "generate_series" && call && match_[i + 1] != kNone) return series_alias(i);
    if ((w == "pg_partition_ancestors" || w == "pg_partition_tree") && call &&
        match_[i + 1] != kNone) {
      return no_partitions(i);
    }
    if (!call && !ch(i + 1, '.') && !series_.empty() &&
        std::find(series_at_.begin(), series_at_.end(), i) == series_at_.end() &&
        std::find(series_.begin(), series_.end(), w) != series_.end()) {
      replace(k.begin, k.end, std::string(txt(i)) + ".generate_series");
      return i;
    }
    if (w == "as" && is(i + 1, Tok::word) && word(i + 1, "default")) {
      replace(toks_[i + 1].begin, toks_[i + 1].end, "\"default\"");
      return i + 1;
    }
    return i;
  }

  size_t collate(size_t i) {
    size_t j = i + 1;
    if (word(j, "pg_catalog") && ch(j + 1, '.')) j += 2;
    if (!(is(j, Tok::word) || is(j, Tok::quoted))) return i;
    const std::string name = name_of(j);
    if (name == "default") {
      replace(toks_[i].begin, toks_[j].end, "");
    } else if (iequals(name, "c") || iequals(name, "posix")) {
      replace(toks_[i].begin, toks_[j].end, "COLLATE BINARY");
    }
    return j;
  }

  /// generate_series(...) s in FROM: in PostgreSQL the alias also names its
  /// column; SQLite's table-valued function names it generate_series, so a
  /// later bare `s` becomes s.generate_series.
  size_t series_alias(size_t i) {
    const size_t close = match_[i + 1];
    size_t alias = close + 1;
    if (word(alias, "as")) ++alias;
    if (!is(alias, Tok::word) || is_sql_keyword(txt(alias)) || ch(alias + 1, '(')) return i;
    for (std::string_view kw : {"where", "join", "left", "right", "inner", "cross", "on", "group",
                                "order", "limit", "natural", "full", "union"}) {
      if (word(alias, kw)) return i;
    }
    series_.push_back(lower(txt(alias)));
    series_at_.push_back(alias);
    return i;  // the arguments are rewritten as usual
  }

  /// pg_partition_ancestors(x) [WITH ORDINALITY] [AS] a[(c, ...)] in FROM:
  /// SQLite has no partitions, so an empty relation with those columns.
  size_t no_partitions(size_t i) {
    size_t before = i - 1;  // the token before the call, past a "pg_catalog."
    if (i >= 2 && ch(i - 1, '.') && word(i - 2, "pg_catalog")) before = i - 3;
    if (i == 0 || before >= toks_.size() ||
        !(word(before, "from") || word(before, "join") || toks_[before].type == Tok::comma)) {
      return i;
    }
    size_t j = match_[i + 1] + 1;
    if (word(j, "with") && word(j + 1, "ordinality")) j += 2;
    if (word(j, "as")) ++j;
    if (!is(j, Tok::word) || is_sql_keyword(txt(j))) return i;
    const std::string alias(txt(j));
    std::string cols;
    size_t last = j;
    if (is(j + 1, Tok::lparen) && match_[j + 1] != kNone) {
      last = match_[j + 1];
      for (size_t c = j + 2; c < last; ++c) {
        if (toks_[c].type == Tok::comma) continue;
        cols += (cols.empty() ? "NULL AS " : ", NULL AS ") + std::string(txt(c));
      }
    }
    if (cols.empty()) cols = "NULL AS relid";
    replace_tokens(i, last, "(SELECT " + cols + " WHERE 0) AS " + alias);
    return last;
  }

  /// x = ANY (array) -> x IN (SELECT value FROM json_each(pg_array_json(array))),
  /// x = ANY (subquery) -> x IN (subquery); <> ALL / != ALL -> NOT IN.
  size_t any(size_t i) {
    const bool all = word(i, "all");
    size_t op = kNone;
    if (!all && i >= 1 && ch(i - 1, '=')) op = i - 1;
    if (all && i >= 2 && adjacent(i - 2) &&
        ((ch(i - 2, '<') && ch(i - 1, '>')) || (ch(i - 2, '!') && ch(i - 1, '=')))) {
      op = i - 2;
    }
    if (op == kNone) return i;
    const std::string in = all ? "NOT IN" : "IN";
    const size_t close = match_[i + 1];
    if (word(i + 2, "select") || word(i + 2, "with") || word(i + 2, "values")) {
      replace(toks_[op].begin, toks_[i].end, in);
    } else {
      replace(toks_[op].begin, toks_[i + 1].end,
              in + " (SELECT value FROM json_each(pg_array_json(");
      replace(toks_[close].begin, toks_[close].end, ")))");
    }
    return i + 1;
  }

  /// unnest(a) / generate_subscripts(a, 1) in a select list: a json_each()
  /// joined to the select's FROM clause, one per array expression.
  size_t set_returning(size_t i, bool unnest) {
    const size_t open = i + 1, close = match_[open];
    size_t arg_end = close;  // the array expression ends before the first top-level comma
    for (size_t j = open + 1; j < close; ++j) {
      if (toks_[j].type == Tok::lparen || ch(j, '[')) {
        j = match_[j] == kNone ? j : match_[j];
      } else if (toks_[j].type == Tok::comma) {
        arg_end = j;
        break;
      }
    }
    if (arg_end == open + 1) return i;
    // The clause after this select level's FROM: where its tables end.
    size_t from = kNone, end = kNone;
    for (size_t j = close + 1; j < toks_.size(); ++j) {
      if (toks_[j].type == Tok::lparen || ch(j, '[')) {
        if (match_[j] == kNone) break;
        j = match_[j];
        continue;
      }
      if (toks_[j].type == Tok::rparen || toks_[j].type == Tok::semicolon) {
        end = j;
        break;
      }
      if (word(j, "from") && from == kNone) {
        from = j;
        continue;
      }
      for (std::string_view kw : {"where", "group", "having", "order", "limit", "union", "except",
                                  "intersect", "window"}) {
        if (word(j, kw)) end = j;
      }
      if (end != kNone) break;
    }
    if (from == kNone && end == kNone) return i;  // FROM-less and unterminated: left alone
    const size_t at = end == kNone ? t_.size() : toks_[end].begin;
    const std::string expr(
        t_.substr(toks_[open + 1].begin, toks_[arg_end - 1].end - toks_[open + 1].begin));
    std::string alias;
    for (const auto& [key, name] : srf_) {
      if (key.first == at && key.second == expr) alias = name;
    }
    if (alias.empty()) {
      alias = "_wp_srf" + std::to_string(srf_.size() + 1);
      srf_.push_back({{at, expr}, alias});
      insert(at, std::string(from == kNone ? " FROM " : ", ") + "json_each(pg_array_json(" + expr +
                     ")) AS " + alias + " ");
    }
    replace_tokens(i, close, unnest ? alias + ".value" : "(" + alias + ".key + 1)");
    pstart_[close] = toks_[i].begin;
    return close;
  }

  std::string_view t_;
  const RewriteOptions& o_;
  std::vector<Token> toks_;
  std::vector<size_t> match_;   // the index of the matching ( ) or [ ]
  std::vector<size_t> pstart_;  // where the operand ending at a token starts
  std::vector<Edit> edits_;
  std::vector<std::pair<std::pair<size_t, std::string>, std::string>> srf_;
  std::vector<std::string> series_;  // aliases of generate_series() in FROM
  std::vector<size_t> series_at_;    // where they are declared
  int seq_ = 0;
};

}  // namespace

namespace {

/// Whether a lower-cased word is one rewrite_pg_sql() may act on.
bool rewrite_word(std::string_view w) {
  switch (w.size()) {
    case 3:
      return w == "now" || w == "any" || w == "all";
    case 4:
      return w == "some";
    case 5:
      return w == "ilike" || w == "array";
    case 6:
      return w == "unnest";
    case 7:
      return w == "collate" || w == "default";
    case 8:
      return w == "operator";
    case 10:
      return w == "pg_catalog";
    case 12:
      return w == "current_user" || w == "session_user" || w == "current_role";
    case 15:
      return w == "generate_series";
    case 17:
      return w == "json_build_object";
    case 19:
      return w == "generate_subscripts";
    case 22:
      return w == "pg_partition_ancestors";
    default:
      return false;
  }
}

}  // namespace

bool may_need_pg_rewrite(std::string_view text) {
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c == ':' && i + 1 < n && text[i + 1] == ':') || c == '~' || c == '[') return true;
    if (!is_alpha(c) && c != '_') {
      ++i;
      continue;
    }
    char buf[24];
    size_t len = 0;
    size_t j = i;
    for (; j < n; ++j) {
      unsigned char d = static_cast<unsigned char>(text[j]);
      if (!is_alpha(d) && !is_digit(d) && d != '_') break;
      if (len < sizeof buf) buf[len++] = static_cast<char>(d >= 'A' && d <= 'Z' ? d + 32 : d);
    }
    if (j < n && text[j] == '\'' && j == i + 1 && (c == 'E' || c == 'e')) return true;
    if (j - i <= sizeof buf && rewrite_word(std::string_view(buf, len))) return true;
    i = j;
  }
  return false;
}

std::optional<std::string> rewrite_pg_sql(std::string_view text, Dialect d,
                                          const RewriteOptions& options) {
  if (d == Dialect::mysql) return rewrite_pg_sql_for_mysql(text, options);
  if (d != Dialect::sqlite || !may_need_pg_rewrite(text)) return std::nullopt;
  return PgRewriter(text, options).run();
}

std::string pg_string_value(std::string_view token) {
  if (!token.empty() && (token[0] == 'E' || token[0] == 'e')) return e_string_value(token);
  if (!token.empty() && token[0] == '$') {
    const size_t tag = token.find('$', 1) + 1;
    const size_t body_end = token.size() >= 2 * tag ? token.size() - tag : token.size();
    return std::string(token.substr(tag, body_end - tag));
  }
  std::string out;
  if (token.size() >= 2) token = token.substr(1, token.size() - 2);
  for (size_t i = 0; i < token.size(); ++i) {
    out.push_back(token[i]);
    if (token[i] == '\'' && i + 1 < token.size() && token[i + 1] == '\'') ++i;
  }
  return out;
}

std::vector<PgToken> pg_client_tokens(std::string_view text, Dialect d) {
  Lexer lex(text, d);
  lex.set_pg_client();
  std::vector<PgToken> out;
  for (;;) {
    const Token tk = lex.next();
    if (tk.type == Tok::end) break;
    out.push_back({static_cast<PgToken::Kind>(tk.type), tk.begin, tk.end});
  }
  return out;
}

}  // namespace wirepool::sql
