#pragma once
// SQLSTATE <-> SQL Server error numbers (DESIGN.md "Errors"; docs/tds.md has
// the table). Pure functions, shared by the TDS front end (a backend's SQLSTATE
// -> the number and severity a TDS client expects) and the TDS driver (SQL
// Server's number -> the SQLSTATE the other protocols send).

#include <cstdint>
#include <string_view>

namespace wirepool::tds {

/// An SQL Server error number and its severity ("class").
struct ServerErrorCode {
  int32_t number = 50000;
  uint8_t severity = 16;
};

/// The SQL Server number for a SQLSTATE. Unknown ones: 50000 (the number
/// RAISERROR uses for user messages), severity 16.
ServerErrorCode error_for_sqlstate(std::string_view sqlstate);

/// The SQLSTATE for an SQL Server error number. 547 is 23514 when the message
/// names a CHECK constraint, else 23503. Unknown numbers keep a class: 42000
/// for severity 15 (syntax), 08006 for 20 and above (the connection is gone),
/// else XX000... see docs/tds.md.
std::string_view sqlstate_for_error(int32_t number, std::string_view message = {},
                                    uint8_t severity = 16);

}  // namespace wirepool::tds
