#pragma once
// MySQL driver internals: the connection, statement and reader objects behind
// the db handles.

#include "backends/db.hpp"
#include "backends/mysql/mysql_options.hpp"

namespace wirepool::mysql {

/// Connects with `info` (blocking; bounded by info.connect_timeout).
db::Result<db::Connection> open_connection(const ConnectInfo& info);

}  // namespace wirepool::mysql
