#include "backends/mysql/mysql_driver.hpp"

#include <mysql.h>

#include <mutex>

#include "backends/catalog/catalog_connection.hpp"
#include "backends/mysql/mysql_connection.hpp"
#include "backends/mysql/mysql_options.hpp"

namespace wirepool::mysql {

namespace {
/// mysql_library_init is not thread-safe; the first open or probe may race with others.
void init_library() {
  static std::once_flag init;
  std::call_once(init, [] { mysql_library_init(0, nullptr, nullptr); });
}
}  // namespace

std::vector<std::pair<std::string, std::string>> MysqlDriver::validate(
    const db::OpenOptions& o) const {
  return validate_options(o);
}

db::Result<db::Connection> MysqlDriver::open(const db::OpenOptions& o) const {
  auto problems = validate_options(o);
  if (!o.tls_pins.empty()) {
    // MariaDB Connector/C exposes no peer certificate: a pin cannot be checked,
    // and an unchecked pin must not pass for a checked one.
    problems.emplace_back("tls.pin_sha256",
                          "the mysql driver cannot check tls.pin_sha256 (MariaDB Connector/C "
                          "exposes no peer certificate); verify the backend with tls.ca");
  }
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
  init_library();
  auto conn = open_connection(connect_info(o));
  if (!conn.ok()) return conn;
  return db::with_pg_catalog(std::move(conn.value()), db::CatalogSource::mysql_information_schema);
}

db::Result<db::HostProbe> MysqlDriver::probe(const db::OpenOptions& o) const {
  init_library();
  return probe_host(connect_info(o), o.probe_timeout);
}

std::string MysqlDriver::redact(std::string_view connection) const {
  return redact_connection(connection);
}

const db::Driver& driver() {
  static const MysqlDriver instance;
  return instance;
}

}  // namespace wirepool::mysql
