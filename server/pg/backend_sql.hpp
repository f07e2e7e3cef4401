#pragma once
// Where the PostgreSQL front end rewrites a client's SQL for a backend of
// another dialect (docs/catalog.md): simple queries and Parse, once per
// statement; PostgreSQL backends get the client's bytes unchanged.

#include <string>
#include <string_view>

#include "server/session.hpp"
#include "sql/rewrite.hpp"

namespace wirepool::server {

/// `text` as the session's backend runs it: rewritten into `storage` by
/// sql::rewrite_pg_sql(), or `text` itself when nothing changes.
inline std::string_view pg_sql_for_backend(Session& session, std::string_view text,
                                           std::string& storage) {
  if (session.pool().pg_native()) return text;
  auto rewritten = sql::rewrite_pg_sql(text, session.pool().dialect(), {session.user().name});
  if (!rewritten) return text;
  storage = std::move(*rewritten);
  return storage;
}

}  // namespace wirepool::server
