// PostgreSQL SQL for MariaDB/MySQL (docs/catalog.md#rewrites-mariadb), on the
// tokens of pg_tokens.hpp: only where MariaDB has a construct of the same
// meaning; everything else reaches the backend as the client wrote it.

#include "sql/rewrite_mysql.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "sql/pg_tokens.hpp"
#include "sql/text_edits.hpp"

namespace wirepool::sql {

namespace {

using K = PgToken::Kind;
constexpr size_t kNone = std::string_view::npos;

char lower_char(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = lower_char(c);
  return out;
}

bool icontains(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && lower_char(text[i + j]) == needle[j])
      ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

/// 'value' as a MariaDB literal (its default sql_mode reads backslash escapes).
std::string mysql_literal(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\0') {
      out += "\\0";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

/// pg_ functions the MariaDB rewrites answer: no catalog query for their sake.
bool rewritten_function(std::string_view w) {
  return w == "pg_backend_pid" || w == "version" || w == "current_database" ||
         w == "current_schema" || w == "now";
}

/// Functions that only make sense over pg_catalog.
bool catalog_function(std::string_view w) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "format_type", "obj_description", "col_description", "shobj_description",
      "quote_ident", "array_to_string", "current_setting", "set_config"};
  if (std::find(kNames.begin(), kNames.end(), w) != kNames.end()) return true;
  if (w.rfind("to_reg", 0) == 0) return true;
  return w.rfind("has_", 0) == 0 && w.size() > 10 && w.substr(w.size() - 10) == "_privilege";
}

/// Words before '(' that are SQL, not a function's name.
bool keyword_before_paren(std::string_view w) {
  static constexpr std::array<std::string_view, 24> kWords = {
      "in",   "exists", "any", "all",  "some", "values", "as",    "on",
      "from", "join",   "and", "or",   "not",  "select", "when",  "then",
      "else", "case",   "by",  "over", "with", "into",   "where", "using"};
  return std::find(kWords.begin(), kWords.end(), lower(w)) != kWords.end();
}

class Tokens {
 public:
  Tokens(std::string_view text, Dialect d) : t_(text), toks_(pg_client_tokens(text, d)) {}

 protected:
  std::string_view txt(size_t i) const {
    return t_.substr(toks_[i].begin, toks_[i].end - toks_[i].begin);
  }
  bool is(size_t i, K kind) const { return i < toks_.size() && toks_[i].kind == kind; }
  bool ch(size_t i, std::string_view op) const { return is(i, K::other) && txt(i) == op; }
  bool word(size_t i, std::string_view w) const {
    return is(i, K::word) && lower(txt(i)) == w;  // w is lower-case
  }

  std::string_view t_;
  std::vector<PgToken> toks_;
};

class CatalogDetector : Tokens {
 public:
  using Tokens::Tokens;

  bool run() const {
    for (size_t i = 0; i < toks_.size(); ++i) {
      if (ch(i, "::") && is(i + 1, K::word) && lower(txt(i + 1)).rfind("reg", 0) == 0) return true;
      if (!is(i, K::word) && !is(i, K::quoted)) continue;
      std::string w = lower(txt(i));
      if (is(i, K::quoted) && w.size() >= 2) w = w.substr(1, w.size() - 2);
      const bool call = is(i + 1, K::lparen);
      if (w == "pg_catalog") {
        if (ch(i + 1, ".") && is(i + 2, K::word) && is(i + 3, K::lparen) &&
            rewritten_function(lower(txt(i + 2)))) {
          i += 2;
          continue;
        }
        return true;
      }
      if (w.rfind("pg_", 0) == 0 && !(call && rewritten_function(w))) return true;
      if (call && catalog_function(w)) return true;
    }
    return false;
  }
};

class MysqlRewriter : Tokens {
 public:
  MysqlRewriter(std::string_view text, const RewriteOptions& options)
      : Tokens(text, Dialect::mysql), o_(options) {
    const size_t n = toks_.size();
    match_.assign(n, kNone);
    pstart_.assign(n, kNone);
    std::vector<size_t> open;
    for (size_t i = 0; i < n; ++i) {
      if (toks_[i].kind == K::lparen) {
        open.push_back(i);
      } else if (toks_[i].kind == K::rparen && !open.empty()) {
        match_[i] = open.back();
        match_[open.back()] = i;
        open.pop_back();
      }
    }
  }

  std::optional<std::string> run() {
    for (size_t i = 0; i < toks_.size(); ++i)
      i = step(i);
    if (edits_.empty()) return std::nullopt;
    return edits_.apply(t_);
  }

