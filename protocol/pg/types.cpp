// db::Value <-> PostgreSQL text and binary formats (see types.hpp).
//
// What PostgreSQL does, and so what this file does:
// - text output uses DateStyle ISO and TimeZone UTC; floats print the shortest
//   exact digits (extra_float_digits >= 1), fixed-point for decimal exponents
//   -4 .. 14 (float4: -4 .. 5) and "1e+100" style otherwise;
// - binary dates are int32 days and timestamps int64 microseconds since
//   2000-01-01 (the contract counts from 1970-01-01); INT64_MIN/MAX (INT32 for
//   dates) are -infinity/infinity;
// - numeric binary is int16 ndigits, int16 weight, uint16 sign (0x0000 +,
//   0x4000 -, 0xC000 NaN, 0xD000 +Infinity, 0xF000 -Infinity), uint16 dscale,
//   then ndigits base-10000 digits, the first one worth 10000^weight;
// - input accepts surrounding whitespace, PostgreSQL's boolean spellings and
//   the hex and escape bytea forms.

#include "protocol/pg/types.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/pg/bytea.hpp"
#include "protocol/pg/convert.hpp"
#include "protocol/pg/datetime.hpp"
#include "protocol/pg/numbers.hpp"
#include "protocol/pg/numeric.hpp"
#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {

using namespace detail;

bool valid_utf8(std::string_view s, size_t& bad) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const uint8_t c = p[i];
    bad = i;
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

namespace {

bool encode_into(const db::ValueView& v, uint32_t type_oid, int16_t format, std::string& out,
                 Why& why) {
  const Target t = target_of(type_oid);
  if (v.kind == db::Kind::Null) {
    why = "a NULL value has no encoding: send a NULL field";
    return false;
  }
  if (format != 0 && format != 1) {
    why = "unsupported format code: " + std::to_string(format);
    return false;
  }
  const bool binary = format == 1;
  if (!binary && v.kind == db::Kind::Text) {
    out.append(v.str);
    return true;
  }
  switch (t) {
    case Target::boolean: {
      auto b = to_bool(v, why);
      if (!b) return false;
      if (binary) {
        out.push_back(*b ? '\1' : '\0');
      } else {
        out.push_back(*b ? 't' : 'f');
      }
      return true;
    }
    case Target::int2:
    case Target::int4:
    case Target::int8:
    case Target::oid: {
      auto i = to_int(v, t, type_oid, why);
      if (!i) return false;
      if (!binary) {
        append_int(out, *i);
      } else {
        put_be(out, static_cast<uint64_t>(*i), t == Target::int2 ? 2 : t == Target::int8 ? 8 : 4);
      }
      return true;
    }
    case Target::float4:
    case Target::float8: {
      auto d = to_double(v, type_oid, why);
      if (!d) return false;
      if (t == Target::float4) {
        auto f = narrow_float(*d, why);
        if (!f) return false;
        if (binary) {
          put_be(out, std::bit_cast<uint32_t>(*f), 4);
        } else {
          append_float4(out, *f);
        }
      } else if (binary) {
        put_be(out, std::bit_cast<uint64_t>(*d), 8);
      } else {
        append_float8(out, *d);
      }
      return true;
    }
    case Target::numeric: {
      auto d = to_decimal(v, why);
      if (!d) return false;
      if (binary) {
        append_decimal_binary(out, *d);
      } else {
        append_decimal_text(out, *d);
      }
      return true;
    }
    case Target::date:
    case Target::timestamp:
    case Target::timestamptz: {
      auto m = to_time(v, t, type_oid, why);
      if (!m) return false;
      if (!binary) {
        append_time(out, *m, form_of(t));
      } else if (t == Target::date) {
        put_be(out, static_cast<uint32_t>(to_pg_date(*m)), 4);
      } else {
        auto pg = to_pg_timestamp(*m);
        if (!pg) {
          why = "timestamp out of range";
          return false;
        }
        put_be(out, static_cast<uint64_t>(*pg), 8);
      }
      return true;
    }
    case Target::bytea:
      if (v.kind == db::Kind::Bytes) {
        if (binary) {
          out.append(v.str);
        } else {
          append_bytea_hex(out, v.str);
        }
        return true;
      }
      if (binary && v.kind == db::Kind::Text) {
        // Text as bytea input (hex or escape form), as the text format passes it.
        if (auto raw = bytea_from_text(v.str)) {
          out.append(*raw);
          return true;
        }
        why = "value " + quote(v.str) + " is not valid for type bytea";
        return false;
      }
      append_text_of(out, v);
      return true;
    case Target::uuid: {
      if (!binary) {
        append_text_of(out, v);
        return true;
      }
      auto u = parse_uuid(text_of(v));
      if (!u) {
        why = "value " + quote(text_of(v)) + " is not valid for type uuid";
        return false;
      }
      out.append(reinterpret_cast<const char*>(u->data()), u->size());
      return true;
    }
    case Target::jsonb:
      if (binary) out.push_back('\1');  // jsonb binary format version
      append_text_of(out, v);
      return true;
    case Target::unspecified:
    case Target::text:
      append_text_of(out, v);
      return true;
    case Target::other:
      if (!binary) {
        append_text_of(out, v);
        return true;
      }
      why = "binary format is not supported for type " + type_label(type_oid);
      return false;
  }
  return false;
}

std::string lower_prefix(std::string_view name) {
  std::string lower;
  for (char c : name.substr(0, 32))
    lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return lower;
}

/// A backend's name of a variable-length character type: VARCHAR, NVARCHAR,
/// VARCHAR2, "character varying", ODBC's WVARCHAR (any case, with or without "(n)").
bool is_varchar_name(std::string_view name) {
  const std::string lower = lower_prefix(name);
  return lower.find("varchar") != std::string::npos || lower.find("varying") != std::string::npos;
}

/// A backend's name of a fixed-length character type: CHAR, NCHAR, CHARACTER,
/// bpchar, ODBC's WCHAR (any case, with or without "(n)").
bool is_char_name(std::string_view name) {
  std::string base = lower_prefix(name.substr(0, name.find('(')));
  while (!base.empty() && base.back() == ' ')
    base.pop_back();
  return base == "char" || base == "nchar" || base == "character" || base == "bpchar" ||
         base == "wchar" || base == "national character" || base == "national char";
}

}  // namespace

