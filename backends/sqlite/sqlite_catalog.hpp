#pragma once
// pg_catalog and information_schema for a SQLite connection (docs/catalog.md):
// two in-memory databases attached as `pg_catalog` and `information_schema`,
// whose tables are filled from the main database's sqlite_schema and pragmas,
// again whenever its schema changed; and the SQL functions PostgreSQL tools
// call on them (format_type(), pg_get_indexdef(), regexp(), ...), with the
// conversion functions that sql::rewrite_pg_sql() writes (pg_regclass(), ...).

#include <cstdint>
#include <string_view>

struct sqlite3;

namespace wirepool::sqlite {

/// What a connection's catalog holds.
struct Catalog {
  bool attached = false;
  int64_t filled_version = -1;  ///< main's schema_version the tables were filled from
  bool filled_in_tx = false;    ///< filled inside a transaction that may yet roll back
};

/// Attaches the two catalog databases, creates their tables and fills the
/// rows that never change (types, namespaces, the database, the role), and
/// registers the catalog functions. An SQLite result code.
int attach_catalog(sqlite3* db, Catalog& catalog);

/// Cheap: false when `sql` cannot read a catalog relation (no "pg_" and no
/// "information_schema", case-insensitive).
bool mentions_catalog(std::string_view sql);

/// Fills the tables from the main database again if its schema changed since
/// they were filled. An SQLite result code (the message is the connection's).
int refresh_catalog(sqlite3* db, Catalog& catalog);

}  // namespace wirepool::sqlite
