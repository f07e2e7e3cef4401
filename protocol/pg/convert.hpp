#pragma once
// Values of the driver contract converted to what a PostgreSQL type needs, by
// PostgreSQL's cast rules (I64 -> float8, Text "12" -> int8, ...).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/pg/numeric.hpp"
#include "sql/types.hpp"

namespace wirepool::pg {

/// For the other value files of protocol/pg/.
namespace detail {

// Target types

enum class Target : uint8_t {
  unspecified,  // OID 0 / unknown
  boolean,
  int2,
  int4,
  int8,
  oid,
  float4,
  float8,
  numeric,
  text,  // text, varchar, bpchar, name, "char", json
  jsonb,
  uuid,
  bytea,
  date,
  timestamp,
  timestamptz,
  other,
};

/// Why a conversion failed, already worded for the client.
using Why = std::string;

Target target_of(uint32_t type_oid);
/// PostgreSQL's name of a type, for messages.
std::string type_label(uint32_t type_oid);
std::string_view kind_label(db::Kind k);
bool int_range(Target t, int64_t v);
/// Renders any value as text, as a cast to text would.
void append_text_of(std::string& out, const db::ValueView& v);
std::string text_of(const db::ValueView& v);
std::optional<int64_t> to_int(const db::ValueView& v, Target t, uint32_t type_oid, Why& why);
std::optional<double> to_double(const db::ValueView& v, uint32_t type_oid, Why& why);
/// float8 -> float4 as PostgreSQL casts: overflow and underflow are errors.
std::optional<float> narrow_float(double d, Why& why);
std::optional<Decimal> to_decimal(const db::ValueView& v, Why& why);
std::optional<bool> to_bool(const db::ValueView& v, Why& why);
std::optional<int64_t> to_time(const db::ValueView& v, Target t, uint32_t type_oid, Why& why);
db::TimeForm form_of(Target t);

}  // namespace detail
}  // namespace wirepool::pg
