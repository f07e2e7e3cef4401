#pragma once
// ODBC driver internals: how a result column is typed (db::Kind) and bound
// (C type and width), and the conversions of ODBC's date/time and GUID
// structs. The table is in docs/odbc.md ("Types").

#include <sql.h>
#include <sqlext.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/db.hpp"

namespace wirepool::odbc {

/// How a column's cells are read.
enum class Read : uint8_t {
  bit,        ///< SQL_C_BIT -> Bool
  sbigint,    ///< SQL_C_SBIGINT -> I64
  ubigint,    ///< SQL_C_UBIGINT -> U64
  dbl,        ///< SQL_C_DOUBLE -> F64
  wtext,      ///< SQL_C_WCHAR -> Text (UTF-16 converted to UTF-8)
  decimal,    ///< SQL_C_CHAR (digits, sign, point: ASCII) -> Decimal
  binary,     ///< SQL_C_BINARY -> Bytes
  timestamp,  ///< SQL_C_TYPE_TIMESTAMP -> Time (timestamp)
  date,       ///< SQL_C_TYPE_DATE -> Time (date)
  guid,       ///< SQL_C_GUID -> Text, canonical lower-case form
};

struct ColumnPlan {
  db::Kind kind = db::Kind::Text;
  Read read = Read::wtext;
  SQLSMALLINT c_type = SQL_C_WCHAR;
  /// Bytes one cell takes in the row array (with the terminator for text).
  size_t width = 0;
  /// The driver gave no usable width (LONGVARCHAR, TEXT, unbounded NUMERIC):
  /// bound at `long_bytes`, and longer cells are re-read with SQLGetData.
  bool unbounded = false;
  db::TimeForm time_form = db::TimeForm::timestamp;
  /// I64 columns: the PostgreSQL integer width that holds the type (0: int8).
  int8_t int_bytes = 0;
};

/// `sql_type`, `size` and `digits` as SQLDescribeColW answered them;
/// `is_unsigned` from SQL_DESC_UNSIGNED.
ColumnPlan plan_column(SQLSMALLINT sql_type, SQLULEN size, SQLSMALLINT digits, bool is_unsigned,
                       size_t long_bytes);

/// The ODBC SQL type's name ("BIGINT", "WVARCHAR"), for NativeType::name when
/// the driver gives none.
std::string sql_type_name(SQLSMALLINT sql_type);

/// Microseconds since 1970-01-01T00:00:00 of a timestamp read as UTC.
int64_t micros_of(const SQL_TIMESTAMP_STRUCT& ts);
int64_t micros_of(const SQL_DATE_STRUCT& d);
/// The timestamp (UTC) of microseconds since the epoch.
SQL_TIMESTAMP_STRUCT timestamp_of(int64_t micros);
/// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case.
std::string guid_text(const SQLGUID& g);

}  // namespace wirepool::odbc
