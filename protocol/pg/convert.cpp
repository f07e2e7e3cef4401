// db::Value -> the intermediate a PostgreSQL type needs (convert.hpp).
#include "protocol/pg/convert.hpp"

#include <cmath>
#include <limits>

#include "protocol/pg/datetime.hpp"
#include "protocol/pg/numbers.hpp"
#include "protocol/pg/types.hpp"

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {
namespace detail {

Target target_of(uint32_t type_oid) {
  switch (type_oid) {
    case 0:
    case oid::kUnknown:
      return Target::unspecified;
    case oid::kBool:
      return Target::boolean;
    case oid::kInt2:
      return Target::int2;
    case oid::kInt4:
      return Target::int4;
    case oid::kInt8:
      return Target::int8;
    case oid::kOid:
      return Target::oid;
    case oid::kFloat4:
      return Target::float4;
    case oid::kFloat8:
      return Target::float8;
    case oid::kNumeric:
      return Target::numeric;
    case oid::kText:
    case oid::kVarchar:
    case oid::kBpchar:
    case oid::kName:
    case oid::kChar:
    case oid::kJson:
      return Target::text;
    case oid::kJsonb:
      return Target::jsonb;
    case oid::kUuid:
      return Target::uuid;
    case oid::kBytea:
      return Target::bytea;
    case oid::kDate:
      return Target::date;
    case oid::kTimestamp:
      return Target::timestamp;
    case oid::kTimestamptz:
      return Target::timestamptz;
    default:
      return Target::other;
  }
}

/// PostgreSQL's name of a type, for messages.
std::string type_label(uint32_t type_oid) {
  switch (type_oid) {
    case oid::kBool:
      return "boolean";
    case oid::kInt2:
      return "smallint";
    case oid::kInt4:
      return "integer";
    case oid::kInt8:
      return "bigint";
    case oid::kOid:
      return "oid";
    case oid::kFloat4:
      return "real";
    case oid::kFloat8:
      return "double precision";
    case oid::kNumeric:
      return "numeric";
    case oid::kBytea:
      return "bytea";
    case oid::kDate:
      return "date";
    case oid::kTimestamp:
      return "timestamp without time zone";
    case oid::kTimestamptz:
      return "timestamp with time zone";
    case oid::kUuid:
      return "uuid";
    case oid::kJson:
      return "json";
    case oid::kJsonb:
      return "jsonb";
    case oid::kText:
      return "text";
    case oid::kVarchar:
      return "character varying";
    case oid::kBpchar:
      return "character";
    case oid::kName:
      return "name";
    default:
      return "OID " + std::to_string(type_oid);
  }
}

std::string_view kind_label(db::Kind k) {
  // PostgreSQL's words for a value kind, in conversion errors sent to clients.
  switch (k) {
    case db::Kind::Null:
      return "null";
    case db::Kind::Bool:
      return "boolean";
    case db::Kind::I64:
      return "integer";
    case db::Kind::U64:
      return "unsigned integer";
    case db::Kind::F64:
      return "float";
    case db::Kind::Text:
      return "text";
    case db::Kind::Bytes:
      return "bytes";
    case db::Kind::Time:
      return "time";
    case db::Kind::Decimal:
      return "decimal";
  }
  return "value";
}

bool int_range(Target t, int64_t v) {
  switch (t) {
    case Target::int2:
      return v >= INT16_MIN && v <= INT16_MAX;
    case Target::int4:
      return v >= INT32_MIN && v <= INT32_MAX;
    case Target::oid:
      return v >= 0 && v <= int64_t(UINT32_MAX);
    default:
      return true;
  }
}

// ---------------------------------------------------------------------------

/// Renders any value as text, as a cast to text would.
void append_text_of(std::string& out, const db::ValueView& v) {
  switch (v.kind) {
    case db::Kind::Null:
      break;
    case db::Kind::Bool:
      out.append(v.b ? "true" : "false");
      break;
    case db::Kind::I64:
      append_int(out, v.i64);
      break;
    case db::Kind::U64:
      append_int(out, v.u64);
      break;
    case db::Kind::F64:
      append_float8(out, v.f64);
      break;
    case db::Kind::Text:
    case db::Kind::Decimal:
      out.append(v.str);
      break;
    case db::Kind::Bytes:
      append_bytea_hex(out, v.str);
      break;
    case db::Kind::Time:
      append_time(out, v.micros, db::TimeForm::timestamptz);
      break;
  }
}

std::string text_of(const db::ValueView& v) {
  std::string s;
  append_text_of(s, v);
  return s;
}

std::optional<int64_t> to_int(const db::ValueView& v, Target t, uint32_t type_oid, Why& why) {
  const std::string label = type_label(type_oid);
  auto out_of_range = [&](const std::string& shown) {
    why = "value " + shown + " is out of range for type " + label;
    return std::nullopt;
  };
  int64_t r = 0;
  switch (v.kind) {
    case db::Kind::Bool:
      r = v.b ? 1 : 0;
      break;
    case db::Kind::I64:
      r = v.i64;
      break;
    case db::Kind::U64:
      if (v.u64 > uint64_t(INT64_MAX)) return out_of_range(std::to_string(v.u64));
      r = int64_t(v.u64);
      break;
    case db::Kind::F64: {
      // float8 -> int: round half to even (rint), NaN and overflow are errors.
      const double x = std::nearbyint(v.f64);
      if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
        return out_of_range(text_of(v));
      }
      r = static_cast<int64_t>(x);
      break;
    }
    case db::Kind::Decimal: {
      // numeric -> int: round half away from zero.
      auto d = parse_decimal(v.str);
      if (!d || d->special != Decimal::Special::none) {
        why = "value " + quote(v.str) + " is not valid for type " + label;
        return std::nullopt;
      }
      std::string digits = d->int_digits.empty() ? "0" : d->int_digits;
      if (digits.size() > 19) return out_of_range(std::string(v.str));
      uint64_t mag = 0;
      (void)std::from_chars(digits.data(), digits.data() + digits.size(), mag);
      if (!d->frac_digits.empty() && d->frac_digits[0] >= '5') ++mag;
      if (mag > uint64_t(INT64_MAX) + (d->neg ? 1 : 0)) return out_of_range(std::string(v.str));
      r = d->neg ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
      break;
    }
    case db::Kind::Text:
      switch (parse_int64(v.str, r)) {
        case Parse::ok:
          break;
        case Parse::range:
          return out_of_range(quote(v.str));
        case Parse::syntax:
          why = "value " + quote(v.str) + " is not valid for type " + label;
          return std::nullopt;
      }
      break;
    default:
      why = "cannot convert " + std::string(kind_label(v.kind)) + " to " + label;
      return std::nullopt;
  }
  if (!int_range(t, r)) return out_of_range(std::to_string(r));
  return r;
}

std::optional<double> to_double(const db::ValueView& v, uint32_t type_oid, Why& why) {
  switch (v.kind) {
    case db::Kind::I64:
      return double(v.i64);
    case db::Kind::U64:
      return double(v.u64);
    case db::Kind::F64:
      return v.f64;
    case db::Kind::Text:
    case db::Kind::Decimal: {
      double d = 0;
      switch (parse_float(v.str, d)) {
        case Parse::ok:
          return d;
        case Parse::range:
          why = "value " + quote(v.str) + " is out of range for type " + type_label(type_oid);
          return std::nullopt;
        case Parse::syntax:
          break;
      }
      why = "value " + quote(v.str) + " is not valid for type " + type_label(type_oid);
      return std::nullopt;
    }
    default:
      why = "cannot convert " + std::string(kind_label(v.kind)) + " to " + type_label(type_oid);
      return std::nullopt;
  }
}

/// float8 -> float4 as PostgreSQL casts: overflow and underflow are errors.
std::optional<float> narrow_float(double d, Why& why) {
  const auto f = static_cast<float>(d);
  if ((std::isinf(f) && !std::isinf(d)) || (f == 0.0f && d != 0.0)) {
    std::string shown;
    append_float8(shown, d);
    why = "value " + shown + " is out of range for type real";
    return std::nullopt;
  }
  return f;
}

std::optional<Decimal> to_decimal(const db::ValueView& v, Why& why) {
  std::string text;
  switch (v.kind) {
    case db::Kind::I64:
      append_int(text, v.i64);
      break;
    case db::Kind::U64:
      append_int(text, v.u64);
      break;
    case db::Kind::F64: {
      // float8 -> numeric keeps DBL_DIG (15) significant digits, like %.15g.
      if (std::isnan(v.f64)) return Decimal{Decimal::Special::nan, false, {}, {}};
      if (std::isinf(v.f64)) {
        return Decimal{v.f64 > 0 ? Decimal::Special::pinf : Decimal::Special::ninf, false, {}, {}};
      }
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, v.f64, std::chars_format::general, 15);
      text.assign(buf, r.ptr);
      break;
    }
    case db::Kind::Text:
    case db::Kind::Decimal:
      text = v.str;
      break;
    default:
      why = "cannot convert " + std::string(kind_label(v.kind)) + " to numeric";
      return std::nullopt;
  }
  bool range = false;
  auto d = parse_decimal(text, &range);
  if (!d) {
    why = range ? "value " + quote(text) + " overflows numeric format"
                : "value " + quote(text) + " is not valid for type numeric";
  }
  return d;
}

