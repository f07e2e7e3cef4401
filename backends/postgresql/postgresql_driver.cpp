#include "backends/postgresql/postgresql_driver.hpp"

#include "backends/postgresql/postgresql_connection.hpp"
#include "backends/postgresql/postgresql_options.hpp"

namespace wirepool::postgresql {

std::vector<std::pair<std::string, std::string>> PostgresqlDriver::validate(
    const db::OpenOptions& o) const {
  return validate_options(o);
}

db::Result<db::Connection> PostgresqlDriver::open(const db::OpenOptions& o) const {
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
  return open_connection(o);
}

std::string PostgresqlDriver::redact(std::string_view connection) const {
  return redact_conninfo(connection);
}

std::vector<db::HostPort> PostgresqlDriver::hosts(const db::OpenOptions& o) const {
  return conninfo_host_list(o.connection);
}

db::Result<db::HostProbe> PostgresqlDriver::probe(const db::OpenOptions& o) const {
  return probe_host(o);
}

const db::Driver& driver() {
  static const PostgresqlDriver instance;
  return instance;
}

}  // namespace wirepool::postgresql
