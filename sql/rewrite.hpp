#pragma once
// PostgreSQL SQL for backends of other dialects (docs/catalog.md), on the
// tokenizer the lexers of lexer.hpp share (tokenizer.hpp; implemented in rewrite.cpp).

#include <optional>
#include <string>
#include <string_view>

#include "sql/lexer.hpp"

namespace wirepool::sql {

struct RewriteOptions {
  std::string_view user;  ///< what current_user / session_user answer
};
/// Cheap and conservative (one pass, no lexing): false when rewrite_pg_sql()
/// would surely leave `text` as it is, as for plain SELECT/INSERT/UPDATE text
/// (no "::", ~, [, E'', $tag$ and no word the rewrite acts on).
bool may_need_pg_rewrite(std::string_view text);
/// Rewrites PostgreSQL syntax a PostgreSQL client sends into what a backend of
/// dialect `d` runs with the same meaning; nullopt when nothing changes (and for
/// dialects without rewrites: postgres, ansi). Text in strings, quoted
/// identifiers, comments and dollar quotes is never changed; $N markers keep
/// their numbers. For sqlite: `x::type` -> CAST(x AS ...) or a conversion
/// function, current_user, now(), E'...', ILIKE, ~ and OPERATOR(pg_catalog.~),
/// = ANY(...), ARRAY(...), ARRAY[...], x[i], pg_catalog.f(...), COLLATE
/// pg_catalog.default, unnest()/generate_subscripts() in a select list. The
/// conversion functions are the SQLite driver's (backends/sqlite/sqlite_catalog).
std::optional<std::string> rewrite_pg_sql(std::string_view text, Dialect d,
                                          const RewriteOptions& options);

namespace detail {
/// rewrite_pg_sql() for sqlite without may_need_pg_rewrite() first: what the
/// unit tests hold the quick scan to.
std::optional<std::string> rewrite_sqlite_unscanned(std::string_view text,
                                                    const RewriteOptions& options);
}  // namespace detail

}  // namespace wirepool::sql
