#pragma once
// The admin console: the virtual database "wirepool" on the PostgreSQL
// listener, for users with `admin: true`, over the simple query protocol.
//
//   SHOW POOLS | CLIENTS | SERVERS | STATS | DATABASES | USERS | CONFIG | VERSION
//   PAUSE [db]  RESUME [db]  RECONNECT [db]  KILL db  RELOAD  SHUTDOWN
//
// Where PgBouncer 1.18 has the same command, the columns are its columns, in
// its order, with its meaning (so that pgbouncer_exporter and existing
// dashboards keep working); wirepool's own columns (driver, protocol) follow.
// docs/operations.md describes each column.

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/server.hpp"

namespace wirepool::server {

/// The answer to one admin command.
struct AdminResult {
  struct Column {
    std::string name;
    uint32_t type_oid;  ///< 25 text, 20 int8
  };
  std::vector<Column> columns;  ///< empty: a command without rows (no RowDescription)
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::string tag;       ///< CommandComplete tag: "SHOW", "PAUSE", ...
  std::string sqlstate;  ///< set: an error (with `error`) instead of a result
  std::string error;
};

/// The name of the admin console's virtual database.
inline constexpr std::string_view kAdminDatabase = "wirepool";

/// Runs one command (a single statement; a trailing semicolon is allowed).
/// A coroutine on the admin client's loop: SHOW CLIENTS visits every loop, and
/// PAUSE waits (bounded by shutdown_grace) until the paused pools' backends
/// are all released.
boost::asio::awaitable<AdminResult> run_admin(Server& server, std::string_view command);

/// The backend user a database entry connects as, from its connection string
/// (libpq key=value or URI, ODBC UID=/User=), empty when it names none (SQLite).
std::string backend_user(const config::Database& d);

}  // namespace wirepool::server
