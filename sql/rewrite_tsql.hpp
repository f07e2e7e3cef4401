#pragma once
// PostgreSQL SQL for SQL Server backends (driver tds; docs/catalog.md#rewrites-sql-server),
// on the token walk the other rewriters share (token_walk.hpp).

#include <optional>
#include <string>
#include <string_view>

#include "sql/rewrite.hpp"

namespace wirepool::sql {

/// rewrite_pg_sql() for Dialect::tsql: `x::type` casts T-SQL can express,
/// version(), current_database(), current_schema, current_user, session_user,
/// now(), current_timestamp, pg_backend_pid(), true/false, ILIKE, E'' and $$
/// strings. nullopt when nothing changes, and for catalog queries
/// (reads_pg_catalog()), which are left to the catalog as the client wrote them.
std::optional<std::string> rewrite_pg_sql_for_tsql(std::string_view text,
                                                   const RewriteOptions& options);

}  // namespace wirepool::sql
