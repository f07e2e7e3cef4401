#pragma once
// The SQLite driver: binds libsqlite3 (Debian 12: 3.40) directly.
//
// `connection` is a database file path (relative paths are relative to
// OpenOptions::base_dir), ":memory:", or a "file:" URI. Options (all optional):
//   busy_timeout  how long a statement waits for a lock before answering Busy
//                 (55P03); a duration, default 5s
//   begin         immediate | deferred: how a plain BEGIN starts a transaction;
//                 default immediate (see docs/sqlite.md: why)
//   foreign_keys  on | off, default on
//   seed_sql      a file of SQL (relative to base_dir) run once, when the database
//                 file did not exist before the open
// File databases run in WAL mode. docs/sqlite.md has the type mapping, the
// parameter forms and the error table.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::sqlite {

class SqliteDriver final : public db::Driver {
 public:
  std::string_view name() const override { return "sqlite"; }
  /// One (key, message) per unknown option key or bad value.
  std::vector<std::pair<std::string, std::string>> validate(
      const db::OpenOptions& o) const override;
  /// Opens (creating if needed) the database. Failures answer Errc::connection.
  db::Result<db::Connection> open(const db::OpenOptions& options) const override;
};

/// The driver object ("sqlite" in db::find_driver).
const db::Driver& driver();

}  // namespace wirepool::sqlite
