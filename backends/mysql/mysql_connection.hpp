#pragma once
// MySQL driver internals: the connection, statement and reader objects behind
// the db handles.

#include <chrono>

#include "backends/db.hpp"
#include "backends/mysql/mysql_options.hpp"

namespace wirepool::mysql {

/// Connects with `info` (blocking; bounded by info.connect_timeout).
db::Result<db::Connection> open_connection(const ConnectInfo& info);
/// Driver::probe: @@read_only, and a replica's Seconds_Behind_Master, within `timeout`.
db::Result<db::HostProbe> probe_host(const ConnectInfo& info, std::chrono::milliseconds timeout);

}  // namespace wirepool::mysql
