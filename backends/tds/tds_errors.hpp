#pragma once
// SQL Server driver internals: an ERROR token as a db::Error (DESIGN.md "Errors").

#include <string_view>

#include "backends/db.hpp"
#include "protocol/tds/codec.hpp"

namespace wirepool::tdsdrv {

/// The portable error of a SQLSTATE: 23... Constraint; 40P01, 40001, 55P03,
/// 57014 Busy; 08... Connection; 0A000 Unsupported; the rest InvalidQuery.
db::Errc errc_for_sqlstate(std::string_view sqlstate);

/// An ERROR token as an Error: the SQLSTATE of tds::sqlstate_for_error
/// (2627/2601 -> 23505, 547 -> 23503 or 23514, 515 -> 23502, 102 -> 42601,
/// 208 -> 42P01, 207 -> 42703, 1205 -> 40P01, 1222 -> 55P03, ...), the number
/// as vendor_code, the server's message as is, and "SQL Server error N,
/// state S, severity C[, procedure P][, line L]" as the detail. Severity 20 and
/// above ends the connection: Errc::connection.
db::Error map_server_error(const tds::ServerMessage& m);

}  // namespace wirepool::tdsdrv
