#include "backends/tds/tds_errors.hpp"

#include <string>

#include "protocol/tds/errors.hpp"

namespace wirepool::tdsdrv {

db::Errc errc_for_sqlstate(std::string_view s) {
  if (s.substr(0, 2) == "23") return db::Errc::constraint;
  if (s == "40P01" || s == "40001" || s == "55P03" || s == "57014") return db::Errc::busy;
  if (s.substr(0, 2) == "08") return db::Errc::connection;
  if (s == "0A000") return db::Errc::unsupported;
  return db::Errc::invalid_query;
}

db::Error map_server_error(const tds::ServerMessage& m) {
  db::Error e;
  e.sqlstate = std::string(tds::sqlstate_for_error(m.number, m.message, m.severity));
  e.code = errc_for_sqlstate(e.sqlstate);
  if (m.severity >= 20) {
    // Severity 20-25: the server closes the connection after the message.
    e.code = db::Errc::connection;
  }
  e.vendor_code = m.number;
  e.message = m.message;
  e.detail = "SQL Server error " + std::to_string(m.number) + ", state " + std::to_string(m.state) +
             ", severity " + std::to_string(m.severity);
  if (!m.proc_name.empty()) e.detail += ", procedure " + m.proc_name;
  if (m.line > 0) e.detail += ", line " + std::to_string(m.line);
  return e;
}

}  // namespace wirepool::tdsdrv
