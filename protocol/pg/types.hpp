#pragma once
// Values between the contract (db::Value) and PostgreSQL's text and binary
// formats, for backends that are not PostgreSQL. The type a column is sent as
// follows DESIGN.md "Mapping between protocols": Bool -> bool, I64 -> int8,
// U64 -> numeric, F64 -> float8, Text -> text, Bytes -> bytea, Time ->
// timestamptz / timestamp / date by the column's TimeForm, Decimal -> numeric,
// unknown (Kind::Null) -> text.
//
// Text formats are what PostgreSQL prints with DateStyle ISO, TimeZone UTC,
// bytea_output hex and extra_float_digits >= 1 (shortest exact floats).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

namespace oid {
inline constexpr uint32_t kBool = 16;
inline constexpr uint32_t kBytea = 17;
inline constexpr uint32_t kChar = 18;
inline constexpr uint32_t kName = 19;
inline constexpr uint32_t kInt8 = 20;
inline constexpr uint32_t kInt2 = 21;
inline constexpr uint32_t kInt4 = 23;
inline constexpr uint32_t kText = 25;
inline constexpr uint32_t kOid = 26;
inline constexpr uint32_t kJson = 114;
inline constexpr uint32_t kFloat4 = 700;
inline constexpr uint32_t kFloat8 = 701;
inline constexpr uint32_t kUnknown = 705;
inline constexpr uint32_t kBpchar = 1042;
inline constexpr uint32_t kVarchar = 1043;
inline constexpr uint32_t kDate = 1082;
inline constexpr uint32_t kTime = 1083;
inline constexpr uint32_t kTimestamp = 1114;
inline constexpr uint32_t kTimestamptz = 1184;
inline constexpr uint32_t kNumeric = 1700;
inline constexpr uint32_t kUuid = 2950;
inline constexpr uint32_t kJsonb = 3802;
}  // namespace oid

/// The PostgreSQL type a column is described and sent as.
struct WireType {
  uint32_t oid = oid::kText;
  int16_t size = -1;      ///< typlen: 1, 2, 4, 8 or -1 (varlena)
  int32_t modifier = -1;  ///< typmod (numeric(p,s): ((p << 16) | s) + 4)
};

/// Well-formed UTF-8 without NUL (PostgreSQL stores no NUL in text). On failure
/// `bad` is the offset of the first offending byte.
bool valid_utf8(std::string_view s, size_t& bad);

/// The wire type for a column of a non-PostgreSQL backend.
WireType wire_type_for(const db::Column& column);
/// The wire type for a parameter whose type the backend reports (Kind::Null -> text).
WireType wire_type_for(const db::ParamInfo& param);

/// Appends `v` rendered as type `type_oid` in `format` (0 text, 1 binary) to `out`
/// (no length prefix). Converts between kinds where PostgreSQL would
/// (I64 -> float8, Text "12" -> int8, ...). On failure answers false and sets
/// `error` ("value \"abc\" is not valid for type int8"); `out` is then unchanged.
/// A Text value in text format is passed through unchanged whatever the type.
bool encode_value(const db::ValueView& v, uint32_t type_oid, int16_t format, std::string& out,
                  std::string* error);

/// A decoded parameter.
struct DecodedParam {
  db::Value value;
  bool untyped = false;  ///< OID 0 / unknown in text format: let the backend convert
};
/// Decodes one Bind parameter declared as `type_oid` (0 = unspecified) in
/// `format`. Text of an unspecified type stays untyped text; binary of an
/// unspecified type is Bytes. Malformed input answers an error with SQLSTATE
/// 22P02 (text) or 22P03 (binary).
db::Result<DecodedParam> decode_param(std::optional<std::string_view> bytes, uint32_t type_oid,
                                      int16_t format);

// Helpers shared with other protocols and drivers (pure functions).

/// Shortest text that reads back as the same double; "Infinity", "-Infinity", "NaN".
std::string format_float8(double v);
/// "YYYY-MM-DD HH:MM:SS[.ffffff]" followed by "+00" when `with_zone`; "YYYY-MM-DD" for dates.
std::string format_time(int64_t micros_since_epoch, db::TimeForm form);
/// Parses PostgreSQL's ISO input forms ("2024-01-02", "2024-01-02 03:04:05.5",
/// "2024-01-02T03:04:05+02:00", "... +0530", "... Z"); time without a zone is UTC.
std::optional<int64_t> parse_time(std::string_view text);
/// Canonical decimal text (optional sign, digits, optional point and digits) ->
/// numeric binary format, and back. nullopt if not a decimal ("NaN" is accepted).
std::optional<std::string> numeric_to_binary(std::string_view decimal_text);
std::optional<std::string> numeric_from_binary(std::string_view bytes);
/// "\x0a0b..." <-> raw bytes (bytea hex format; the escape format is accepted on input).
std::string bytea_to_hex(std::string_view raw);
std::optional<std::string> bytea_from_text(std::string_view text);

}  // namespace wirepool::pg
