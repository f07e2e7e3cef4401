// The rewrites of rewrite.hpp: PostgreSQL SQL for SQLite (docs/catalog.md), on
// the tokenizer of tokenizer.hpp.

#include "sql/rewrite.hpp"
#include "sql/pg_tokens.hpp"
#include "sql/rewrite_mysql.hpp"
#include "sql/rewrite_tsql.hpp"
#include "sql/token_walk.hpp"
#include "sql/utf8.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <map>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wirepool::sql {

using namespace detail;

namespace {

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

class PgRewriter final : public TokenWalk {
 public:
  PgRewriter(std::string_view text, const RewriteOptions& options)
      : TokenWalk(text, Dialect::sqlite, true), o_(options) {}

 private:
  std::string literal(std::string_view value) const override { return sql_literal(value); }

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

  size_t step_other(size_t i) override {
    const Token& k = toks_[i];
    const std::string_view s = txt(i);
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

  size_t cast(size_t i) override {
    const auto c = read_cast(i);
    if (!c) return i;
    std::string type = c->name;
    if (type.rfind("time", 0) == 0 || type.rfind("timestamp", 0) == 0) type = "time";
    const size_t last = c->last, start = c->start;
    if (start == kNone) return last;  // no operand we can delimit: left to the backend
    const bool array = c->array;
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

  size_t step_word(size_t i, bool after_dot) override {
    const Token& k = toks_[i];
    const std::string w = lower(txt(i));
    const bool call = is(i + 1, Tok::lparen);
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
      return replace_empty_call(i, "strftime('%Y-%m-%d %H:%M:%f+00','now')");
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

  const RewriteOptions& o_;
  std::vector<std::pair<std::pair<size_t, std::string>, std::string>> srf_;
  std::vector<std::string> series_;  // aliases of generate_series() in FROM
  std::vector<size_t> series_at_;    // where they are declared
};

}  // namespace

namespace {

/// The words rewrite_pg_sql() may act on (PgRewriter::step_word, TokenWalk::step).
constexpr std::array<std::string_view, 19> kRewriteWords = {
    "now",
    "any",
    "all",
    "some",
    "ilike",
    "array",
    "unnest",
    "collate",
    "default",
    "operator",
    "pg_catalog",
    "current_user",
    "session_user",
    "current_role",
    "generate_series",
    "json_build_object",
    "generate_subscripts",
    "pg_partition_ancestors",
    "pg_partition_tree",
};

/// Byte classes of the quick scan.
enum ScanClass : uint8_t { kOther, kLetter, kDigit, kMark };
constexpr std::array<uint8_t, 256> kScanClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c)
    t[c] = t[c - 32] = kLetter;
  t['_'] = kLetter;
  for (int c = '0'; c <= '9'; ++c)
    t[c] = kDigit;
  t[':'] = t['~'] = t['['] = t['$'] = kMark;
  return t;
}();

/// Per first letter (its code | 0x20, minus 'a'; '_' is 30): a bit per length
/// of the rewrite words that start with it, so most words are passed over
/// without a comparison.
constexpr std::array<uint32_t, 32> kWordLengths = [] {
  std::array<uint32_t, 32> t{};
  for (std::string_view w : kRewriteWords)
    t[(w[0] | 0x20) - 'a'] |= 1u << w.size();
  return t;
}();

/// Per first letter (as kWordLengths), the rewrite words that start with it.
constexpr std::array<std::array<std::string_view, 3>, 32> kWordsByLetter = [] {
  std::array<std::array<std::string_view, 3>, 32> t{};
  for (std::string_view w : kRewriteWords) {
    for (auto& slot : t[(w[0] | 0x20) - 'a']) {
      if (slot.empty()) {
        slot = w;
        break;
      }
    }
  }
  return t;
}();

/// Whether the run of letters and '_' at p is a rewrite word (any case).
bool rewrite_word(const unsigned char* p, size_t len) {
  for (std::string_view w : kWordsByLetter[(p[0] | 0x20) - 'a']) {
    if (w.size() != len) continue;
    size_t i = 1;
    while (i < len && (p[i] | 0x20) == (static_cast<unsigned char>(w[i]) | 0x20))
      ++i;  // letters and '_' only: | 0x20 folds case and keeps '_' apart
    if (i == len) return true;
  }
  return false;
}

/// At a byte that may start a rewrite (kMark) at i: does it?
bool mark_starts_rewrite(const unsigned char* p, size_t n, size_t i) {
  const unsigned char c = p[i], next = i + 1 < n ? p[i + 1] : 0;
  if (c == '~' || c == '[') return true;
  if (c == ':') return next == ':';
  if (c == '$') return next == '$' || kScanClass[next] == kLetter;  // $$, $tag$ (not $1)
  // E'...': a lone e before the quote (a digit before it may end a number).
  return c == '\'' && i >= 1 && (p[i - 1] | 0x20) == 'e' &&
         (i < 2 || kScanClass[p[i - 2]] != kLetter);
}

/// A word of `len` bytes at p: one the rewrite acts on, by its first letter and
/// length first.
bool candidate_word(const unsigned char* p, size_t len) {
  return len < 32 && (kWordLengths[(p[0] | 0x20) - 'a'] >> len & 1u) && rewrite_word(p, len);
}

#if defined(__SSE2__)
/// Bit i: byte i of the 64 at p is a letter or '_' (alpha), or one of
/// : ~ [ $ ' (mark).
struct BlockMasks {
  uint64_t alpha = 0;
  uint64_t mark = 0;
};
BlockMasks block_masks(const unsigned char* p, size_t len) {
  BlockMasks m;
  const auto eq = [](__m128i c, char x) { return _mm_cmpeq_epi8(c, _mm_set1_epi8(x)); };
  for (size_t k = 0; k < 4 && 16 * k < len; ++k) {
    __m128i c;
    if (len - 16 * k >= 16) {
      c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    } else {  // the last bytes, zero-padded (zero is neither)
      alignas(16) unsigned char last[16] = {};
      std::memcpy(last, p + 16 * k, len - 16 * k);
      c = _mm_load_si128(reinterpret_cast<const __m128i*>(last));
    }
    // Signed compares: bytes >= 0x80 are negative, so neither letters nor marks.
    const __m128i low = _mm_or_si128(c, _mm_set1_epi8(0x20));
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(low, _mm_set1_epi8('a' - 1)),
                                         _mm_cmplt_epi8(low, _mm_set1_epi8('z' + 1)));
    const __m128i alpha = _mm_or_si128(letter, eq(c, '_'));
    const __m128i mark =
        _mm_or_si128(_mm_or_si128(eq(c, ':'), eq(c, '~')),
                     _mm_or_si128(_mm_or_si128(eq(c, '['), eq(c, '$')), eq(c, '\'')));
    m.alpha |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(alpha))) << (16 * k);
    m.mark |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(mark))) << (16 * k);
  }
  return m;
}
#endif

}  // namespace

