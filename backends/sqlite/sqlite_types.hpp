#pragma once
// SQLite driver internals: declared types -> kinds, and the text forms of
// times, booleans and decimals. Pure functions, no libsqlite3 calls.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backends/db.hpp"

namespace wirepool::sqlite {

/// How a column reads its values, decided from its declared type.
enum class Decl : uint8_t {
  from_value,  ///< no declared type (an expression) or a name SQLite gives no meaning: the value
               ///< decides
  blob,        ///< BLOB, BYTEA, *BINARY*: the value decides; Bytes before any row
  integer,     ///< INTEGER affinity: I64
  real,        ///< REAL affinity: F64
  text,        ///< TEXT affinity: Text
  numeric,     ///< NUMERIC / DECIMAL / NUMBER / MONEY: Decimal, exact text at the declared scale
  boolean,     ///< contains BOOL: 1/0, true/false/t/f read as Bool
  time,        ///< contains DATE or TIME: Unix seconds or ISO-8601 text read as Time
};

struct DeclaredType {
  Decl decl = Decl::from_value;
  db::NativeType native;  ///< name as declared; precision, scale, length, time_form
};

/// Classifies a declared type ("" for expression columns). SQLite's affinity
/// rules (INT, then CHAR/CLOB/TEXT, then BLOB, then REAL/FLOA/DOUB, else NUMERIC)
/// preceded by the BOOL and DATE/TIME rules; "(p)" / "(p,s)" become length or
/// precision and scale.
DeclaredType parse_declared_type(std::string_view declared);

/// The PostgreSQL integer width (2 or 4 bytes) a declared type's name gives
/// its values: SMALLINT, INT2, TINYINT 2; INT, INT4, MEDIUMINT 4; 0 (int8) for
/// any other, INTEGER included: SQLite's own 64-bit type, the rowid's
/// (docs/sqlite.md#types). SQLite does not enforce it: a larger value stored
/// there fails the row that carries it (22003).
int8_t declared_int_bytes(std::string_view declared);

/// The column kind a declaration implies; Kind::Null when the value decides.
db::Kind declared_kind(Decl d);

/// Unix seconds -> microseconds, for years 0001..9999; nullopt outside.
std::optional<int64_t> unix_seconds_to_micros(int64_t seconds);
std::optional<int64_t> unix_seconds_to_micros(double seconds);

/// ISO-8601 date or timestamp -> microseconds since the epoch. Accepts
/// "YYYY-MM-DD", then optionally 'T', 't' or ' ' and "HH:MM[:SS[.fraction]]",
/// then optionally (after an optional space) "Z" or an offset "+HH", "+HH:MM",
/// "+HHMM". No offset means UTC. Fractions finer than a microsecond are rounded.
std::optional<int64_t> parse_iso_time(std::string_view text);

/// Microseconds since the epoch -> "YYYY-MM-DD HH:MM:SS[.ffffff]+00:00" (UTC;
/// the fraction only when not zero), the form the driver binds Time values in.
std::string format_iso_time(int64_t micros);

/// "1", "0", "true", "false", "t", "f" (any case) -> bool.
std::optional<bool> parse_bool_text(std::string_view text);

/// An integer as exact decimal text, with `scale` fractional digits when scale > 0.
std::string decimal_from_int(int64_t v, int scale);

/// A double as exact decimal text: its shortest round-trip digits, written
/// without an exponent, rounded half away from zero to `scale` fractional digits
/// when scale >= 0 (scale < 0: as many as needed). nullopt for NaN and infinities.
std::optional<std::string> decimal_from_double(double v, int scale);

}  // namespace wirepool::sqlite
