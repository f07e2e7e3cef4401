// db::Value -> TDS values of a declared type (types.hpp).
#include "protocol/tds/types.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/tds/value_util.hpp"

namespace wirepool::tds {

using namespace detail;

namespace {

std::string value_as_text(const db::ValueView& v) {
  switch (v.kind) {
    case db::Kind::Bool:
      return v.b ? "1" : "0";
    case db::Kind::I64:
      return std::to_string(v.i64);
    case db::Kind::U64:
      return std::to_string(v.u64);
    case db::Kind::F64: {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, v.f64);
      return std::string(buf, r.ptr);
    }
    case db::Kind::Time:
      return time_text(v.micros);
    case db::Kind::Bytes: {
      std::string s = "0x";
      for (char c : v.str)
        s += hex2(static_cast<uint8_t>(c));
      return s;
    }
    default:
      return std::string(v.str);
  }
}

/// A value kind's name in encoding errors, which clients see.
std::string kind_name(db::Kind k) {
  switch (k) {
    case db::Kind::Null:
      return "NULL";
    case db::Kind::Bool:
      return "bool";
    case db::Kind::I64:
      return "int64";
    case db::Kind::U64:
      return "uint64";
    case db::Kind::F64:
      return "float64";
    case db::Kind::Text:
      return "text";
    case db::Kind::Bytes:
      return "bytes";
    case db::Kind::Time:
      return "time";
    case db::Kind::Decimal:
      return "decimal";
  }
  return "?";
}

db::Status cannot(const TypeInfo& t, const db::ValueView& v) {
  return make_error("42804",
                    "cannot send a " + kind_name(v.kind) + " value as " + type_name(t.type));
}

/// The value as a signed 64-bit integer (I64, U64, Bool, integral Decimal/Text).
bool as_int(const db::ValueView& v, int64_t& out) {
  switch (v.kind) {
    case db::Kind::I64:
      out = v.i64;
      return true;
    case db::Kind::U64:
      if (v.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      out = static_cast<int64_t>(v.u64);
      return true;
    case db::Kind::Bool:
      out = v.b ? 1 : 0;
      return true;
    case db::Kind::Text:
    case db::Kind::Decimal: {
      auto r = std::from_chars(v.str.data(), v.str.data() + v.str.size(), out);
      return r.ec == std::errc() && r.ptr == v.str.data() + v.str.size();
    }
    default:
      return false;
  }
}

/// Splits micros since the epoch into days since 0001-01-01 and micros of day.
void split_time(int64_t micros, int64_t& days0001, int64_t& tod) {
  const int64_t d = floor_div(micros, kMicrosPerDay);
  tod = micros - d * kMicrosPerDay;
  days0001 = d + kDaysTo1970From0001;
}

/// "HH:MM:SS[.f...]" -> units of 10^-scale seconds; extra fraction digits
/// must be zeros (never rounded).
bool parse_time_of_day(std::string_view s, uint8_t scale, uint64_t& units) {
  auto two = [&](size_t at, unsigned max, unsigned& v) {
    if (at + 2 > s.size() || s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9')
      return false;
    v = static_cast<unsigned>((s[at] - '0') * 10 + (s[at + 1] - '0'));
    return v <= max;
  };
  unsigned h, m, sec;
  if (!two(0, 23, h) || s.size() < 8 || s[2] != ':' || !two(3, 59, m) || s[5] != ':' ||
      !two(6, 59, sec))
    return false;
  uint64_t frac = 0;
  if (s.size() > 8) {
    if (s[8] != '.' || s.size() == 9) return false;
    for (size_t i = 9; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      const size_t digit = i - 9;
      if (digit >= scale) {
        if (s[i] != '0') return false;
      } else {
        frac = frac * 10 + static_cast<uint64_t>(s[i] - '0');
      }
    }
    const size_t given = std::min<size_t>(s.size() - 9, scale);
    for (size_t i = given; i < scale; ++i)
      frac *= 10;
  }
  units = (uint64_t{h} * 3600 + m * 60 + sec) * static_cast<uint64_t>(pow10(scale)) + frac;
  return true;
}

void put_plp(std::string& out, std::string_view data) {
  wire::put_u64(out, data.size());
  constexpr size_t kChunk = 8000;
  for (size_t i = 0; i < data.size(); i += kChunk) {
    const size_t n = std::min(kChunk, data.size() - i);
    wire::put_u32(out, static_cast<uint32_t>(n));
    out.append(data.substr(i, n));
  }
  wire::put_u32(out, 0);
}

/// Integer types, from an integer, a bool or text.
db::Status encode_integer(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  int64_t i;
  if (!as_int(v, i)) {
    if (v.kind == db::Kind::U64) return make_error("22003", "integer out of range for INT8");
    return cannot(t, v);
  }
  const size_t n = ty == type::kIntN ? t.max_length : fixed_size(ty);
  const bool fits = n == 8 || (n == 4 && i >= INT32_MIN && i <= INT32_MAX) ||
                    (n == 2 && i >= INT16_MIN && i <= INT16_MAX) || (n == 1 && i >= 0 && i <= 255);
  if (!fits)
    return make_error("22003", "integer " + std::to_string(i) + " out of range for a " +
                                   std::to_string(n) + "-byte integer");
  if (ty == type::kIntN) wire::put_u8(out, static_cast<uint8_t>(n));
  put_le(out, static_cast<uint64_t>(i), n);
  return {};
}

/// BIT.
db::Status encode_bit(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  int64_t i;
  if (!as_int(v, i)) return cannot(t, v);
  if (ty == type::kBitN) wire::put_u8(out, 1);
  wire::put_u8(out, i != 0 ? 1 : 0);
  return {};
}

/// REAL and FLOAT.
db::Status encode_float(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  double d;
  if (v.kind == db::Kind::F64)
    d = v.f64;
  else if (v.kind == db::Kind::I64)
    d = static_cast<double>(v.i64);
  else if (v.kind == db::Kind::U64)
    d = static_cast<double>(v.u64);
  else if (v.kind == db::Kind::Decimal || v.kind == db::Kind::Text) {
    auto r = std::from_chars(v.str.data(), v.str.data() + v.str.size(), d);
    if (r.ec != std::errc() || r.ptr != v.str.data() + v.str.size())
      return make_error("22P02", "invalid floating-point value \"" + std::string(v.str) + "\"");
  } else {
    return cannot(t, v);
  }
  const size_t n = ty == type::kFltN ? t.max_length : fixed_size(ty);
  if (ty == type::kFltN) wire::put_u8(out, static_cast<uint8_t>(n));
  if (n == 4) {
    const float f = static_cast<float>(d);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    wire::put_u32(out, u);
  } else {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    wire::put_u64(out, u);
  }
  return {};
}

/// DECIMAL, NUMERIC and MONEY, from their text: checked against precision and scale.
db::Status encode_decimal(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  DecimalText d;
  std::string text;
  if (v.kind == db::Kind::Decimal || v.kind == db::Kind::Text)
    text = v.str;
  else if (v.kind == db::Kind::I64 || v.kind == db::Kind::U64)
    text = value_as_text(v);
  else if (v.kind == db::Kind::Bool)
    text = v.b ? "1" : "0";
  else
    return cannot(t, v);
  if (!parse_decimal_text(text, d))
    return make_error("22P02", "invalid decimal value \"" + text + "\"");
  const bool money = ty == type::kMoney || ty == type::kMoney4 || ty == type::kMoneyN;
  const uint8_t precision = money ? 19 : t.precision;
  const uint8_t scale = money ? 4 : t.scale;
  std::string err;
  auto mag = scaled_magnitude(d, precision, scale, err);
  if (!mag) return make_error("22003", err);
  const bool negative = d.negative && *mag != 0;
  if (money) {
    const size_t n = ty == type::kMoneyN ? t.max_length : fixed_size(ty);
    const u128 limit =
        n == 4 ? u128(2147483647) + (negative ? 1 : 0) : u128(INT64_MAX) + (negative ? 1 : 0);
    if (*mag > limit) return make_error("22003", "value out of range for MONEY");
    const int64_t units = negative ? static_cast<int64_t>(0 - static_cast<uint64_t>(*mag))
                                   : static_cast<int64_t>(*mag);
    if (ty == type::kMoneyN) wire::put_u8(out, static_cast<uint8_t>(n));
    if (n == 4) {
      wire::put_u32(out, static_cast<uint32_t>(units));
    } else {
      const auto u = static_cast<uint64_t>(units);
      wire::put_u32(out, static_cast<uint32_t>(u >> 32));
      wire::put_u32(out, static_cast<uint32_t>(u));
    }
    return {};
  }
  const size_t n = decimal_bytes(t.precision);
  wire::put_u8(out, static_cast<uint8_t>(n));
  wire::put_u8(out, negative ? 0 : 1);
  u128 m = *mag;
  for (size_t i = 0; i + 1 < n; ++i) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(m & 0xFF)));
    m >>= 8;
  }
  return {};
}

