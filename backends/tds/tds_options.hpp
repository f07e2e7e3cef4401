#pragma once
// SQL Server driver internals: the database entry's `connection` (key=value;
// pairs) and `options`, checked and parsed, and secrets hidden for log lines.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::tdsdrv {

/// What a connection needs, after validation.
struct Options {
  std::string host;
  uint16_t port = 1433;
  std::string database;  ///< empty: the login's default database
  std::string user;
  std::string password;  ///< never logged
  std::string app_name = "wirepool";
  /// TCP connect, TLS handshake, PRELOGIN and LOGIN7 together (`connect_timeout`).
  std::chrono::milliseconds connect_timeout{15000};
  /// The longest wait for the next bytes of a response (`read_timeout`). A query
  /// that sends nothing for longer is cancelled (ATTENTION) and answers 08006.
  std::chrono::milliseconds read_timeout{300000};
  /// The packet size asked for in LOGIN7 (`packet_size`, 512..16383): at most
  /// 16,383 so that a packet always fits one TLS record (16,384 bytes).
  uint32_t packet_size = 8192;
  std::string tls_ca;
  std::vector<std::string> tls_pins;
  uint64_t max_value_size = 0;  ///< OpenOptions::max_value_size (0 = the codec's 64 MiB)
};

/// The largest packet size the driver uses: a packet must fit one TLS record
/// (SQL Server resets a TDS 8.0 connection when a packet spans two records).
inline constexpr uint32_t kMaxDriverPacketSize = 16383;

/// The `key=value;` pairs of a connection string, in order. Keys are lower-cased
/// and trimmed; values trimmed. A value may be wrapped in {braces} (ODBC style,
/// "}}" escapes a "}"), so a password can hold ';'. False and `*error` on a
/// malformed string.
bool split_connection(std::string_view s, std::vector<std::pair<std::string, std::string>>& out,
                      std::string* error);

/// One (key, message) per problem: an unknown connection or options key, a
/// missing host or user, a bad port, duration or packet size, a missing tls.ca
/// (strict encryption always: the driver never connects without verifying the
/// server), a pin that is not 64 hex digits. The key is the option's for
/// `options` problems and empty for `connection` and `tls` ones (the loader
/// then reports them at the entry, not under `options.`).
std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o);

/// The options with their defaults; call after validate_options() found nothing.
/// The password is OpenOptions::password when set, else the connection's.
Options parse_options(const db::OpenOptions& o);

/// `connection` with the password value replaced by "***".
std::string redact_connection(std::string_view connection);

}  // namespace wirepool::tdsdrv
