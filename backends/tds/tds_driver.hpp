#pragma once
// The SQL Server driver ("tds"): wirepool's own TDS 8.0 client over a TCP
// socket and OpenSSL, on the sans-I/O codec protocol/tds/. No client library.
//
// `connection` is `key=value;` pairs: host (required), port (1433), database,
// user (required), password (or the entry's password_env / password_file),
// app_name. The entry's `tls` block is required: `ca` is the only trusted root
// and `pin_sha256` pins the server's public key further (TDS 8.0 strict: TLS
// 1.3 with ALPN tds/8.0 before the first TDS byte; no switch skips the check).
// Options (all optional): connect_timeout (15s), read_timeout (5m),
// packet_size (8192, at most 16383). docs/tds-driver.md has the type table,
// the known limits and why the driver blocks.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::tdsdrv {

class TdsDriver final : public db::Driver {
 public:
  std::string_view name() const override { return "tds"; }
  /// One (key, message) per problem in `connection`, `options` or `tls`.
  std::vector<std::pair<std::string, std::string>> validate(
      const db::OpenOptions& o) const override;
  /// Connects and logs in. Failures answer Errc::connection (or Unsupported
  /// for a routing answer).
  db::Result<db::Connection> open(const db::OpenOptions& options) const override;
  /// The connection with its password replaced by "***".
  std::string redact(std::string_view connection) const override;
};

/// The driver object ("tds" in db::find_driver).
const db::Driver& driver();

}  // namespace wirepool::tdsdrv
