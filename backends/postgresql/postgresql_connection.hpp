#pragma once
// PostgreSQL driver internals: the connection, statement, reader and COPY
// stream objects behind the db handles.

#include "backends/db.hpp"

namespace wirepool::postgresql {

/// Connects (PQconnectStartParams and PQconnectPoll, waiting on the socket:
/// executor only; the whole attempt bounded by connect_timeout per host),
/// checks the TLS pins as soon as the handshake is done and before libpq
/// answers any authentication request, then switches libpq to non-blocking
/// mode. `o` must have passed validate_options. Failures answer
/// Errc::connection with the server's SQLSTATE (connect_error) or 08001.
db::Result<db::Connection> open_connection(const db::OpenOptions& o);

/// Driver::probe: connects as open_connection does (pins checked first),
/// asks pg_is_in_recovery() and the timeline, and closes; every wait bounded
/// by o.probe_timeout.
db::Result<db::HostProbe> probe_host(const db::OpenOptions& o);

/// Test hook: rows held by the result a reader of this driver holds now
/// (PQntuples of its current PGresult; 0 when none), or -1 for another driver's.
int held_rows_for_test(const db::RowsImpl& rows);

}  // namespace wirepool::postgresql
