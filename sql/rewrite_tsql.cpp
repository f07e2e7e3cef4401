// PostgreSQL SQL for SQL Server (docs/catalog.md#rewrites-sql-server): only
// where T-SQL has a construct of the same meaning; everything else reaches
// the backend as the client wrote it.

#include "sql/rewrite_tsql.hpp"

#include "sql/rewrite_mysql.hpp"
#include "sql/token_walk.hpp"

#include <algorithm>

namespace wirepool::sql {

namespace {

using detail::lower;
using detail::Tok;

bool non_ascii(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

/// 'value' as a T-SQL literal (no backslash escapes in T-SQL); N'value' when it
/// holds characters beyond ASCII, which a '...' literal would read in the
/// database's code page (as '?' where it has none).
std::string tsql_literal(std::string_view value) {
  std::string out = non_ascii(value) ? "N'" : "'";
  for (char c : value) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  out.push_back('\'');
  return out;
}

/// What CAST(x AS ...) names PostgreSQL's `type(typmod)` in T-SQL: "-" to drop
/// the cast (the value is the same), "bool", "datetime:T" for a date/time type
/// T, or "" to leave it to the backend.
std::string tsql_type(const std::string& type, const std::string& typmod) {
  if (type == "int2" || type == "smallint") return "smallint";
  if (type == "int" || type == "int4" || type == "integer") return "int";
  if (type == "int8" || type == "bigint" || type == "oid" || type == "xid") return "bigint";
  // CAST AS decimal without a typmod is decimal(18,0): it would round.
  if (type == "numeric" || type == "decimal") return typmod.empty() ? "-" : "decimal" + typmod;
  if (type == "real" || type == "float4") return "real";
  if (type == "float8" || type == "double precision" || type == "float") return "float";
  if (type == "text" || type == "name" || type == "citext") return "nvarchar(max)";
  if (type == "varchar" || type == "character varying") {
    return typmod.empty() ? "nvarchar(max)" : "nvarchar" + typmod;
  }
  if (type == "bpchar" || type == "char" || type == "character") {
    return typmod.empty() ? (type == "bpchar" ? "nvarchar(max)" : "nchar(1)") : "nchar" + typmod;
  }
  if (type == "date") return "datetime:date";
  if (type == "timestamp" || type == "timestamp without time zone") return "datetime:datetime2(6)";
  if (type == "timestamptz" || type == "timestamp with time zone") {
    return "datetime:datetimeoffset(6)";
  }
  if (type == "time" || type == "time without time zone") return "datetime:time(6)";
  if (type == "bool" || type == "boolean") return "bool";
  if (type == "uuid") return "uniqueidentifier";
  if (type == "json" || type == "jsonb" || type == "unknown") return "-";
  return "";
}

class TsqlRewriter final : public detail::TokenWalk {
 public:
  TsqlRewriter(std::string_view text, const RewriteOptions& options)
      : TokenWalk(text, Dialect::tsql, false), o_(options) {}

 private:
  std::string literal(std::string_view value) const override { return tsql_literal(value); }

  void plain_string(size_t i) override {
    const bool prefixed = i > 0 && adjacent(i - 1) && (word(i - 1, "n"));
    if (!prefixed && non_ascii(txt(i))) insert(toks_[i].begin, "N");
  }

  size_t step_word(size_t i, bool after_dot) override {
    const detail::Token& k = toks_[i];
    const std::string w = lower(txt(i));
    const bool call = is(i + 1, Tok::lparen);
    const bool empty_args = call && is(i + 2, Tok::rparen);
    if (after_dot) return i;
    if (w == "ilike") {
      replace(k.begin, k.end, "LIKE");  // SQL Server's default collations ignore case
      return i;
    }
    if (!call) {
      if (w == "current_user" || w == "session_user" || w == "current_role") {
        replace(k.begin, k.end, tsql_literal(o_.user));
      } else if (w == "current_schema") {
        replace(k.begin, k.end, "'public'");
      } else if (w == "current_timestamp") {
        replace(k.begin, k.end, "SYSDATETIMEOFFSET()");
      } else if (w == "true" || w == "false") {
        // T-SQL has no boolean literals; bit is what the driver reads as bool.
        replace(k.begin, k.end, w == "true" ? "CAST(1 AS bit)" : "CAST(0 AS bit)");
      }
      return i;
    }
    if (!empty_args) return i;
    if (w == "current_schema") return replace_empty_call(i, "'public'");
    if (w == "current_database") return replace_empty_call(i, "DB_NAME()");
    if (w == "version") return replace_empty_call(i, "'PostgreSQL 15.0 (wirepool, SQL Server)'");
    if (w == "now") return replace_empty_call(i, "SYSDATETIMEOFFSET()");
    if (w == "pg_backend_pid") return replace_empty_call(i, "@@SPID");
    return i;
  }

  size_t cast(size_t i) override {
    const auto c = read_cast(i);
    if (!c) return i;
    const size_t last = c->last, start = c->start;
    if (c->array || start == kNone) return last;  // arrays: left to the backend
    const size_t from = toks_[i].begin, to = toks_[last].end;
    std::string target = tsql_type(c->name, c->typmod);
    // A literal operand: exactly one string token before the "::".
    const bool literal_operand = is(i - 1, Tok::string) && pstart_[i - 1] == toks_[i - 1].begin;
    if (target.rfind("datetime:", 0) == 0) {
      // A date/time literal is converted by SQL Server where it is used (an
      // INSERT's column, a comparison); other operands are CAST.
      target = literal_operand ? "-" : target.substr(9);
    }
    if (target == "-") {
      replace(from, to, "");
    } else if (target == "bool") {
      const auto v = literal_operand ? bool_literal(i - 1) : std::nullopt;
      if (v) {
        replace(toks_[i - 1].begin, to, *v ? "CAST(1 AS bit)" : "CAST(0 AS bit)");
      } else if (literal_operand) {
        return last;  // PostgreSQL's error: left to the backend
      } else {
        insert(start, "CAST(");
        replace(from, to, " AS bit)");
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

  const RewriteOptions& o_;
};

}  // namespace

std::optional<std::string> rewrite_pg_sql_for_tsql(std::string_view text,
                                                   const RewriteOptions& options) {
  if ((!detail::may_need_word_rewrite(text, true) && !non_ascii(text)) ||
      reads_pg_catalog(text, Dialect::tsql)) {
    return std::nullopt;
  }
  return TsqlRewriter(text, options).run();
}

}  // namespace wirepool::sql
