#pragma once
// SQLite driver internals: the `options` of a database entry, and where the
// `connection` string points.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::sqlite {

struct Options {
  std::chrono::milliseconds busy_timeout{5000};
  bool begin_immediate = true;
  bool foreign_keys = true;
  std::string seed_sql;         ///< resolved path, empty = none
  uint64_t max_value_size = 0;  ///< SQLITE_LIMIT_LENGTH when not 0 (OpenOptions)
};

/// One (key, message) per problem; empty when `o.options` is valid.
std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o);

/// The options with their defaults; call after validate_options() found nothing.
Options parse_options(const db::OpenOptions& o);

/// Where a `connection` string points.
struct Target {
  std::string open_name;  ///< what sqlite3_open_v2 receives
  std::string file;       ///< the database file on disk, empty for in-memory databases
  bool memory = false;    ///< ":memory:", "file::memory:" or a mode=memory URI
};

/// Resolves relative paths (also in "file:" URIs) against `base_dir`.
Target resolve_target(const std::string& connection, const std::string& base_dir);

}  // namespace wirepool::sqlite
