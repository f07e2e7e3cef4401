// Bind parameters -> db::Value (params.hpp).
#include "protocol/pg/params.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "protocol/pg/bytea.hpp"
#include "protocol/pg/convert.hpp"
#include "protocol/pg/datetime.hpp"
#include "protocol/pg/numbers.hpp"
#include "protocol/pg/numeric.hpp"
#include "protocol/pg/types.hpp"

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {

using namespace detail;

namespace {

// ---------------------------------------------------------------------------
// Bind parameters

db::Error syntax_error(uint32_t type_oid, std::string_view text) {
  return make_error("22P02",
                    "invalid input syntax for type " + type_label(type_oid) + ": " + quote(text));
}

db::Error range_error(uint32_t type_oid, std::string_view text) {
  return make_error("22003",
                    "value " + quote(text) + " is out of range for type " + type_label(type_oid));
}

// The error of a number that did not parse (syntax_error or range_error), none if it did.
std::optional<db::Error> parse_error(Parse result, uint32_t type_oid, std::string_view text) {
  switch (result) {
    case Parse::syntax:
      return syntax_error(type_oid, text);
    case Parse::range:
      return range_error(type_oid, text);
    case Parse::ok:
      break;
  }
  return std::nullopt;
}

db::Error binary_error(uint32_t type_oid, std::string_view why) {
  return make_error("22P03", "incorrect binary data format for type " + type_label(type_oid) +
                                 ": " + std::string(why));
}

db::Error utf8_error(std::string_view s, size_t bad) {
  return make_error("22021", "invalid byte sequence for encoding \"UTF8\": " +
                                 hex_byte(static_cast<uint8_t>(s[bad])));
}

db::Value text_value(std::string_view s) {
  return db::Value::text(std::string(s));
}

db::Result<DecodedParam> decode_text_param(std::string_view s, uint32_t type_oid) {
  const Target t = target_of(type_oid);
  size_t bad = 0;
  if (!valid_utf8(s, bad)) return utf8_error(s, bad);
  DecodedParam p;
  switch (t) {
    case Target::unspecified:
    case Target::other:
      p.value = text_value(s);
      p.untyped = true;
      return p;
    case Target::text:
    case Target::jsonb:
      p.value = text_value(s);
      return p;
    case Target::boolean: {
      auto b = parse_bool(s);
      if (!b) return syntax_error(type_oid, s);
      p.value = db::Value::boolean(*b);
      return p;
    }
    case Target::int2:
    case Target::int4:
    case Target::int8:
    case Target::oid: {
      int64_t v = 0;
      if (auto e = parse_error(parse_int64(s, v), type_oid, s)) return *e;
      if (!int_range(t, v)) return range_error(type_oid, s);
      p.value = db::Value::int64(v);
      return p;
    }
    case Target::float4: {
      float f = 0;
      if (auto e = parse_error(parse_float(s, f), type_oid, s)) return *e;
      p.value = db::Value::float64(double(f));
      return p;
    }
    case Target::float8: {
      double d = 0;
      if (auto e = parse_error(parse_float(s, d), type_oid, s)) return *e;
      p.value = db::Value::float64(d);
      return p;
    }
    case Target::numeric: {
      bool range = false;
      auto d = parse_decimal(s, &range);
      if (!d) {
        if (range) return make_error("22003", "value overflows numeric format");
        return syntax_error(type_oid, s);
      }
      std::string text;
      append_decimal_text(text, *d);
      p.value = db::Value::decimal(std::move(text));
      return p;
    }
    case Target::uuid: {
      auto u = parse_uuid(s);
      if (!u) return syntax_error(type_oid, s);
      std::string text;
      append_uuid_text(text, u->data());
      p.value = db::Value::text(std::move(text));
      return p;
    }
    case Target::bytea: {
      auto raw = bytea_from_text(s);
      if (!raw) return syntax_error(type_oid, s);
      p.value = db::Value::bytes(std::move(*raw));
      return p;
    }
    case Target::date:
    case Target::timestamp:
    case Target::timestamptz: {
      auto m = parse_time_impl(s, t != Target::timestamptz);
      if (!m) return syntax_error(type_oid, s);
      int64_t micros = *m;
      if (t == Target::date && micros != kInfinity && micros != kMinusInfinity) {
        micros = floor_div(micros, kMicrosPerDay) * kMicrosPerDay;
      }
      p.value = db::Value::time(micros);
      return p;
    }
  }
  return syntax_error(type_oid, s);
}

db::Result<DecodedParam> decode_binary_param(std::string_view s, uint32_t type_oid) {
  const Target t = target_of(type_oid);
  auto want = [&](size_t n) -> std::optional<db::Error> {
    if (s.size() == n) return std::nullopt;
    return binary_error(
        type_oid, "expected " + std::to_string(n) + " bytes, got " + std::to_string(s.size()));
  };
  DecodedParam p;
  switch (t) {
    case Target::unspecified:
      p.value = db::Value::bytes(std::string(s));
      return p;
    case Target::boolean:
      if (auto e = want(1)) return *e;
      p.value = db::Value::boolean(s[0] != 0);
      return p;
    case Target::int2:
      if (auto e = want(2)) return *e;
      p.value = db::Value::int64(static_cast<int16_t>(get_be(s)));
      return p;
    case Target::int4:
      if (auto e = want(4)) return *e;
      p.value = db::Value::int64(static_cast<int32_t>(get_be(s)));
      return p;
    case Target::oid:
      if (auto e = want(4)) return *e;
      p.value = db::Value::int64(static_cast<int64_t>(get_be(s)));
      return p;
    case Target::int8:
      if (auto e = want(8)) return *e;
      p.value = db::Value::int64(static_cast<int64_t>(get_be(s)));
      return p;
    case Target::float4:
      if (auto e = want(4)) return *e;
      p.value = db::Value::float64(double(std::bit_cast<float>(static_cast<uint32_t>(get_be(s)))));
      return p;
    case Target::float8:
      if (auto e = want(8)) return *e;
      p.value = db::Value::float64(std::bit_cast<double>(get_be(s)));
      return p;
    case Target::numeric: {
      auto text = numeric_from_binary(s);
      if (!text) return binary_error(type_oid, "invalid numeric value");
      p.value = db::Value::decimal(std::move(*text));
      return p;
    }
    case Target::text:
    case Target::jsonb: {
      std::string_view body = s;
      if (t == Target::jsonb) {
        if (body.empty() || body[0] != 1) return binary_error(type_oid, "unsupported version");
        body.remove_prefix(1);
      }
      size_t bad = 0;
      if (!valid_utf8(body, bad)) return utf8_error(body, bad);
      p.value = text_value(body);
      return p;
    }
    case Target::uuid: {
      if (auto e = want(16)) return *e;
      std::string text;
      append_uuid_text(text, reinterpret_cast<const uint8_t*>(s.data()));
      p.value = db::Value::text(std::move(text));
      return p;
    }
    case Target::bytea:
      p.value = db::Value::bytes(std::string(s));
      return p;
    case Target::date: {
      if (auto e = want(4)) return *e;
      const auto days = static_cast<int32_t>(get_be(s));
      if (days == INT32_MAX) {
        p.value = db::Value::time(kInfinity);
      } else if (days == INT32_MIN) {
        p.value = db::Value::time(kMinusInfinity);
      } else {
        int64_t micros = 0;
        if (__builtin_mul_overflow(int64_t(days) + kPgEpochDays, kMicrosPerDay, &micros) ||
            micros == kInfinity || micros == kMinusInfinity) {
          return make_error("22008", "date out of range");
        }
        p.value = db::Value::time(micros);
      }
      return p;
    }
    case Target::timestamp:
    case Target::timestamptz: {
      if (auto e = want(8)) return *e;
      const auto pg = static_cast<int64_t>(get_be(s));
      int64_t micros = pg;
      if (pg != kInfinity && pg != kMinusInfinity &&
          (__builtin_add_overflow(pg, kPgEpochMicros, &micros) || micros == kInfinity)) {
        return make_error("22008", "timestamp out of range");
      }
      p.value = db::Value::time(micros);
      return p;
    }
    case Target::other:
      break;
  }
  return make_error(
      "0A000", "binary format is not supported for parameters of type " + type_label(type_oid));
}

}  // namespace

db::Result<DecodedParam> decode_param(std::optional<std::string_view> bytes, uint32_t type_oid,
                                      int16_t format) {
  if (!bytes) {
    DecodedParam p;
    p.untyped = target_of(type_oid) == Target::unspecified;
    return p;
  }
  if (format == 0) return decode_text_param(*bytes, type_oid);
  if (format == 1) return decode_binary_param(*bytes, type_oid);
  return make_error("22023", "unsupported format code: " + std::to_string(format));
}

}  // namespace wirepool::pg
