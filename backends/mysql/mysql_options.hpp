#pragma once
// MySQL driver internals: the database entry's `connection` (libpq-style
// key=value pairs, so operators write one form for both server drivers),
// checked and parsed, and secrets hidden for log lines.
//
//   host=127.0.0.1 port=3306 user=app password=secret dbname=shop
//
// Keys: host (default 127.0.0.1), port (default 3306), user, password, dbname,
// socket (a Unix socket path; used instead of host/port), connect_timeout
// (seconds, default 10). Values follow libpq's grammar: 'single quoted' with
// backslash escapes, or running to the next whitespace. The entry's
// password_env / password_file overrides a password written here. TLS comes
// from the entry's tls block only (ssl* keys are refused).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::mysql {

/// A parsed `connection`.
struct ConnectInfo {
  std::string host = "127.0.0.1";
  unsigned port = 3306;
  std::string user;
  std::string password;
  std::string dbname;
  std::string socket;
  unsigned connect_timeout = 10;  ///< seconds
  std::string tls_ca;             ///< from the tls block: empty = plaintext
  uint64_t max_value_size = 0;    ///< OpenOptions::max_value_size (0 = no limit)
  /// OpenOptions::read_write: refuse a server with @@read_only set (25006).
  bool read_write = false;
};

/// Parses key=value pairs. Problems (unknown key, bad number, syntax) are
/// appended to `problems` as (key, message); the result is then incomplete.
ConnectInfo parse_connection(std::string_view text,
                             std::vector<std::pair<std::string, std::string>>* problems);

/// One (key, message) per problem: an `options` key (this driver takes none),
/// a connection string it cannot parse, TLS keys in it. (A tls.pin_sha256 is
/// refused by the configuration loader at its own line, and by open().)
std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o);

/// What open() connects with: the parsed string, the entry's password and CA.
ConnectInfo connect_info(const db::OpenOptions& o);

/// `connection` with the password value replaced by "***".
std::string redact_connection(std::string_view text);

}  // namespace wirepool::mysql