// 64 bytes at a time (SSE2): masks of the letters and of the bytes that may
// start a rewrite; a word (a run of letters and '_', digits ending it: the
// rewrite's words have none) is compared only when a rewrite word has its first
// letter and length. Conservative: bytes the lexer reads as identifier
// characters (digits, >= 0x80) only split words here.
bool may_need_pg_rewrite(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
#if defined(__SSE2__)
  bool prev_alpha = false;  // the byte before the block
  for (size_t base = 0; base < n; base += 64) {
    const BlockMasks m = block_masks(p + base, std::min<size_t>(64, n - base));
    for (uint64_t marks = m.mark; marks != 0; marks &= marks - 1) {
      if (mark_starts_rewrite(p, n, base + static_cast<size_t>(std::countr_zero(marks)))) {
        return true;
      }
    }
    uint64_t starts = m.alpha & ~((m.alpha << 1) | (prev_alpha ? 1u : 0u));
    prev_alpha = (m.alpha >> 63) != 0;
    for (; starts != 0; starts &= starts - 1) {
      const int s = std::countr_zero(starts);
      size_t len = static_cast<size_t>(std::countr_zero(~(m.alpha >> s)));  // within the block
      if (s + len == 64) {  // it goes on into the next block
        size_t j = base + 64;
        while (j < n && kScanClass[p[j]] == kLetter)
          ++j;
        len = j - base - static_cast<size_t>(s);
      }
      if (candidate_word(p + base + s, len)) return true;
    }
  }
  return false;
#else
  for (size_t i = 0; i < n;) {
    const uint8_t k = kScanClass[p[i]];
    if (k == kMark && mark_starts_rewrite(p, n, i)) return true;
    if (k != kLetter) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < n && kScanClass[p[j]] == kLetter)
      ++j;
    if (candidate_word(p + i, j - i)) return true;
    i = j;
  }
  return false;
#endif
}

namespace detail {

std::optional<std::string> rewrite_sqlite_unscanned(std::string_view text,
                                                    const RewriteOptions& options) {
  return PgRewriter(text, options).run();
}

}  // namespace detail

std::optional<std::string> rewrite_pg_sql(std::string_view text, Dialect d,
                                          const RewriteOptions& options) {
  if (d == Dialect::mysql) return rewrite_pg_sql_for_mysql(text, options);
  if (d == Dialect::tsql) return rewrite_pg_sql_for_tsql(text, options);
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
