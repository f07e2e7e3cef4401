#pragma once
// MySQL / MariaDB server error numbers -> the portable errors and a precise
// SQLSTATE (DESIGN.md "Errors"). The server's own SQLSTATE is often generic
// (42000 for a syntax error, 23000 for every constraint, HY000): the errno
// decides. Shared by every path that reaches a MySQL-protocol server: the ODBC
// driver through MariaDB Connector/ODBC (its native error is the errno), and
// the mysql driver.

#include <cstdint>
#include <optional>
#include <string_view>

#include "backends/db.hpp"

namespace wirepool::mysql_errno {

struct Mapping {
  db::Errc code;
  std::string_view sqlstate;
};

/// The mapping of a server (or client library) error number, or nullopt for a
/// number the table does not know (the caller keeps the server's SQLSTATE).
std::optional<Mapping> lookup(int64_t error_number);

}  // namespace wirepool::mysql_errno
