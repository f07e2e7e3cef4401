#include "backends/odbc/odbc_types.hpp"

#include <algorithm>
#include <cstdio>

namespace wirepool::odbc {

namespace {

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

constexpr int64_t kMicrosPerDay = 86'400'000'000;

}  // namespace

ColumnPlan plan_column(SQLSMALLINT t, SQLULEN size, SQLSMALLINT digits, bool is_unsigned,
                       size_t long_bytes) {
  ColumnPlan p;
  auto text = [&](size_t chars) {
    p.kind = db::Kind::Text;
    p.read = Read::wtext;
    p.c_type = SQL_C_WCHAR;
    // A declared width counts characters; one outside the BMP takes two
    // UTF-16 units. Columns wider than long_bytes are bound at long_bytes.
    const size_t long_units = std::max<size_t>(long_bytes / 2, 16);
    size_t units = chars == 0 ? long_units : std::min(chars * 2, long_units);
    p.unbounded = chars == 0 || chars * 2 > long_units;
    p.width = (units + 1) * sizeof(SQLWCHAR);
  };
  switch (t) {
    case SQL_BIT:
      p.kind = db::Kind::Bool;
      p.read = Read::bit;
      p.c_type = SQL_C_BIT;
      p.width = 1;
      break;
    case SQL_TINYINT:
    case SQL_SMALLINT:
    case SQL_INTEGER:
      p.kind = db::Kind::I64;
      p.read = Read::sbigint;
      p.c_type = SQL_C_SBIGINT;
      p.width = 8;
      // The smallest PostgreSQL integer holding every value (unsigned ones need the next).
      p.int_bytes = t == SQL_TINYINT    ? 2
                    : t == SQL_SMALLINT ? (is_unsigned ? 4 : 2)
                    : !is_unsigned      ? 4
                                        : 8;
      break;
    case SQL_BIGINT:
      p.kind = is_unsigned ? db::Kind::U64 : db::Kind::I64;
      p.read = is_unsigned ? Read::ubigint : Read::sbigint;
      p.c_type = is_unsigned ? SQL_C_UBIGINT : SQL_C_SBIGINT;
      p.width = 8;
      break;
    case SQL_REAL:
    case SQL_FLOAT:
    case SQL_DOUBLE:
      p.kind = db::Kind::F64;
      p.read = Read::dbl;
      p.c_type = SQL_C_DOUBLE;
      p.width = 8;
      break;
    case SQL_DECIMAL:
    case SQL_NUMERIC: {
      p.kind = db::Kind::Decimal;
      p.read = Read::decimal;
      p.c_type = SQL_C_CHAR;
      // sign, point, a leading zero and the terminator around the digits.
      const size_t need = static_cast<size_t>(size) + 4;
      p.unbounded = size == 0 || need > 128;
      p.width = p.unbounded ? 128 : need;
      (void)digits;
      break;
    }
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP:
      p.kind = db::Kind::Time;
      p.read = Read::timestamp;
      p.c_type = SQL_C_TYPE_TIMESTAMP;
      p.width = sizeof(SQL_TIMESTAMP_STRUCT);
      p.time_form = db::TimeForm::timestamp;
      break;
    case SQL_TYPE_DATE:
    case SQL_DATE:
      p.kind = db::Kind::Time;
      p.read = Read::date;
      p.c_type = SQL_C_TYPE_DATE;
      p.width = sizeof(SQL_DATE_STRUCT);
      p.time_form = db::TimeForm::date;
      break;
    case SQL_GUID:
      p.kind = db::Kind::Text;
      p.read = Read::guid;
      p.c_type = SQL_C_GUID;
      p.width = sizeof(SQLGUID);
      break;
    case SQL_BINARY:
    case SQL_VARBINARY:
    case SQL_LONGVARBINARY:
      p.kind = db::Kind::Bytes;
      p.read = Read::binary;
      p.c_type = SQL_C_BINARY;
      p.unbounded = t == SQL_LONGVARBINARY || size == 0 || size > long_bytes;
      p.width = p.unbounded ? long_bytes : static_cast<size_t>(size);
      break;
    case SQL_LONGVARCHAR:
    case SQL_WLONGVARCHAR:
      text(0);
      break;
    default:  // CHAR, VARCHAR, WCHAR, WVARCHAR, TIME, intervals, driver-specific types
      text(static_cast<size_t>(size));
      break;
  }
  return p;
}

std::string sql_type_name(SQLSMALLINT t) {
  switch (t) {
    case SQL_BIT:
      return "BIT";
    case SQL_TINYINT:
      return "TINYINT";
    case SQL_SMALLINT:
      return "SMALLINT";
    case SQL_INTEGER:
      return "INTEGER";
    case SQL_BIGINT:
      return "BIGINT";
    case SQL_REAL:
      return "REAL";
    case SQL_FLOAT:
      return "FLOAT";
    case SQL_DOUBLE:
      return "DOUBLE";
    case SQL_DECIMAL:
      return "DECIMAL";
    case SQL_NUMERIC:
      return "NUMERIC";
    case SQL_CHAR:
      return "CHAR";
    case SQL_VARCHAR:
      return "VARCHAR";
    case SQL_LONGVARCHAR:
      return "LONGVARCHAR";
    case SQL_WCHAR:
      return "WCHAR";
    case SQL_WVARCHAR:
      return "WVARCHAR";
    case SQL_WLONGVARCHAR:
      return "WLONGVARCHAR";
    case SQL_BINARY:
      return "BINARY";
    case SQL_VARBINARY:
      return "VARBINARY";
    case SQL_LONGVARBINARY:
      return "LONGVARBINARY";
    case SQL_TYPE_DATE:
    case SQL_DATE:
      return "DATE";
    case SQL_TYPE_TIME:
    case SQL_TIME:
      return "TIME";
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP:
      return "TIMESTAMP";
    case SQL_GUID:
      return "GUID";
    default:
      return "SQL_TYPE(" + std::to_string(t) + ")";
  }
}

int64_t micros_of(const SQL_TIMESTAMP_STRUCT& ts) {
  const int64_t days = days_from_civil(ts.year, ts.month, ts.day);
  const int64_t secs = ts.hour * 3600 + ts.minute * 60 + ts.second;
  return days * kMicrosPerDay + secs * 1'000'000 + ts.fraction / 1000;
}

int64_t micros_of(const SQL_DATE_STRUCT& d) {
  return days_from_civil(d.year, d.month, d.day) * kMicrosPerDay;
}

SQL_TIMESTAMP_STRUCT timestamp_of(int64_t micros) {
  int64_t days = micros / kMicrosPerDay;
  int64_t rem = micros % kMicrosPerDay;
  if (rem < 0) {
    rem += kMicrosPerDay;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  SQL_TIMESTAMP_STRUCT ts{};
  ts.year = static_cast<SQLSMALLINT>(y);
  ts.month = static_cast<SQLUSMALLINT>(m);
  ts.day = static_cast<SQLUSMALLINT>(d);
  const int64_t secs = rem / 1'000'000;
  ts.hour = static_cast<SQLUSMALLINT>(secs / 3600);
  ts.minute = static_cast<SQLUSMALLINT>((secs / 60) % 60);
  ts.second = static_cast<SQLUSMALLINT>(secs % 60);
  ts.fraction = static_cast<SQLUINTEGER>((rem % 1'000'000) * 1000);
  return ts;
}

std::string guid_text(const SQLGUID& g) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                static_cast<unsigned>(g.Data1), g.Data2, g.Data3, g.Data4[0], g.Data4[1],
                g.Data4[2], g.Data4[3], g.Data4[4], g.Data4[5], g.Data4[6], g.Data4[7]);
  return buf;
}

}  // namespace wirepool::odbc
