// The rewriters' shared token walk (token_walk.hpp).

#include "sql/token_walk.hpp"

#include <algorithm>
#include <array>

#include "sql/pg_tokens.hpp"

namespace wirepool::sql::detail {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

bool may_need_word_rewrite(std::string_view text, bool booleans) {
  return any_word(
             text,
             [&](std::string_view w, size_t end) {
               if (w == "e" && end < text.size() && text[end] == '\'') return true;  // E'...'
               if (w.rfind("current_", 0) == 0 || w.rfind("pg_", 0) == 0) return true;
               if (booleans && (w == "true" || w == "false")) return true;
               return w == "ilike" || w == "session_user" || w == "version" || w == "now";
             },
             [](size_t) { return true; }) ||
         [&] {
           for (size_t i = text.find('$'); i != std::string_view::npos; i = text.find('$', i + 1)) {
             const char c = i + 1 < text.size() ? text[i + 1] : '0';
             if (c == '$' || (ident_char(c) && !(c >= '0' && c <= '9'))) return true;  // $tag$
           }
           return false;
         }();
}

TokenWalk::TokenWalk(std::string_view text, Dialect d, bool brackets) : t_(text) {
  Lexer lex(text, d);
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
    if (toks_[i].type == Tok::lparen || (brackets && ch(i, '['))) {
      open.push_back(i);
    } else if ((toks_[i].type == Tok::rparen || (brackets && ch(i, ']'))) && !open.empty()) {
      const size_t o = open.back();
      if ((toks_[i].type == Tok::rparen) == (toks_[o].type == Tok::lparen)) {
        match_[i] = o;
        match_[o] = i;
        open.pop_back();
      }
    }
  }
}

std::optional<std::string> TokenWalk::run() {
  for (size_t i = 0; i < toks_.size(); ++i)
    i = step(i);
  if (edits_.empty()) return std::nullopt;
  return edits_.apply(t_);
}

std::string TokenWalk::name_of(size_t i) const {
  std::string_view s = txt(i);
  if (toks_[i].type == Tok::quoted && s.size() >= 2) return std::string(s.substr(1, s.size() - 2));
  return lower(s);
}

std::optional<bool> TokenWalk::bool_literal(size_t i) const {
  if (!is(i, Tok::string)) return std::nullopt;
  const std::string v = lower(pg_string_value(txt(i)));
  static constexpr std::array<std::string_view, 6> kTrue = {"t", "true", "y", "yes", "on", "1"};
  static constexpr std::array<std::string_view, 6> kFalse = {"f", "false", "n", "no", "off", "0"};
  if (std::find(kTrue.begin(), kTrue.end(), v) != kTrue.end()) return true;
  if (std::find(kFalse.begin(), kFalse.end(), v) != kFalse.end()) return false;
  return std::nullopt;
}

size_t TokenWalk::replace_empty_call(size_t i, std::string text) {
  replace_tokens(i, i + 2, std::move(text));
  pstart_[i + 2] = toks_[i].begin;
  return i + 2;
}

size_t TokenWalk::qualified_start(size_t i) const {
  if (i >= 2 && ch(i - 1, '.') && (is(i - 2, Tok::word) || is(i - 2, Tok::quoted)) &&
      pstart_[i - 2] != kNone) {
    return pstart_[i - 2];
  }
  return toks_[i].begin;
}

size_t TokenWalk::step(size_t i) {
  const Token& k = toks_[i];
  switch (k.type) {
    case Tok::word: {
      const bool call = is(i + 1, Tok::lparen);
      pstart_[i] = qualified_start(i);
      if (word(i, "pg_catalog") && ch(i + 1, '.') && is(i + 2, Tok::word) &&
          is(i + 3, Tok::lparen)) {
        replace(k.begin, toks_[i + 1].end, "");  // pg_catalog.f(): the functions, unqualified
        return i + 1;
      }
      return step_word(i, i > 0 && ch(i - 1, '.') && !(word(i - 2, "pg_catalog") && call));
    }
    case Tok::quoted:
      pstart_[i] = qualified_start(i);
      return i;
    case Tok::string: {
      const char c = t_[k.begin];
      if (((c == 'E' || c == 'e') && k.end > k.begin + 1 && t_[k.begin + 1] == '\'') || c == '$') {
        replace(k.begin, k.end, literal(pg_string_value(txt(i))));
      } else if (c == '\'') {
        plain_string(i);
      }
      pstart_[i] = k.begin;
      return i;
    }
    case Tok::number:
    case Tok::marker:
      pstart_[i] = k.begin;
      return i;
    case Tok::rparen: {
      const size_t o = match_[i];
      if (o == kNone || pstart_[i] != kNone) return i;  // set by a rewrite that ends here
      if (o > 0 && is(o - 1, Tok::word) && !is_sql_keyword(txt(o - 1)) && pstart_[o - 1] != kNone) {
        pstart_[i] = pstart_[o - 1];  // a call: the operand starts at its name
      } else {
        pstart_[i] = toks_[o].begin;
      }
      return i;
    }
    case Tok::other:
      return txt(i) == "::" ? cast(i) : step_other(i);
    default:
      return i;
  }
}

std::optional<TokenWalk::CastType> TokenWalk::read_cast(size_t i) const {
  CastType c;
  c.start = i > 0 ? pstart_[i - 1] : kNone;
  size_t j = i + 1;
  if (word(j, "pg_catalog") && ch(j + 1, '.')) j += 2;
  if (!(is(j, Tok::word) || is(j, Tok::quoted))) return std::nullopt;
  c.name = name_of(j++);
  static constexpr std::array<std::string_view, 6> kMore = {"precision", "varying", "with",
                                                            "without",   "time",    "zone"};
  while (is(j, Tok::word) && std::find_if(kMore.begin(), kMore.end(), [&](std::string_view m) {
                               return iequals(txt(j), m);
                             }) != kMore.end()) {
    c.name += ' ';
    c.name += lower(txt(j++));
  }
  if (is(j, Tok::lparen) && match_[j] != kNone) {
    c.typmod = std::string(t_.substr(toks_[j].begin, toks_[match_[j]].end - toks_[j].begin));
    j = match_[j] + 1;
  }
  while (ch(j, '[') && ch(j + 1, ']')) {
    c.array = true;
    j += 2;
  }
  c.last = j - 1;
  return c;
}

}  // namespace wirepool::sql::detail