// ---------------------------------------------------------------------------
// Public functions

WireType wire_type_for(const db::Column& column) {
  switch (column.kind) {
    case db::Kind::Bool:
      return {oid::kBool, 1, -1};
    case db::Kind::I64:
      if (column.native.int_bytes == 2) return {oid::kInt2, 2, -1};
      if (column.native.int_bytes == 4) return {oid::kInt4, 4, -1};
      return {oid::kInt8, 8, -1};
    case db::Kind::U64:
      return {oid::kNumeric, -1, -1};
    case db::Kind::F64:
      return {oid::kFloat8, 8, -1};
    case db::Kind::Bytes:
      return {oid::kBytea, -1, -1};
    case db::Kind::Time:
      switch (column.native.time_form) {
        case db::TimeForm::date:
          return {oid::kDate, 4, -1};
        case db::TimeForm::timestamp:
          return {oid::kTimestamp, 8, -1};
        case db::TimeForm::timestamptz:
          return {oid::kTimestamptz, 8, -1};
      }
      return {oid::kTimestamptz, 8, -1};
    case db::Kind::Decimal: {
      // numeric(p,s): typmod ((p << 16) | s) + VARHDRSZ, for 1 <= p <= 1000, 0 <= s <= p.
      const int32_t p = column.native.precision, s = column.native.scale;
      if (p >= 1 && p <= 1000 && s >= 0 && s <= p) return {oid::kNumeric, -1, ((p << 16) | s) + 4};
      return {oid::kNumeric, -1, -1};
    }
    case db::Kind::Text:
      // VARCHAR(n) / CHAR(n) with the n the driver knows: varchar / bpchar,
      // typmod n + VARHDRSZ, as PostgreSQL describes them.
      if (column.native.length > 0 && column.native.length <= 10485760) {
        const auto typmod = static_cast<int32_t>(column.native.length) + 4;
        if (is_varchar_name(column.native.name)) return {oid::kVarchar, -1, typmod};
        if (is_char_name(column.native.name)) return {oid::kBpchar, -1, typmod};
      }
      break;
    case db::Kind::Null:
      break;
  }
  return {oid::kText, -1, -1};
}

WireType wire_type_for(const db::ParamInfo& param) {
  db::Column c;
  c.kind = param.kind;
  c.native = param.native;
  return wire_type_for(c);
}

bool encode_value(const db::ValueView& v, uint32_t type_oid, int16_t format, std::string& out,
                  std::string* error) {
  const size_t mark = out.size();
  Why why;
  if (encode_into(v, type_oid, format, out, why)) return true;
  out.resize(mark);
  if (error) *error = std::move(why);
  return false;
}

}  // namespace wirepool::pg
