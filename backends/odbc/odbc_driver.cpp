#include "backends/odbc/odbc_driver.hpp"

#include <optional>

#include "backends/catalog/catalog_connection.hpp"
#include "backends/odbc/odbc_connection.hpp"
#include "backends/odbc/odbc_text.hpp"
#include "config/config.hpp"

namespace wirepool::odbc {

namespace {

constexpr const char* kKnown = "login_timeout, query_timeout, rowset_bytes, long_bytes";

/// Options and the problems found reading them.
Options parse(const db::OpenOptions& o,
              std::vector<std::pair<std::string, std::string>>* problems) {
  Options out;
  out.max_value_size = o.max_value_size;
  auto problem = [&](const std::string& key, std::string text) {
    if (problems) problems->emplace_back(key, std::move(text));
  };
  for (const auto& [key, value] : o.options) {
    if (key == "login_timeout" || key == "query_timeout") {
      auto d = config::parse_duration(value);
      if (!d) {
        problem(key, key + ": not a duration (\"10s\", \"500ms\")");
        continue;
      }
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(*d);
      if (d->count() > 0 && secs.count() == 0) {
        problem(key, key + ": ODBC counts whole seconds; use at least 1s");
        continue;
      }
      (key == "login_timeout" ? out.login_timeout : out.query_timeout) = secs;
    } else if (key == "rowset_bytes" || key == "long_bytes") {
      auto n = config::parse_size(value);
      if (!n || *n < 64 || *n > (uint64_t{1} << 30)) {
        problem(key, key + ": a size between 64 and 1GiB (\"256KiB\")");
        continue;
      }
      (key == "rowset_bytes" ? out.rowset_bytes : out.long_bytes) = static_cast<size_t>(*n);
    } else {
      problem(key, "unknown option \"" + key + "\" for the odbc driver (known: " + kKnown + ")");
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> OdbcDriver::validate(
    const db::OpenOptions& o) const {
  std::vector<std::pair<std::string, std::string>> problems;
  if (o.connection.empty()) {
    // Key "": not an option; the loader reports it at the database entry.
    problems.emplace_back("",
                          "the odbc driver needs an ODBC connection string "
                          "(\"Driver={...};Server=...\") or a DSN name");
  }
  if (!o.tls_ca.empty() || !o.tls_pins.empty()) {
    problems.emplace_back("",
                          "the odbc driver takes no tls block: ODBC drivers do their own TLS "
                          "from the connection string (psqlODBC sslmode, MariaDB SSLCA, ...)");
  }
  (void)parse(o, &problems);
  return problems;
}

db::Result<db::Connection> OdbcDriver::open(const db::OpenOptions& o) const {
  const auto problems = validate(o);
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
  auto conn =
      open_connection(full_connection_string(o.connection, o.password, o.user), parse(o, nullptr));
  if (!conn.ok()) return conn;
  // Catalog queries of PostgreSQL clients (docs/catalog.md): MariaDB and SQLite behind ODBC.
  switch (conn.value().capabilities().dialect) {
    case sql::Dialect::mysql:
      return db::with_pg_catalog(std::move(conn.value()),
                                 db::CatalogSource::mysql_information_schema);
    case sql::Dialect::sqlite:
      return db::with_pg_catalog(std::move(conn.value()), db::CatalogSource::sqlite_schema);
    default:
      return conn;
  }
}

std::string OdbcDriver::redact(std::string_view connection) const {
  return redact_connection(connection);
}

const db::Driver& driver() {
  static const OdbcDriver instance;
  return instance;
}

FetchStats fetch_stats_for_test(const db::Connection& c) {
  return stats_of(db::without_catalog(c.impl()));
}

DriverInfo driver_info(const db::Connection& c) {
  return info_of(db::without_catalog(c.impl()));
}

}  // namespace wirepool::odbc
