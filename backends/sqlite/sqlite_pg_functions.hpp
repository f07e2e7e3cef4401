#pragma once
// PostgreSQL's session-information functions registered on every SQLite
// connection, so the first queries of PostgreSQL tools and drivers run
// (issue #32): version(), current_database(), current_schema(), pg_backend_pid().

struct sqlite3;

namespace wirepool::sqlite {

/// Registers the functions on `db`; returns an SQLite result code.
/// current_database() is "main" and current_schema() "public", the names the
/// catalog gives SQLite's main database and its one schema.
int register_pg_functions(sqlite3* db);

}  // namespace wirepool::sqlite