/// UNIQUEIDENTIFIER.
db::Status encode_guid(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  std::string w;
  if (v.kind == db::Kind::Text) {
    if (!parse_guid(v.str, w))
      return make_error("22P02", "invalid uniqueidentifier \"" + std::string(v.str) + "\"");
  } else if (v.kind == db::Kind::Bytes && v.str.size() == 16) {
    // RFC 4122 byte order (PostgreSQL's binary uuid) -> mixed-endian.
    const auto* b = reinterpret_cast<const uint8_t*>(v.str.data());
    const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    for (uint8_t i : order)
      w.push_back(static_cast<char>(b[i]));
  } else {
    return cannot(t, v);
  }
  wire::put_u8(out, 16);
  out += w;
  return {};
}

/// DATE, TIME, DATETIME2 and DATETIMEOFFSET.
db::Status encode_date_time(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  if (ty == type::kTimeN && v.kind == db::Kind::Text) {
    // A time of day as TIMEN decodes it: "HH:MM:SS[.fffffff]".
    uint64_t units;
    if (!parse_time_of_day(v.str, t.scale, units))
      return make_error("22007", "invalid time of day \"" + std::string(v.str) + "\" for TIME(" +
                                     std::to_string(t.scale) + ")");
    const size_t tb = time_bytes(t.scale);
    wire::put_u8(out, static_cast<uint8_t>(tb));
    put_le(out, units, tb);
    return {};
  }
  if (v.kind != db::Kind::Time) return cannot(t, v);
  int64_t days, tod;
  split_time(v.micros, days, tod);
  if (days < 0 || days > kMaxDateN)
    return make_error("22008", "date out of range for " + type_name(ty));
  if (ty == type::kDateN) {
    if (tod != 0) return make_error("22008", "a DATE value cannot hold a time of day");
    wire::put_u8(out, 3);
    put_le(out, static_cast<uint64_t>(days), 3);
    return {};
  }
  uint64_t units;
  if (t.scale >= 6) {
    units = static_cast<uint64_t>(tod) * static_cast<uint64_t>(pow10(t.scale - 6));
  } else {
    const int64_t div = pow10(6 - t.scale);
    if (tod % div != 0)
      return make_error("22008",
                        "time has more fraction digits than scale " + std::to_string(t.scale));
    units = static_cast<uint64_t>(tod / div);
  }
  const size_t tb = time_bytes(t.scale);
  const size_t n = tb + (ty == type::kTimeN ? 0 : 3) + (ty == type::kDateTimeOffsetN ? 2 : 0);
  wire::put_u8(out, static_cast<uint8_t>(n));
  put_le(out, units, tb);
  if (ty != type::kTimeN) put_le(out, static_cast<uint64_t>(days), 3);
  if (ty == type::kDateTimeOffsetN) wire::put_u16(out, 0);  // UTC
  return {};
}

