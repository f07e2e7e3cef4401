#pragma once
// SQL Server driver internals: the connection, statement and reader objects
// behind the db handles.

#include <string>
#include <string_view>

#include "backends/db.hpp"
#include "backends/tds/tds_options.hpp"
#include "protocol/tds/codec.hpp"

namespace wirepool::tdsdrv {

/// Connects (TCP, TLS 1.3 verified against the CA and pins, PRELOGIN, LOGIN7)
/// with validated `options`. Failures answer Errc::connection (08001, or the
/// login error's SQLSTATE: 28000 for 18456, 3D000 for 4060).
db::Result<db::Connection> open_connection(const Options& options);

/// The target ("server:port") of a routing ENVCHANGE (type 20) from its raw
/// value, or "(unreadable)". The driver answers such a login Unsupported with it.
std::string routing_target(std::string_view raw);

/// The db::Kind and NativeType a result column of TDS type `t` has.
db::Column column_of(const tds::ColumnMeta& meta);

}  // namespace wirepool::tdsdrv
