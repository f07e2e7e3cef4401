// PostgreSQL SQL for MariaDB/MySQL (docs/catalog.md#rewrites-mariadb), on the
// token walk of token_walk.hpp: only where MariaDB has a construct of the same
// meaning; everything else reaches the backend as the client wrote it. And the
// catalog-query test (reads_pg_catalog), on the tokens of pg_tokens.hpp.

#include "sql/rewrite_mysql.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "sql/pg_tokens.hpp"
#include "sql/token_walk.hpp"

namespace wirepool::sql {

namespace {

using K = PgToken::Kind;
using detail::any_word;
using detail::lower;
using detail::lower_char;
using detail::Tok;

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

/// pg_ functions the MariaDB and T-SQL rewrites answer: no catalog query for their sake.
bool rewritten_function(std::string_view w) {
  return w == "pg_backend_pid" || w == "version" || w == "current_database" ||
         w == "current_schema" || w == "now";
}

/// pg_ functions that act on the session or on values, not on the catalog:
/// sent to the backend, which runs them (PostgreSQL behind a TDS front end)
/// or refuses them as its own unknown function.
bool session_function(std::string_view w) {
  return w.rfind("pg_sleep", 0) == 0 || w == "pg_typeof" || w == "pg_notify" ||
         w.find("advisory") != std::string_view::npos || w == "pg_cancel_backend" ||
         w == "pg_terminate_backend" || w == "pg_column_size";
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
            (rewritten_function(lower(txt(i + 2))) || session_function(lower(txt(i + 2))))) {
          i += 2;
          continue;
        }
        return true;
      }
      if (w.rfind("pg_", 0) == 0 && !(call && (rewritten_function(w) || session_function(w)))) {
        return true;
      }
      if (call && catalog_function(w)) return true;
    }
    return false;
  }
};

class MysqlRewriter final : public detail::TokenWalk {
 public:
  MysqlRewriter(std::string_view text, const RewriteOptions& options)
      : TokenWalk(text, Dialect::mysql, false), o_(options) {}

 private:
  std::string literal(std::string_view value) const override { return mysql_literal(value); }

  size_t step_word(size_t i, bool after_dot) override {
    const detail::Token& k = toks_[i];
    const std::string w = lower(txt(i));
    const bool call = is(i + 1, Tok::lparen);
    const bool empty_args = call && is(i + 2, Tok::rparen);
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
      return replace_empty_call(i, "'public'");
    }
    if (w == "current_timestamp" && !call) {
      replace(k.begin, k.end, "CURRENT_TIMESTAMP(6)");
      return i;
    }
    if (!empty_args) return i;
    if (w == "current_database") return replace_empty_call(i, "DATABASE()");
    if (w == "version") {
      return replace_empty_call(i, "CONCAT('PostgreSQL 15.0 (wirepool, MariaDB ', VERSION(), ')')");
    }
    if (w == "now") return replace_empty_call(i, "NOW(6)");
    if (w == "pg_backend_pid") return replace_empty_call(i, "CONNECTION_ID()");
    return i;
  }

  size_t cast(size_t i) override {
    const auto c = read_cast(i);
    if (!c) return i;
    const size_t last = c->last, start = c->start;
    if (c->array || start == kNone) return last;  // arrays: left to the backend
    const size_t from = toks_[i].begin, to = toks_[last].end;
    const std::string target = mysql_type(c->name, c->typmod);
    if (target == "-") {
      replace(from, to, "");  // the same value without the cast
    } else if (target == "bool") {
      // A literal in PostgreSQL's boolean input forms becomes TRUE / FALSE;
      // anything else keeps its value (MariaDB's booleans are integers).
      const auto v = bool_literal(i - 1);
      if (!is(i - 1, Tok::string) || pstart_[i - 1] != toks_[i - 1].begin) {
        replace(from, to, "");
      } else if (v) {
        replace(toks_[i - 1].begin, to, *v ? "TRUE" : "FALSE");
      } else {
        return last;  // PostgreSQL's error: left to the backend
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
};

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
  if (!detail::may_need_word_rewrite(text, false) || reads_pg_catalog(text, Dialect::mysql))
    return std::nullopt;
  return MysqlRewriter(text, options).run();
}

}  // namespace wirepool::sql
