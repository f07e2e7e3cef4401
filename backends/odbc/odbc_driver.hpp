#pragma once
// The ODBC driver: binds the unixODBC driver manager (Debian 12: 2.3.11)
// through its wide (W) entry points only.
//
// `connection` is an ODBC connection string passed to SQLDriverConnectW as
// written ("Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=5432;..."), or a
// DSN name from odbc.ini. A password from password_env / password_file is added
// as PWD when the string has none. Options (all optional):
//   login_timeout  SQL_ATTR_LOGIN_TIMEOUT, a duration, default 10s
//   query_timeout  SQL_ATTR_QUERY_TIMEOUT per statement, a duration, default 0 (none)
//   rowset_bytes   the buffer a block cursor's row array may take (the rowset
//                  is this divided by a row's bound width), default 256KiB
//   long_bytes     the width a column the driver calls unbounded is bound at;
//                  longer cells are re-read with SQLGetData; default 2KiB
// docs/odbc.md has the verified drivers, their quirks, the type mapping and
// the error table.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::odbc {

class OdbcDriver final : public db::Driver {
 public:
  std::string_view name() const override { return "odbc"; }
  std::vector<std::pair<std::string, std::string>> validate(
      const db::OpenOptions& o) const override;
  /// Connects; failures answer Errc::connection with the driver's SQLSTATE
  /// mapped (a refused login is 28P01).
  db::Result<db::Connection> open(const db::OpenOptions& options) const override;
  /// The connection string with PWD / PASSWORD values replaced by "***".
  std::string redact(std::string_view connection) const override;
};

/// The driver object ("odbc" in db::find_driver).
const db::Driver& driver();

/// What a connection's block cursors did, for tests and benchmarks: every
/// SQLFetch, the rows they returned, the largest rowset one returned, and the
/// cells re-read with SQLGetData because they overflowed their bound width.
struct FetchStats {
  uint64_t fetches = 0;
  uint64_t rows = 0;
  uint64_t max_rows_per_fetch = 0;
  uint64_t rowset_size = 0;  ///< SQL_ATTR_ROW_ARRAY_SIZE of the last cursor
  uint64_t rereads = 0;
  /// Executions of a prepared statement on a fresh copy because a reader of
  /// it was still open.
  uint64_t statement_copies = 0;
  /// Batches executed as one parameter array (Statement::execute_batch).
  uint64_t batches = 0;
  /// SQLFreeStmt(SQL_CLOSE) by a reader's close() (a single DML statement on
  /// a known database leaves nothing to close: none).
  uint64_t cursor_closes = 0;
  /// Row-array blocks allocated for bound results (a direct query's block is
  /// kept by the connection for the next one: docs/odbc.md, "Block cursors").
  uint64_t row_blocks = 0;
};
/// The counters of an ODBC connection (zeros for another driver's).
FetchStats fetch_stats_for_test(const db::Connection& c);

/// What SQLGetInfo said of the ODBC driver and database behind a connection
/// ("psqlodbcw.so", "PostgreSQL", "15.4"), empty strings for another driver's.
struct DriverInfo {
  std::string driver_name;
  std::string driver_version;
  std::string dbms_name;
  std::string dbms_version;
  std::string flavor;  ///< postgresql | mariadb | sqlite | generic
  /// The driver has no W entry points: text crosses as UTF-8 through the narrow ones.
  bool narrow_text = false;
};
DriverInfo driver_info(const db::Connection& c);

}  // namespace wirepool::odbc