 private:
  void replace(size_t from, size_t to, std::string text) {
    edits_.replace(from, to, std::move(text));
  }
  void replace_tokens(size_t first, size_t last, std::string text) {
    replace(toks_[first].begin, toks_[last].end, std::move(text));
  }
  void insert(size_t at, std::string text) { edits_.insert(at, std::move(text)); }

  /// Where a qualified name ending at token i starts (a.b.c).
  size_t qualified_start(size_t i) const {
    if (i >= 2 && ch(i - 1, ".") && (is(i - 2, K::word) || is(i - 2, K::quoted)) &&
        pstart_[i - 2] != kNone) {
      return pstart_[i - 2];
    }
    return toks_[i].begin;
  }

  size_t step(size_t i) {
    const PgToken& k = toks_[i];
    switch (k.kind) {
      case K::word:
        return step_word(i);
      case K::quoted:
        pstart_[i] = qualified_start(i);
        return i;
      case K::string: {
        const char c = t_[k.begin];
        if (((c == 'E' || c == 'e') && k.end > k.begin + 1) || c == '$') {
          replace(k.begin, k.end, mysql_literal(pg_string_value(txt(i))));
        }
        pstart_[i] = k.begin;
        return i;
      }
      case K::number:
      case K::marker:
        pstart_[i] = k.begin;
        return i;
      case K::rparen: {
        const size_t o = match_[i];
        if (o == kNone || pstart_[i] != kNone) return i;
        if (o > 0 && is(o - 1, K::word) && !keyword_before_paren(txt(o - 1)) &&
            pstart_[o - 1] != kNone) {
          pstart_[i] = pstart_[o - 1];
        } else {
          pstart_[i] = toks_[o].begin;
        }
        return i;
      }
      case K::other:
        return txt(i) == "::" ? cast(i) : i;
      default:
        return i;
    }
  }

  /// A call `name()` at i rewritten to `text`.
  size_t empty_call(size_t i, std::string text) {
    replace_tokens(i, i + 2, std::move(text));
    pstart_[i + 2] = toks_[i].begin;
    return i + 2;
  }

  size_t step_word(size_t i) {
    const PgToken& k = toks_[i];
    const std::string w = lower(txt(i));
    const bool call = is(i + 1, K::lparen);
    const bool empty_args = call && is(i + 2, K::rparen);
    pstart_[i] = qualified_start(i);
    if (w == "pg_catalog" && ch(i + 1, ".") && is(i + 2, K::word) && is(i + 3, K::lparen)) {
      replace(k.begin, toks_[i + 1].end, "");  // the functions below, unqualified
      return i + 1;
    }
    const bool after_dot = i > 0 && ch(i - 1, ".") && !(word(i - 2, "pg_catalog") && call);
    if (after_dot) return i;
    if (w == "ilike") {
      replace(k.begin, k.end, "LIKE");  // MariaDB's default collations ignore case
      return i;
    }
    if ((w == "current_user" || w == "session_user" || w == "current_role") && !call) {
      replace(k.begin, k.end, mysql_literal(o_.user));
      return i;
    }
    if (w == "current_schema" && (!call || empty_args)) {
      if (!call) {
        replace(k.begin, k.end, "'public'");
        return i;
      }
      return empty_call(i, "'public'");
    }
    if (w == "current_timestamp" && !call) {
      replace(k.begin, k.end, "CURRENT_TIMESTAMP(6)");
      return i;
    }
    if (!empty_args) return i;
    if (w == "current_database") return empty_call(i, "DATABASE()");
    if (w == "version") {
      return empty_call(i, "CONCAT('PostgreSQL 15.0 (wirepool, MariaDB ', VERSION(), ')')");
    }
    if (w == "now") return empty_call(i, "NOW(6)");
    if (w == "pg_backend_pid") return empty_call(i, "CONNECTION_ID()");
    return i;
  }

