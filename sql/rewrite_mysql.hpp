#pragma once
// PostgreSQL SQL for MariaDB/MySQL backends (docs/catalog.md), and which
// statements are catalog queries that a backend without pg_catalog answers
// from an embedded catalog instead (backends/catalog_connection.hpp).

#include <optional>
#include <string>
#include <string_view>

#include "sql/rewrite.hpp"

namespace wirepool::sql {

/// rewrite_pg_sql() for Dialect::mysql: `x::type` casts MariaDB can express,
/// version(), current_database(), current_schema, current_user, session_user,
/// now(), current_timestamp, pg_backend_pid(), ILIKE, E'' and $$ strings.
/// nullopt when nothing changes, and for catalog queries (reads_pg_catalog()),
/// which are left to the catalog as the client wrote them.
std::optional<std::string> rewrite_pg_sql_for_mysql(std::string_view text,
                                                    const RewriteOptions& options);

/// True when `text` (a PostgreSQL client's, lexed as `d` reads it) references
/// a pg_catalog relation or function: a `pg_...` or `pg_catalog.` name outside
/// strings, quoted identifiers and comments (bar the functions the backend's
/// rewrites answer: pg_backend_pid(), pg_catalog.version(), ...), a catalog
/// function (format_type(), obj_description(), has_*_privilege(), to_reg*()...)
/// or a cast to a reg* type. information_schema alone is not: MariaDB and SQL
/// Server have their own.
bool reads_pg_catalog(std::string_view text, Dialect d);

}  // namespace wirepool::sql
