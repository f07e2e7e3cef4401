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

#include "protocol/pg/bytea.hpp"
#include "protocol/pg/datetime.hpp"
#include "protocol/pg/numbers.hpp"
#include "protocol/pg/numeric.hpp"
#include "protocol/pg/params.hpp"
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

}  // namespace wirepool::pg
