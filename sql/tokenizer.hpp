#pragma once
// The tokenizer under the SQL lexers (lexer.cpp) and the rewrites (rewrite.cpp):
// one lexer parameterised by dialect that separates code from what is not
// (literals, quoted identifiers, comments, dollar-quoted bodies); it never
// validates SQL. An unterminated literal or comment runs to the end of the
// text, as the backends' own lexers treat it (they then report the error).
// Internal to sql/: callers outside it use lexer.hpp.

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sql/lexer.hpp"

namespace wirepool::sql::detail {

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

inline bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
inline bool is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// First character of an unquoted identifier. Bytes >= 0x80 (UTF-8) count as letters.
inline bool is_ident_start(unsigned char c, Dialect d) {
  if (is_alpha(c) || c == '_' || c >= 0x80) return true;
  return d == Dialect::tsql && c == '#';  // #temp tables
}

/// Later characters of an unquoted identifier ('$' is allowed after the first
/// character in PostgreSQL, SQLite and MySQL; T-SQL also allows @ and #).
inline bool is_ident_char(unsigned char c, Dialect d) {
  if (is_alpha(c) || is_digit(c) || c == '_' || c >= 0x80) return true;
  if (c == '$') return d != Dialect::ansi;
  if (c == '@' || c == '#') return d == Dialect::tsql;
  return false;
}

/// SQLite's IdChar(): what may follow a variable's sigil.
inline bool sqlite_id_char(unsigned char c) {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || c >= 0x80;
}

/// Parses a run of digits with saturation at INT_MAX.
inline int parse_number(std::string_view digits) {
  int64_t v = 0;
  for (char c : digits) {
    v = v * 10 + (c - '0');
    if (v > INT_MAX) return INT_MAX;
  }
  return static_cast<int>(v);
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x >= 'a' && x <= 'z') x = static_cast<unsigned char>(x - 32);
    if (y >= 'a' && y <= 'z') y = static_cast<unsigned char>(y - 32);
    if (x != y) return false;
  }
  return true;
}

inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

/// Words before '(' that are SQL, not a function's name; words that end no operand.
bool is_sql_keyword(std::string_view w);

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
  Token next();

 private:
  Token next_token();

 public:
  size_t pos() const { return pos_; }

 private:
  unsigned char at(size_t i) const { return i < t_.size() ? static_cast<unsigned char>(t_[i]) : 0; }

  void skip_space();

  void skip_line();

  /// /* ... */, nested in PostgreSQL and T-SQL.
  void skip_block_comment();

  /// Skips a quoted run starting after its opening quote; a doubled quote is one
  /// quote, and with `backslash` a backslash escapes the next byte. Answers the
  /// index after the closing quote (or the end of text).
  size_t skip_quoted(size_t i, char quote, bool backslash) const;

  size_t skip_number(size_t i) const;

  /// The index of the closing '$' of a $tag$ opening at pos_, or 0.
  size_t dollar_tag_end() const;

  size_t lex_dollar(Token& tok);

  size_t lex_question(Token& tok);

  /// SQLite's variables $name, :name, @name, following its tokenizer: any run of
  /// identifier characters, with "::" continuations and a TCL "(...)" suffix.
  /// $ followed by digits is $N. A sigil with no identifier character is not a
  /// marker.
  size_t lex_sqlite_variable(Token& tok);

  /// T-SQL @name; @@name is a global variable, not a marker.
  size_t lex_tsql_variable(Token& tok);

  std::string_view t_;
  Dialect d_;
  bool client_markers_ = false;    // tsql: also ? and $N (find_client_markers)
  bool backslash_quotes_ = false;  // '...' with backslash escapes (split_statements)
  bool pg_client_ = false;         // set_pg_client()
  bool prev_operand_ = false;      // the last token ends an operand
  size_t pos_ = 0;
  int exec_depth_ = 0;  // inside MySQL /*! ... */
};

inline std::string_view text_of(std::string_view text, const Token& t) {
  return text.substr(t.begin, t.end - t.begin);
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && is_space(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

}  // namespace wirepool::sql::detail
