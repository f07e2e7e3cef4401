#pragma once
// SQLite driver internals: SQLite result codes -> db::Error with a precise
// SQLSTATE (DESIGN.md "Errors"; the table is in docs/sqlite.md).

#include <string_view>

#include "backends/db.hpp"

namespace wirepool::sqlite {

/// Maps an extended result code and sqlite3_errmsg() text. vendor_code is the
/// extended code; the message is SQLite's, unchanged, except for SQLITE_INTERRUPT,
/// which answers PostgreSQL's "canceling statement due to user request" (SQLite's
/// own text goes to detail).
db::Error map_error(int extended_code, std::string_view message);

}  // namespace wirepool::sqlite
