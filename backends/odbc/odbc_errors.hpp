#pragma once
// ODBC diagnostics -> db::Error (DESIGN.md "Errors"; the table is in docs/odbc.md).
//
// The SQLSTATE an ODBC driver answers is either precise (psqlODBC passes
// PostgreSQL's own) or generic (23000, 42000, HY000, S1000). For the generic
// ones the native error code of the drivers verified here decides: MariaDB
// Connector/ODBC's native code is the server's errno (backends/mysql_errno),
// SQLite ODBC's is SQLite's primary result code with the detail in its
// message (backends/sqlite/sqlite_errors).

#include <cstdint>
#include <string_view>

#include "backends/db.hpp"
#include "backends/odbc/odbc_text.hpp"

namespace wirepool::odbc {

/// One diagnostic record as SQLGetDiagRecW answered it (converted to UTF-8).
struct Diagnostic {
  std::string sqlstate;  ///< five characters
  int64_t native = 0;
  std::string message;   ///< with the driver manager's "[unixODBC][driver]" prefixes
  bool missing = false;  ///< the call failed without a diagnostic record (HY000 then)
};

/// Maps the first diagnostic of a failed call. The message keeps the server's
/// text (the bracketed "[vendor][driver]" prefixes are removed).
db::Error map_diagnostic(Flavor flavor, const Diagnostic& d);

/// The message without the leading "[unixODBC][Driver]..." bracket groups.
std::string_view strip_prefixes(std::string_view message);

}  // namespace wirepool::odbc
