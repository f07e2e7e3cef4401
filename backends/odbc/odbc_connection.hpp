#pragma once
// ODBC driver internals: the connection, statement and reader objects behind
// the db handles.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/db.hpp"
#include "backends/odbc/odbc_driver.hpp"

namespace wirepool::odbc {

struct Options {
  std::chrono::seconds login_timeout{10};
  std::chrono::seconds query_timeout{0};
  size_t rowset_bytes = 256 * 1024;
  size_t long_bytes = 2048;
  uint64_t max_value_size = 0;  ///< OpenOptions::max_value_size (0 = no limit)
};

/// Connects with `connection` (already completed by full_connection_string).
db::Result<db::Connection> open_connection(const std::string& connection, const Options& options);

FetchStats stats_of(const db::ConnectionImpl* impl);
DriverInfo info_of(const db::ConnectionImpl* impl);

}  // namespace wirepool::odbc
