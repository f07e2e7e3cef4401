#include "backends/tds/tds_driver.hpp"

#include "backends/catalog/catalog_connection.hpp"
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
  auto conn = open_connection(parse_options(o));
  if (!conn.ok()) return conn;
  // Catalog queries of PostgreSQL clients (docs/catalog.md), from INFORMATION_SCHEMA.
  return db::with_pg_catalog(std::move(conn.value()),
                             db::CatalogSource::sqlserver_information_schema);
}

std::string TdsDriver::redact(std::string_view connection) const {
  return redact_connection(connection);
}

const db::Driver& driver() {
  static const TdsDriver instance;
  return instance;
}

}  // namespace wirepool::tdsdrv