/// DATETIME and SMALLDATETIME.
db::Status encode_legacy_datetime(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  if (v.kind != db::Kind::Time) return cannot(t, v);
  const size_t n = ty == type::kDateTimN ? t.max_length : fixed_size(ty);
  const int64_t d = floor_div(v.micros, kMicrosPerDay);
  const int64_t tod = v.micros - d * kMicrosPerDay;
  int64_t days = d + kDaysTo1970From1900;
  // DATETIME has 1/300 s and SMALLDATETIME one minute: their own
  // resolution, rounded to the nearest as SQL Server itself converts.
  if (n == 8) {
    int64_t ticks = (tod * 3 + 5000) / 10000;
    if (ticks >= 300LL * 86400) {
      ticks -= 300LL * 86400;
      ++days;
    }
    if (days < -53690 || days > 2958463)  // 1753-01-01 .. 9999-12-31
      return make_error("22008", "date out of range for DATETIME");
    if (ty == type::kDateTimN) wire::put_u8(out, 8);
    wire::put_u32(out, static_cast<uint32_t>(static_cast<int32_t>(days)));
    wire::put_u32(out, static_cast<uint32_t>(ticks));
  } else {
    int64_t minutes = (tod + 30000000) / 60000000;
    if (minutes >= 1440) {
      minutes -= 1440;
      ++days;
    }
    if (days < 0 || days > 65535) return make_error("22008", "date out of range for SMALLDATETIME");
    if (ty == type::kDateTimN) wire::put_u8(out, 4);
    wire::put_u16(out, static_cast<uint16_t>(days));
    wire::put_u16(out, static_cast<uint16_t>(minutes));
  }
  return {};
}

