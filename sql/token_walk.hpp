#pragma once
// The token walk the rewriters of a PostgreSQL client's SQL share (rewrite.cpp
// for SQLite, rewrite_mysql.cpp for MariaDB, rewrite_tsql.cpp for SQL Server):
// the tokens of tokenizer.hpp read as a PostgreSQL client writes them, the
// matching parentheses, where the operand that ends at each token starts (for
// CAST(x AS ...) around `x::type`), the strings, the cast's type name and the
// edits. A rewriter supplies what a word, an operator and a cast become in its
// dialect. Internal to sql/.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sql/text_edits.hpp"
#include "sql/tokenizer.hpp"

namespace wirepool::sql::detail {

/// `s` lower-cased (ASCII).
std::string lower(std::string_view s);

inline char lower_char(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}
inline bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// Calls `f(word, end)` for each run of identifier characters of `text`,
/// lower-cased (at most 32 bytes of it), until `f` answers true; `on_colons`
/// for each "::". One pass, no allocation: the plain path's test.
template <class F, class G>
bool any_word(std::string_view text, F f, G on_colons) {
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == ':' && i + 1 < n && text[i + 1] == ':') {
      if (on_colons(i)) return true;
      i += 2;
      continue;
    }
    if (!ident_char(c) || (c >= '0' && c <= '9')) {
      ++i;
      continue;
    }
    char buf[32];
    size_t len = 0, j = i;
    for (; j < n && ident_char(text[j]); ++j) {
      if (len < sizeof buf) buf[len++] = lower_char(text[j]);
    }
    if (f(std::string_view(buf, len), j)) return true;
    i = j;
  }
  return false;
}

/// Cheap: false when the MariaDB and T-SQL rewrites surely change nothing (no
/// "::", E'', $tag$, ilike, current_*, session_user, version, now, pg_*; and
/// with `booleans`, no true/false).
bool may_need_word_rewrite(std::string_view text, bool booleans);

class TokenWalk {
 public:
  virtual ~TokenWalk() = default;

  /// Walks the tokens once; the rewritten text, or nullopt when nothing changed.
  std::optional<std::string> run();

 protected:
  static constexpr size_t kNone = std::string_view::npos;

  /// `text` lexed as dialect `d` reads it plus PostgreSQL's E'', $$ and $N;
  /// `brackets`: [ ] pair as parentheses do (PostgreSQL's subscripts).
  TokenWalk(std::string_view text, Dialect d, bool brackets);

  /// What token i (a word, unquoted) becomes; answers the last token consumed.
  /// `after_dot`: the word is a qualified name's later part (t.now), which
  /// only a call qualified by pg_catalog escapes.
  virtual size_t step_word(size_t i, bool after_dot) = 0;
  /// Operators and punctuation other than "::" (default: unchanged).
  virtual size_t step_other(size_t i) { return i; }
  /// `x::type` at token i ("::"), after read_cast().
  virtual size_t cast(size_t i) = 0;
  /// A string value (of an E'...' or a $tag$ literal) as the dialect's literal.
  virtual std::string literal(std::string_view value) const = 0;
  /// A plain '...' string at token i (default: unchanged).
  virtual void plain_string(size_t) {}

  /// The target of `x::type` at token i: the type's name (lower-cased, its
  /// words joined: "double precision"; pg_catalog. dropped), its typmod's text
  /// ("(10,2)"), whether it is an array type, the last token of the cast, and
  /// where its operand starts (kNone when the walk cannot delimit it).
  struct CastType {
    std::string name;
    std::string typmod;
    bool array = false;
    size_t last = kNone;
    size_t start = kNone;
  };
  /// nullopt when no type name follows the "::".
  std::optional<CastType> read_cast(size_t i) const;
  std::string_view txt(size_t i) const { return text_of(t_, toks_[i]); }
  bool is(size_t i, Tok type) const { return i < toks_.size() && toks_[i].type == type; }
  /// Token i is the one-character operator `c`.
  bool ch(size_t i, char c) const {
    return is(i, Tok::other) && toks_[i].end == toks_[i].begin + 1 && t_[toks_[i].begin] == c;
  }
  bool word(size_t i, std::string_view w) const { return is(i, Tok::word) && iequals(txt(i), w); }
  /// Tokens i and i + 1 touch (no space or comment between them).
  bool adjacent(size_t i) const {
    return i + 1 < toks_.size() && toks_[i].end == toks_[i + 1].begin;
  }
  /// The value of the string literal at token i when it is one of
  /// PostgreSQL's boolean input forms ('t', 'yes', 'on', '1', 'f', ...).
  std::optional<bool> bool_literal(size_t i) const;
  /// An identifier's name: unquoted (its quotes removed) or lower-cased.
  std::string name_of(size_t i) const;

  void replace(size_t from, size_t to, std::string text) {
    edits_.replace(from, to, std::move(text));
  }
  void insert(size_t at, std::string text) { edits_.insert(at, std::move(text)); }
  void replace_tokens(size_t first, size_t last, std::string text) {
    replace(toks_[first].begin, toks_[last].end, std::move(text));
  }
  /// A call `name()` at i (tokens i..i+2) replaced by `text`, itself an operand.
  size_t replace_empty_call(size_t i, std::string text);

  std::string_view t_;
  std::vector<Token> toks_;
  std::vector<size_t> match_;  ///< the index of the matching ( ) (or [ ]), or kNone
  /// Where the operand that ends at a token starts (kNone: not an operand's
  /// end); a rewrite that wraps an operand sets it at its last token, so an
  /// outer cast wraps the whole.
  std::vector<size_t> pstart_;

 private:
  size_t step(size_t i);
  size_t qualified_start(size_t i) const;

  TextEdits edits_;
};

}  // namespace wirepool::sql::detail
