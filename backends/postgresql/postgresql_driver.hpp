#pragma once
// The PostgreSQL driver: binds libpq (Debian 12: libpq 15) in non-blocking mode.
//
// `connection` is a libpq conninfo, key=value ("host=db port=5432 dbname=app
// user=app") or URI ("postgresql://app@db/app"); the password comes from the
// entry's password_env / password_file. The driver adds keepalives (a vanished
// server is noticed in about a minute), connect_timeout=10 and
// client_encoding=UTF8 unless the conninfo sets them (no application_name:
// clients without one see the server's default, ''). TLS comes
// only from the entry's tls block: none = sslmode=disable; a CA =
// sslmode=verify-full against it (TLS 1.3), optionally pinned by the SHA-256 of
// the server's public key. It takes no `options` yet.
//
// Connections are non-blocking (Capabilities::blocking false): open() and
// close() block (the executor runs them), every other call answers
// would_block instead of waiting. docs/postgresql.md has the types, native
// mode, the state machine and the errors.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::postgresql {

class PostgresqlDriver final : public db::Driver {
 public:
  std::string_view name() const override { return "postgresql"; }
  /// One (key, message) per problem: any `options` key, a conninfo libpq cannot
  /// parse or that sets TLS itself (sslmode, sslrootcert, sslcert, sslkey,
  /// sslcrl, requiressl, ...), a malformed pin.
  std::vector<std::pair<std::string, std::string>> validate(
      const db::OpenOptions& o) const override;
  /// Connects (blocking). Failures answer Errc::connection.
  db::Result<db::Connection> open(const db::OpenOptions& options) const override;
  /// Passwords (key=value `password`, a URI's userinfo and `password=`) as "***".
  std::string redact(std::string_view connection) const override;
  /// libpq's multi-host form: `host=a,b port=p1,p2` or `postgresql://a:p1,b:p2/db`.
  std::vector<db::HostPort> hosts(const db::OpenOptions& o) const override;
  /// `pg_is_in_recovery()` and, on a primary, the timeline of its current WAL
  /// file (pg_walfile_name(pg_current_wal_lsn())).
  db::Result<db::HostProbe> probe(const db::OpenOptions& o) const override;
};

/// The driver object ("postgresql" in db::find_driver).
const db::Driver& driver();

}  // namespace wirepool::postgresql