/// Character types and XML.
db::Status encode_text(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  const std::string text = value_as_text(v);
  std::string data;
  if (ty == type::kNVarChar || ty == type::kNChar || ty == type::kXml) {
    std::string err;
    if (!utf8_to_ucs2(text, data, &err)) return make_error("22021", err);
  } else if (t.collation.utf8()) {
    data = text;
  } else if (!utf8_to_cp1252(text, data)) {
    return make_error("22021", "character not representable in the column's code page");
  }
  if (t.plp()) {
    put_plp(out, data);
    return {};
  }
  if (data.size() > t.max_length)
    return make_error("22001", "value of " + std::to_string(data.size()) + " bytes too long for " +
                                   type_name(ty) + "(" + std::to_string(t.max_length) + " bytes)");
  wire::put_u16(out, static_cast<uint16_t>(data.size()));
  out += data;
  return {};
}

/// Binary types.
db::Status encode_binary(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  if (v.kind != db::Kind::Bytes && v.kind != db::Kind::Text) return cannot(t, v);
  if (t.plp()) {
    put_plp(out, v.str);
    return {};
  }
  if (v.str.size() > t.max_length)
    return make_error("22001", "value of " + std::to_string(v.str.size()) + " bytes too long for " +
                                   type_name(ty) + "(" + std::to_string(t.max_length) + ")");
  wire::put_u16(out, static_cast<uint16_t>(v.str.size()));
  out.append(v.str);
  return {};
}

db::Status encode_non_null(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  switch (ty) {
    case type::kInt1:
    case type::kInt2:
    case type::kInt4:
    case type::kInt8:
    case type::kIntN:
      return encode_integer(out, t, v);
    case type::kBit:
    case type::kBitN:
      return encode_bit(out, t, v);
    case type::kFlt4:
    case type::kFlt8:
    case type::kFltN:
      return encode_float(out, t, v);
    case type::kDecimalN:
    case type::kNumericN:
    case type::kMoney:
    case type::kMoney4:
    case type::kMoneyN:
      return encode_decimal(out, t, v);
    case type::kGuid:
      return encode_guid(out, t, v);
    case type::kDateN:
    case type::kTimeN:
    case type::kDateTime2N:
    case type::kDateTimeOffsetN:
      return encode_date_time(out, t, v);
    case type::kDateTime:
    case type::kDateTim4:
    case type::kDateTimN:
      return encode_legacy_datetime(out, t, v);
    case type::kNVarChar:
    case type::kNChar:
    case type::kBigVarChar:
    case type::kBigChar:
    case type::kXml:
      return encode_text(out, t, v);
    case type::kBigVarBinary:
    case type::kBigBinary:
      return encode_binary(out, t, v);
    default:
      return make_error("0A000", "cannot encode values of TDS type " + type_name(ty));
  }
}

}  // namespace

db::Status encode_value(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const size_t before = out.size();
  if (v.is_null()) {
    if (t.plp()) {
      wire::put_u64(out, UINT64_MAX);
    } else if (is_ushort_type(t.type)) {
      wire::put_u16(out, 0xFFFF);
    } else if (fixed_size(t.type) != SIZE_MAX) {
      if (t.type == type::kNull) return {};
      return make_error("22004", "NULL cannot be sent as the fixed-length type " +
                                     type_name(t.type) + ": use its nullable form");
    } else {
      wire::put_u8(out, 0);
    }
    return {};
  }
  db::Status s = encode_non_null(out, t, v);
  if (!s.ok()) out.resize(before);
  return s;
}

}  // namespace wirepool::tds
