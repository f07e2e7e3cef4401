// SQLSTATE <-> SQL Server error numbers. The numbers are SQL Server's own for
// the same condition (sys.messages), so a TDS client's error handling (for
// example retrying on 1205, catching 2627) works unchanged.
#include "protocol/tds/errors.hpp"

#include <array>

namespace wirepool::tds {

namespace {

struct Entry {
  std::string_view sqlstate;
  int32_t number;
  uint8_t severity;
};

// SQLSTATE -> number. Severities are the ones SQL Server raises them with.
constexpr std::array<Entry, 22> kToNumber{{
    {"23505", 2627, 14},  // Violation of PRIMARY KEY / UNIQUE constraint
    {"23503", 547, 16},   // The INSERT statement conflicted with the FOREIGN KEY constraint
    {"23502", 515, 16},   // Cannot insert the value NULL into column
    {"23514", 547, 16},   // ... conflicted with the CHECK constraint (same number)
    {"23000", 2627, 14},  // a generic integrity violation: closest is the unique one
    {"42601", 102, 15},   // Incorrect syntax near
    {"42P01", 208, 16},   // Invalid object name
    {"42703", 207, 16},   // Invalid column name
    {"42883", 2812, 16},  // Could not find stored procedure (undefined function)
    {"42501", 229, 14},   // The permission was denied
    {"55P03", 1222, 16},  // Lock request time out period exceeded
    {"40P01", 1205, 13},  // chosen as the deadlock victim
    {"40001", 1205, 13},  // serialization failure: clients retry it like a deadlock
    // Cancelled by the backend (statement timeout, admin cancel). SQL Server
    // raises 3617 at severity 25, which clients treat as a dead connection;
    // here the connection lives on, so severity 16. (A client's own cancel is
    // answered with the attention acknowledgement, not an error.)
    {"57014", 3617, 16},
    {"28000", 18456, 14},  // Login failed for user
    {"28P01", 18456, 14},  // Login failed (wrong password)
    {"3D000", 4060, 11},   // Cannot open database requested by the login
    {"53300", 17809, 20},  // Could not connect: the maximum number of user connections
    {"22012", 8134, 16},   // Divide by zero error encountered
    {"22001", 8152, 16},   // String or binary data would be truncated
    {"22003", 8115, 16},   // Arithmetic overflow error
    {"25P02", 3930, 16},   // The current transaction cannot be committed (failed transaction)
}};

}  // namespace

ServerErrorCode error_for_sqlstate(std::string_view sqlstate) {
  for (const auto& e : kToNumber) {
    if (e.sqlstate == sqlstate) return {e.number, e.severity};
  }
  return {50000, 16};
}

std::string_view sqlstate_for_error(int32_t number, std::string_view message, uint8_t severity) {
  switch (number) {
    case 2627:
    case 2601:
      return "23505";
    case 547:
      return message.find("CHECK") != std::string_view::npos ? "23514" : "23503";
    case 515:
      return "23502";
    case 102:
    case 156:  // Incorrect syntax near the keyword
      return "42601";
    case 208:
      return "42P01";
    case 207:
      return "42703";
    case 2812:
      return "42883";
    case 229:
      return "42501";
    case 1205:
      return "40P01";
    case 1222:
      return "55P03";
    case 18456:
      return "28000";
    case 4060:
      return "3D000";
    case 8134:
      return "22012";
    case 8152:
    case 2628:
      return "22001";
    case 8115:
      return "22003";
    case 3902:  // COMMIT without BEGIN
    case 3903:  // ROLLBACK without BEGIN
      return "25000";
    case 3930:
      return "25P02";
    default:
      break;
  }
  // Unknown numbers keep a class by severity (SQL Server's severity levels).
  if (severity >= 20) return "08006";  // fatal: the connection is gone
  if (severity == 15) return "42601";  // syntax errors
  if (severity == 14) return "42501";  // security
  if (severity <= 10) return "01000";  // informational / warning
  return "XX000";
}

}  // namespace wirepool::tds