std::optional<bool> to_bool(const db::ValueView& v, Why& why) {
  switch (v.kind) {
    case db::Kind::Bool:
      return v.b;
    case db::Kind::I64:
      return v.i64 != 0;
    case db::Kind::U64:
      return v.u64 != 0;
    case db::Kind::Text:
      if (auto b = parse_bool(v.str)) return b;
      why = "value " + quote(v.str) + " is not valid for type boolean";
      return std::nullopt;
    default:
      why = "cannot convert " + std::string(kind_label(v.kind)) + " to boolean";
      return std::nullopt;
  }
}

std::optional<int64_t> to_time(const db::ValueView& v, Target t, uint32_t type_oid, Why& why) {
  if (v.kind == db::Kind::Time) return v.micros;
  if (v.kind == db::Kind::Text) {
    if (auto m = parse_time_impl(v.str, t == Target::timestamp)) return m;
    why = "value " + quote(v.str) + " is not valid for type " + type_label(type_oid);
    return std::nullopt;
  }
  why = "cannot convert " + std::string(kind_label(v.kind)) + " to " + type_label(type_oid);
  return std::nullopt;
}

db::TimeForm form_of(Target t) {
  switch (t) {
    case Target::date:
      return db::TimeForm::date;
    case Target::timestamp:
      return db::TimeForm::timestamp;
    default:
      return db::TimeForm::timestamptz;
  }
}

}  // namespace detail

using namespace detail;

}  // namespace wirepool::pg
