#pragma once
// MySQL driver internals: MySQL/MariaDB error numbers -> db::Error with a
// precise SQLSTATE (DESIGN.md "Errors"; the table is in docs/mysql.md).
//
// The errno decides: the server's own SQLSTATE is often generic (42000 for a
// syntax error, 23000 for every integrity error, HY000 for a CHECK violation
// or a NOWAIT lock). Numbers the table does not know keep the server's
// SQLSTATE when it is a precise one, else answer 42000 / HY000 classes as
// Errc::invalid_query.

#include <string_view>

#include "backends/db.hpp"

namespace wirepool::mysql {

/// Maps mysql_errno() / mysql_sqlstate() / mysql_error() (or the mysql_stmt_*
/// equivalents). vendor_code is the errno; the message is the server's.
db::Error map_error(unsigned errnum, std::string_view sqlstate, std::string_view message);

/// True for the client errors that mean the connection is gone (2006, 2013, ...).
bool is_connection_lost(unsigned errnum);

}  // namespace wirepool::mysql
