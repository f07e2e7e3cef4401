#pragma once
// PostgreSQL driver internals: the backend's public-key pin, checked after
// libpq's own verification (sslmode=verify-full against the entry's CA) and
// before authentication (open_connection).

#include <libpq-fe.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::postgresql {

/// Lower-case hex SHA-256 of the server certificate's SubjectPublicKeyInfo
/// (DER), or nullopt when the connection has no TLS session or no certificate.
std::optional<std::string> peer_public_key_sha256(PGconn* conn);

/// The TLS handshake with the server is complete (PQsslInUse turns true when
/// libpq starts it, before the server's certificate has arrived).
bool tls_established(PGconn* conn);

/// Checks the connection's server key against `pins` (already normalized:
/// lower-case hex, no colons). nullopt when it matches one (or `pins` is
/// empty); else Errc::connection, 08001, naming the server's key hash.
std::optional<db::Error> check_pins(PGconn* conn, const std::vector<std::string>& pins);

}  // namespace wirepool::postgresql
