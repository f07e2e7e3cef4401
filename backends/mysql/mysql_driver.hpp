#pragma once
// The MySQL/MariaDB driver: binds libmysqlclient (Debian 12: MariaDB
// Connector/C 3.3 through default-libmysqlclient-dev).
//
// `connection` is libpq-style key=value pairs (backends/mysql/mysql_options.hpp):
//   host=127.0.0.1 port=3306 user=app dbname=shop
// with the password from the entry's password_env / password_file. The driver
// takes no options. A tls block connects with TLS 1.3 and verifies the server
// against tls.ca (chain and host name); tls.pin_sha256 is refused (the connector
// exposes no peer certificate). docs/mysql.md has the type mapping, the error
// table, and why the calls are blocking.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::mysql {

class MysqlDriver final : public db::Driver {
 public:
  std::string_view name() const override { return "mysql"; }
  /// One (key, message) per unknown option key, bad connection key or value, or pin.
  std::vector<std::pair<std::string, std::string>> validate(
      const db::OpenOptions& o) const override;
  /// Connects. Failures answer Errc::connection with the server's errno and message.
  db::Result<db::Connection> open(const db::OpenOptions& options) const override;
  std::string redact(std::string_view connection) const override;
  /// @@read_only = 0 is a primary; a replica's lag is its Seconds_Behind_Master.
  db::Result<db::HostProbe> probe(const db::OpenOptions& o) const override;
};

/// The driver object ("mysql" in db::find_driver).
const db::Driver& driver();

}  // namespace wirepool::mysql
