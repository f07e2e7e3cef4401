// The tokenizer of tokenizer.hpp.

#include "sql/tokenizer.hpp"

#include <algorithm>
#include <array>

namespace wirepool::sql::detail {

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

Token Lexer::next() {
  Token tok = next_token();
  const std::string_view w = t_.substr(tok.begin, tok.end - tok.begin);
  prev_operand_ =
      (tok.type == Tok::word && !(pg_client_ && is_sql_keyword(w) && !iequals(w, "array"))) ||
      tok.type == Tok::quoted || tok.type == Tok::string || tok.type == Tok::number ||
      tok.type == Tok::marker || tok.type == Tok::rparen ||
      (tok.type == Tok::other && at(tok.begin) == ']');
  return tok;
}

Token Lexer::next_token() {
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

void Lexer::skip_space() {
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

void Lexer::skip_line() {
  const size_t nl = t_.find('\n', pos_);
  pos_ = nl == std::string_view::npos ? t_.size() : nl + 1;
}

void Lexer::skip_block_comment() {
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

size_t Lexer::skip_quoted(size_t i, char quote, bool backslash) const {
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

size_t Lexer::skip_number(size_t i) const {
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

size_t Lexer::dollar_tag_end() const {
  size_t i = pos_ + 1;
  if (at(i) != '$' && !(is_alpha(at(i)) || at(i) == '_' || at(i) >= 0x80)) return 0;
  while (is_alpha(at(i)) || is_digit(at(i)) || at(i) == '_' || at(i) >= 0x80)
    ++i;
  return at(i) == '$' ? i : 0;
}

size_t Lexer::lex_dollar(Token& tok) {
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
  // other use for a '$' that starts a token). tsql keeps '$' as code, but for
  // a PostgreSQL client's text (a rewrite) it is PostgreSQL's $N and $tag$.
  if (d_ == Dialect::tsql && !pg_client_) return pos_ + 1;
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

size_t Lexer::lex_question(Token& tok) {
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

size_t Lexer::lex_sqlite_variable(Token& tok) {
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

size_t Lexer::lex_tsql_variable(Token& tok) {
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

}  // namespace wirepool::sql::detail
