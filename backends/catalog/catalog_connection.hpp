#pragma once
// pg_catalog for backends that have none (MariaDB, SQL Server, ODBC to MariaDB
// and SQLite; docs/catalog.md#the-catalog-on-other-backends): a connection that runs a
// PostgreSQL client's catalog queries (sql::reads_pg_catalog) in an embedded
// in-memory SQLite holding the SQLite driver's pg_catalog, whose main database
// mirrors the backend's tables (columns, keys, indexes, foreign keys) as read
// from the backend's metadata. Every other call goes to the backend.

#include <chrono>

#include "backends/db.hpp"

namespace wirepool::db {

/// Where the mirror's schema comes from.
enum class CatalogSource : uint8_t {
  mysql_information_schema,      ///< MariaDB/MySQL information_schema of DATABASE()
  sqlite_schema,                 ///< SQLite (through ODBC): its sqlite_schema's DDL, replayed
  sqlserver_information_schema,  ///< SQL Server: the standard INFORMATION_SCHEMA views
};

/// How long a mirror filled from the backend is trusted without a DDL
/// statement on this connection in between (DDL elsewhere shows after it).
inline constexpr std::chrono::milliseconds kCatalogTtl{1000};

/// `inner` with the catalog in front; `inner` itself when the embedded
/// SQLite cannot be opened (the backend then answers as before).
Connection with_pg_catalog(Connection inner, CatalogSource source);

/// The backend's own connection under a with_pg_catalog() one; `conn` itself
/// for any other (a driver's accessors that look at its own type).
const ConnectionImpl* without_catalog(const ConnectionImpl* conn);

}  // namespace wirepool::db
