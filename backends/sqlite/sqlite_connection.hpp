#pragma once
// SQLite driver internals: the connection, statement and reader objects behind
// the db handles.

#include "backends/db.hpp"
#include "backends/sqlite/sqlite_options.hpp"

namespace wirepool::sqlite {

/// Opens the database `target` with validated `options`.
db::Result<db::Connection> open_connection(const Target& target, const Options& options);

}  // namespace wirepool::sqlite
