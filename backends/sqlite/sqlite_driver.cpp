#include "backends/sqlite/sqlite_driver.hpp"

#include "backends/sqlite/sqlite_connection.hpp"
#include "backends/sqlite/sqlite_options.hpp"

namespace wirepool::sqlite {

std::vector<std::pair<std::string, std::string>> SqliteDriver::validate(
    const db::OpenOptions& o) const {
  return validate_options(o);
}

db::Result<db::Connection> SqliteDriver::open(const db::OpenOptions& o) const {
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
  return open_connection(resolve_target(o.connection, o.base_dir), parse_options(o));
}

const db::Driver& driver() {
  static const SqliteDriver instance;
  return instance;
}

}  // namespace wirepool::sqlite
