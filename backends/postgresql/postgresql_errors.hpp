#pragma once
// PostgreSQL driver internals: the server's errors (SQLSTATE, message, detail,
// hint) in the contract's terms. PostgreSQL passes its own SQLSTATE; the
// portable Errc follows from its class (docs/postgresql.md "Errors").

#include <libpq-fe.h>

#include <string>
#include <string_view>

#include "backends/db.hpp"

namespace wirepool::postgresql {

/// The portable error for a SQLSTATE: 23 constraint; 40, 55 and 57014 busy;
/// 08 and 57P0x (the server is going away) connection; 0A unsupported; the
/// rest (42, 22, 2B, 25, 26, XX, ...) invalid_query.
db::Errc errc_for_sqlstate(std::string_view sqlstate);

/// An error with PostgreSQL's fields; the Errc from the SQLSTATE.
/// The fields of `r` beyond severity, SQLSTATE, message, detail and hint, as
/// db::Error::fields has them.
std::string other_fields(const PGresult* r);
db::Error make_error(std::string sqlstate, std::string message, std::string detail = {},
                     std::string hint = {});

/// The error a failed PGresult reports. Severity FATAL or PANIC makes it
/// Errc::connection whatever the class; an ERROR of class 08 (the session
/// survives: 08P01 for a malformed parameter) is invalid_query. When the connection is gone
/// (`connection_bad`), the error is Errc::connection: SQLSTATE 08006 unless
/// the server sent its own (57P01 for pg_terminate_backend), and libpq's own
/// message when the server sent none.
db::Error error_from_result(const PGresult* result, bool connection_bad,
                            std::string_view connection_message);

/// Errc::connection, 08006, with libpq's message (trailing newline removed).
db::Error connection_lost(std::string_view libpq_message);

/// The error of a failed connection attempt from libpq's message built with
/// PQERRORS_VERBOSE: the server's SQLSTATE when it refused the connection
/// (57P03 starting up or shutting down, 28P01, 28000, 3D000, 53300, ...),
/// else 08001 (libpq's own: unreachable, TLS, timeout). The message loses
/// the code and the LOCATION lines. Always Errc::connection.
db::Error connect_error(std::string_view verbose_message);

/// Errc::busy, 55000: a Rows or COPY stream still holds the connection.
db::Error busy_error();

/// Errc::would_block (the caller waits for io_interest() and repeats the call).
db::Error would_block_error();

/// libpq's message without its trailing newlines.
std::string trim_message(std::string_view message);

}  // namespace wirepool::postgresql
