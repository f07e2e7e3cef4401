#pragma once
// MySQL driver internals: the type mapping (docs/mysql.md), without a server.
//
//   TINYINT(1)                      -> Bool (MySQL's BOOL/BOOLEAN is TINYINT(1))
//   TINYINT..BIGINT, YEAR           -> I64; BIGINT UNSIGNED -> U64
//   FLOAT, DOUBLE                   -> F64 (a FLOAT by its shortest float spelling)
//   DECIMAL                         -> Decimal (exact text at the column's scale)
//   DATE                            -> Time (date); DATETIME -> Time (timestamp);
//   TIMESTAMP                       -> Time (timestamptz: sessions run in UTC)
//   TIME                            -> Text ("-838:59:59".."838:59:59" is a duration)
//   CHAR/VARCHAR/TEXT/ENUM/SET/JSON -> Text;  same with charset 63 (binary) -> Bytes
//   BIT(n)                          -> U64;  GEOMETRY -> Bytes;  NULL -> Null
// A zero or invalid date ('0000-00-00') reads as NULL: no Time holds it.

#include <mysql.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backends/db.hpp"

namespace wirepool::mysql {

/// How a column's values are read.
enum class Read : uint8_t {
  null,
  boolean,
  i64,
  u64,
  f32,
  f64,
  decimal,
  date,
  datetime,   ///< no zone
  timestamp,  ///< UTC (the session's time_zone is +00:00)
  time_text,  ///< TIME, as text
  text,
  bytes,
  bit,
};

/// The charset number MySQL reports for binary strings.
constexpr unsigned kBinaryCharset = 63;

/// A result column as the driver sees it.
struct ColumnType {
  Read read = Read::text;
  db::Column column;
  // The metadata it was made from, to tell when it changes.
  enum_field_types type = MYSQL_TYPE_NULL;
  unsigned flags = 0;
  unsigned long length = 0;
  unsigned charsetnr = 0;
  unsigned decimals = 0;
};

/// The mapping of one field's metadata (type, flags, display length, charset,
/// decimals). `name` is the column label.
ColumnType classify(std::string_view name, enum_field_types type, unsigned flags,
                    unsigned long length, unsigned charsetnr, unsigned decimals);
inline ColumnType classify(const MYSQL_FIELD& f) {
  return classify(std::string_view(f.name, f.name_length), f.type, f.flags, f.length, f.charsetnr,
                  f.decimals);
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);

/// Microseconds since the epoch of a MYSQL_TIME (date or datetime, read as
/// UTC); nullopt for a zero or invalid date.
std::optional<int64_t> micros_of(const MYSQL_TIME& t);
/// The MYSQL_TIME (MYSQL_TIMESTAMP_DATETIME, UTC) of microseconds since the epoch.
MYSQL_TIME mysql_time_of(int64_t micros);

/// Parses the text protocol's "YYYY-MM-DD[ HH:MM:SS[.ffffff]]"; nullopt for
/// a zero date or anything else.
std::optional<int64_t> parse_datetime(std::string_view text);

/// A TIME value as MySQL spells it: "[-]HH:MM:SS[.ffffff]".
std::string format_time_of_day(const MYSQL_TIME& t);

/// A BIT(n) value (big-endian bytes) as an unsigned integer.
uint64_t bits_value(std::string_view bytes);

/// A FLOAT widened by its shortest decimal spelling (0.1f -> 0.1, not 0.100000001).
double widen_float(float f);

/// Text of an integer / float value of the text protocol, converted; nullopt when
/// the text is not one.
std::optional<int64_t> parse_i64(std::string_view text);
std::optional<uint64_t> parse_u64(std::string_view text);
std::optional<double> parse_f64(std::string_view text);

}  // namespace wirepool::mysql