  size_t cast(size_t i) {
    const size_t start = i > 0 ? pstart_[i - 1] : kNone;
    size_t j = i + 1;
    if (word(j, "pg_catalog") && ch(j + 1, ".")) j += 2;
    if (!is(j, K::word)) return i;
    std::string type = lower(txt(j++));
    static constexpr std::array<std::string_view, 6> kMore = {"precision", "varying", "with",
                                                              "without",   "time",    "zone"};
    while (is(j, K::word) && std::find(kMore.begin(), kMore.end(), lower(txt(j))) != kMore.end()) {
      type += ' ';
      type += lower(txt(j++));
    }
    std::string typmod;
    if (is(j, K::lparen) && match_[j] != kNone) {
      typmod = t_.substr(toks_[j].begin, toks_[match_[j]].end - toks_[j].begin);
      j = match_[j] + 1;
    }
    if (ch(j, "[")) return j - 1;  // arrays: left to the backend
    const size_t last = j - 1;
    if (start == kNone) return last;
    const size_t from = toks_[i].begin, to = toks_[last].end;
    const std::string target = mysql_type(type, typmod);
    if (target == "-") {
      replace(from, to, "");  // the same value without the cast
    } else if (target == "bool") {
      // A literal in PostgreSQL's boolean input forms becomes TRUE / FALSE;
      // anything else keeps its value (MariaDB's booleans are integers).
      if (!is(i - 1, K::string) || pstart_[i - 1] != toks_[i - 1].begin) {
        replace(from, to, "");
      } else {
        const std::string v = lower(pg_string_value(txt(i - 1)));
        static constexpr std::array<std::string_view, 6> kTrue = {"t",   "true", "y",
                                                                  "yes", "on",   "1"};
        static constexpr std::array<std::string_view, 6> kFalse = {"f",  "false", "n",
                                                                   "no", "off",   "0"};
        if (std::find(kTrue.begin(), kTrue.end(), v) != kTrue.end()) {
          replace(toks_[i - 1].begin, to, "TRUE");
        } else if (std::find(kFalse.begin(), kFalse.end(), v) != kFalse.end()) {
          replace(toks_[i - 1].begin, to, "FALSE");
        } else {
          return last;  // PostgreSQL's error: left to the backend
        }
      }
    } else if (!target.empty()) {
      insert(start, "CAST(");
      replace(from, to, " AS " + target + ")");
    } else {
      return last;
    }
    pstart_[last] = start;
    return last;
  }

  /// What CAST(x AS ...) names PostgreSQL's `type(typmod)` on MariaDB: "-" to
  /// drop the cast (the value is the same), "bool", or "" to leave it.
  static std::string mysql_type(const std::string& type, const std::string& typmod) {
    static constexpr std::array<std::string_view, 9> kInts = {
        "int", "int2", "int4", "int8", "integer", "smallint", "bigint", "oid", "xid"};
    if (std::find(kInts.begin(), kInts.end(), type) != kInts.end()) return "SIGNED";
    if (type == "numeric" || type == "decimal") return typmod.empty() ? "-" : "DECIMAL" + typmod;
    if (type == "real" || type == "float4") return "FLOAT";
    if (type == "float8" || type == "double precision" || type == "float") return "DOUBLE";
    if (type == "text" || type == "name" || type == "citext") return "CHAR";
    if (type == "varchar" || type == "character varying" || type == "bpchar") {
      return "CHAR" + typmod;
    }
    if (type == "char" || type == "character") return typmod.empty() ? "CHAR(1)" : "CHAR" + typmod;
    if (type == "date") return "DATE";
    if (type == "timestamp" || type == "timestamptz" || type == "timestamp without time zone" ||
        type == "timestamp with time zone") {
      return "DATETIME(6)";
    }
    if (type == "time" || type == "time without time zone") return "TIME(6)";
    if (type == "bool" || type == "boolean") return "bool";
    if (type == "json" || type == "jsonb" || type == "uuid" || type == "unknown") return "-";
    return "";
  }

  const RewriteOptions& o_;
  std::vector<size_t> match_;   // the index of the matching ( )
  std::vector<size_t> pstart_;  // where the operand ending at a token starts
  detail::TextEdits edits_;
};

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// Calls `f(word)` for each run of identifier characters of `text`, lower-cased
/// (at most 32 bytes of it), until `f` answers true; `on_colons` for each "::".
/// One pass, no allocation: the plain path's test.
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

/// Cheap: false when the MariaDB rewrites surely change nothing.
bool may_need_mysql_rewrite(std::string_view text) {
  return any_word(
             text,
             [&](std::string_view w, size_t end) {
               if (w == "e" && end < text.size() && text[end] == '\'') return true;  // E'...'
               if (w.rfind("current_", 0) == 0 || w.rfind("pg_", 0) == 0) return true;
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

/// Cheap: false when `text` surely names no catalog relation or function.
bool may_read_pg_catalog(std::string_view text) {
  return any_word(
      text,
      [](std::string_view w, size_t) {
        return w.rfind("pg_", 0) == 0 || w.rfind("to_reg", 0) == 0 || catalog_function(w);
      },
      [&](size_t at) {
        const std::string_view rest = text.substr(at + 2, 12);
        return icontains(rest, "reg");
      });
}

}  // namespace

bool reads_pg_catalog(std::string_view text, Dialect d) {
  return may_read_pg_catalog(text) && CatalogDetector(text, d).run();
}

std::optional<std::string> rewrite_pg_sql_for_mysql(std::string_view text,
                                                    const RewriteOptions& options) {
  if (!may_need_mysql_rewrite(text) || reads_pg_catalog(text, Dialect::mysql)) return std::nullopt;
  return MysqlRewriter(text, options).run();
}

}  // namespace wirepool::sql
