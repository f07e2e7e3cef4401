#include "backends/tds/tds_driver.hpp"

#include "backends/tds/tds_connection.hpp"
#include "backends/tds/tds_options.hpp"

namespace wirepool::tdsdrv {

std::vector<std::pair<std::string, std::string>> TdsDriver::validate(
    const db::OpenOptions& o) const {
  return validate_options(o);
}

db::Result<db::Connection> TdsDriver::open(const db::OpenOptions& o) const {
  const auto problems = validate_options(o);
  if (!problems.empty()) {
    std::string message;
    for (const auto& [key, text] : problems) {
      if (!message.empty()) message += "; ";
      message += text;
    }
    db::Error e = db::Error::connection(std::move(message));
    e.sqlstate = "22023";  // invalid_parameter_value
    return e;
  }
  return open_connection(parse_options(o));
}

std::string TdsDriver::redact(std::string_view connection) const {
  return redact_connection(connection);
}

const db::Driver& driver() {
  static const TdsDriver instance;
  return instance;
}

}  // namespace wirepool::tdsdrv
