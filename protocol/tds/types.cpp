// TDS data types: TYPE_INFO, values, UCS-2, collations, the db::Column mapping.
#include "protocol/tds/types.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {

using wire::Reader;
using u128 = unsigned __int128;

/// Days from 0001-01-01 (TDS DATEN's epoch) to 1970-01-01.
constexpr int64_t kDaysTo1970From0001 = 719162;
/// Days from 1900-01-01 (DATETIME's epoch) to 1970-01-01.
constexpr int64_t kDaysTo1970From1900 = 25567;
constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
constexpr int64_t kMaxDateN = 3652058;  // 9999-12-31

db::Error make_error(std::string_view sqlstate, std::string message) {
  db::Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::string(sqlstate);
  e.message = std::move(message);
  return e;
}

template <class M>
Decoded<M> fail(std::string message) {
  Decoded<M> d;
  d.status = DecodeStatus::error;
  d.error = std::move(message);
  return d;
}
template <class M>
Decoded<M> need_more() {
  return {};
}

std::string hex2(uint8_t b) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return {kHex[b >> 4], kHex[b & 15]};
}

/// Bytes of a TIMEN value at `scale` ([MS-TDS] 2.2.5.4.2).
size_t time_bytes(uint8_t scale) {
  return scale <= 2 ? 3 : scale <= 4 ? 4 : 5;
}

/// Bytes of a DECIMALN value (sign byte included) for `precision`.
size_t decimal_bytes(uint8_t precision) {
  return precision <= 9 ? 5 : precision <= 19 ? 9 : precision <= 28 ? 13 : 17;
}

int64_t pow10(int n) {
  int64_t v = 1;
  while (n-- > 0)
    v *= 10;
  return v;
}

// Howard Hinnant's civil-from-days (proleptic Gregorian).
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

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

void append_2(std::string& s, unsigned v) {
  s.push_back(static_cast<char>('0' + v / 10 % 10));
  s.push_back(static_cast<char>('0' + v % 10));
}

/// "HH:MM:SS[.f...]" for `units` of 10^-scale seconds since midnight.
std::string time_of_day_text(uint64_t units, uint8_t scale) {
  const uint64_t per_sec = static_cast<uint64_t>(pow10(scale));
  const uint64_t secs = units / per_sec;
  std::string s;
  append_2(s, static_cast<unsigned>(secs / 3600));
  s.push_back(':');
  append_2(s, static_cast<unsigned>(secs / 60 % 60));
  s.push_back(':');
  append_2(s, static_cast<unsigned>(secs % 60));
  if (scale > 0) {
    s.push_back('.');
    std::string f = std::to_string(units % per_sec);
    s.append(scale - f.size(), '0');
    s += f;
  }
  return s;
}

/// "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC) for micros since the epoch.
std::string time_text(int64_t micros) {
  const int64_t days = floor_div(micros, kMicrosPerDay);
  const int64_t tod = micros - days * kMicrosPerDay;
  int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  std::string s = std::to_string(y);
  if (s.size() < 4) s.insert(0, 4 - s.size(), '0');
  s.push_back('-');
  append_2(s, m);
  s.push_back('-');
  append_2(s, d);
  s.push_back(' ');
  std::string t = time_of_day_text(static_cast<uint64_t>(tod), 6);
  // drop a zero fraction
  if (tod % 1000000 == 0) t.resize(8);
  return s + t;
}

uint64_t read_le(Bytes b) {
  uint64_t v = 0;
  for (size_t i = b.size(); i-- > 0;)
    v = (v << 8) | b[i];
  return v;
}

void put_le(std::string& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

/// Parsed exact decimal text: sign, integer digits, fraction digits.
struct DecimalText {
  bool negative = false;
  std::string int_digits;
  std::string frac_digits;
};

bool parse_decimal_text(std::string_view s, DecimalText& out) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) out.negative = s[i++] == '-';
  bool any = false, dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      (dot ? out.frac_digits : out.int_digits).push_back(c);
      any = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      return false;
    }
  }
  if (!any) return false;
  // strip leading zeros of the integer part
  size_t z = 0;
  while (z < out.int_digits.size() && out.int_digits[z] == '0')
    ++z;
  out.int_digits.erase(0, z);
  return true;
}

/// The magnitude of `d` scaled to `scale` digits, checked against `precision`.
/// Extra fraction digits must be zeros (never rounded).
std::optional<u128> scaled_magnitude(const DecimalText& d, uint8_t precision, uint8_t scale,
                                     std::string& error) {
  std::string frac = d.frac_digits;
  if (frac.size() > scale) {
    if (frac.find_first_not_of('0', scale) != std::string::npos) {
      error = "value has more than " + std::to_string(scale) + " fraction digits";
      return std::nullopt;
    }
    frac.resize(scale);
  }
  frac.append(scale - frac.size(), '0');
  if (d.int_digits.size() + scale > precision) {
    error = "value does not fit DECIMAL(" + std::to_string(precision) + "," +
            std::to_string(scale) + ")";
    return std::nullopt;
  }
  u128 v = 0;
  for (char c : d.int_digits)
    v = v * 10 + static_cast<unsigned>(c - '0');
  for (char c : frac)
    v = v * 10 + static_cast<unsigned>(c - '0');
  return v;
}

std::string u128_text(u128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return {s.rbegin(), s.rend()};
}

bool is_char_type(uint8_t t) {
  return t == type::kBigVarChar || t == type::kBigChar || t == type::kNVarChar || t == type::kNChar;
}
bool is_ushort_type(uint8_t t) {
  return is_char_type(t) || t == type::kBigVarBinary || t == type::kBigBinary;
}
/// The types whose values travel as UCS-2.
bool is_ucs2_type(uint8_t t) {
  return t == type::kNVarChar || t == type::kNChar || t == type::kXml;
}

size_t fixed_size(uint8_t t) {
  switch (t) {
    case type::kNull:
      return 0;
    case type::kInt1:
    case type::kBit:
      return 1;
    case type::kInt2:
      return 2;
    case type::kInt4:
    case type::kDateTim4:
    case type::kFlt4:
    case type::kMoney4:
      return 4;
    case type::kMoney:
    case type::kDateTime:
    case type::kFlt8:
    case type::kInt8:
      return 8;
    default:
      return SIZE_MAX;
  }
}

/// Builds the value of a non-NULL fixed or BYTELEN type from its bytes.
std::string decode_scalar(const TypeInfo& t, Bytes b, TypedValue& out) {
  const uint8_t ty = t.type;
  auto& v = out.value;
  const size_t n = b.size();
  switch (ty) {
    case type::kInt1:
      v = db::Value::int64(b[0]);  // TINYINT is unsigned
      return {};
    case type::kInt2:
      v = db::Value::int64(static_cast<int16_t>(read_le(b)));
      return {};
    case type::kInt4:
      v = db::Value::int64(static_cast<int32_t>(read_le(b)));
      return {};
    case type::kInt8:
      v = db::Value::int64(static_cast<int64_t>(read_le(b)));
      return {};
    case type::kIntN:
      if (n == 1)
        v = db::Value::int64(b[0]);
      else if (n == 2)
        v = db::Value::int64(static_cast<int16_t>(read_le(b)));
      else if (n == 4)
        v = db::Value::int64(static_cast<int32_t>(read_le(b)));
      else if (n == 8)
        v = db::Value::int64(static_cast<int64_t>(read_le(b)));
      else
        return "INTN value of " + std::to_string(n) + " bytes";
      return {};
    case type::kBit:
    case type::kBitN:
      if (n != 1) return "BITN value of " + std::to_string(n) + " bytes";
      v = db::Value::boolean(b[0] != 0);
      return {};
    case type::kFlt4:
    case type::kFltN:
    case type::kFlt8:
      if (n == 4) {
        float f;
        uint32_t u = static_cast<uint32_t>(read_le(b));
        std::memcpy(&f, &u, 4);
        v = db::Value::float64(f);
      } else if (n == 8) {
        double d;
        uint64_t u = read_le(b);
        std::memcpy(&d, &u, 8);
        v = db::Value::float64(d);
      } else {
        return "FLTN value of " + std::to_string(n) + " bytes";
      }
      return {};
    case type::kMoney:
    case type::kMoney4:
    case type::kMoneyN: {
      int64_t units;
      if (n == 8) {
        const uint64_t hi = read_le(b.subspan(0, 4)), lo = read_le(b.subspan(4, 4));
        units = static_cast<int64_t>((hi << 32) | lo);
      } else if (n == 4) {
        units = static_cast<int32_t>(read_le(b));
      } else {
        return "MONEYN value of " + std::to_string(n) + " bytes";
      }
      const bool neg = units < 0;
      const uint64_t mag = neg ? 0 - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
      uint8_t le[8];
      for (int i = 0; i < 8; ++i)
        le[i] = static_cast<uint8_t>(mag >> (8 * i));
      v = db::Value::decimal(decimal_to_text(neg, Bytes(le, 8), 4));
      return {};
    }
    case type::kDecimalN:
    case type::kNumericN: {
      if (n != decimal_bytes(t.precision))
        return "DECIMAL(" + std::to_string(t.precision) + ") value of " + std::to_string(n) +
               " bytes";
      const uint8_t sign = b[0];
      if (sign > 1) return "DECIMAL value with sign byte " + std::to_string(sign);
      const Bytes mag = b.subspan(1);
      u128 m = 0;
      for (size_t i = mag.size(); i-- > 0;)
        m = (m << 8) | mag[i];
      std::string digits = u128_text(m);
      if (digits.size() > t.precision && m != 0)
        return "DECIMAL value with more digits than its precision " + std::to_string(t.precision);
      v = db::Value::decimal(decimal_to_text(sign == 0, mag, t.scale));
      return {};
    }
    case type::kGuid:
      if (n != 16) return "GUID value of " + std::to_string(n) + " bytes";
      v = db::Value::text(guid_to_text(b));
      return {};
    case type::kDateN: {
      if (n != 3) return "DATE value of " + std::to_string(n) + " bytes";
      const int64_t days = static_cast<int64_t>(read_le(b));
      if (days > kMaxDateN) return "DATE value out of range";
      v = db::Value::time((days - kDaysTo1970From0001) * kMicrosPerDay);
      out.time_form = db::TimeForm::date;
      return {};
    }
    case type::kTimeN: {
      if (n != time_bytes(t.scale)) return "TIME value of " + std::to_string(n) + " bytes";
      const uint64_t units = read_le(b);
      if (units >= 86400ULL * static_cast<uint64_t>(pow10(t.scale)))
        return "TIME value out of range";
      v = db::Value::text(time_of_day_text(units, t.scale));
      return {};
    }
    case type::kDateTime2N:
    case type::kDateTimeOffsetN: {
      const size_t tb = time_bytes(t.scale);
      const size_t want = tb + 3 + (ty == type::kDateTimeOffsetN ? 2 : 0);
      if (n != want) return type_name(ty) + " value of " + std::to_string(n) + " bytes";
      const uint64_t units = read_le(b.subspan(0, tb));
      const int64_t days = static_cast<int64_t>(read_le(b.subspan(tb, 3)));
      if (units >= 86400ULL * static_cast<uint64_t>(pow10(t.scale)) || days > kMaxDateN)
        return type_name(ty) + " value out of range";
      // Scale 7 (100 ns) is truncated to microseconds, db::Value's resolution.
      const int64_t micros =
          t.scale >= 6 ? static_cast<int64_t>(units / static_cast<uint64_t>(pow10(t.scale - 6)))
                       : static_cast<int64_t>(units) * pow10(6 - t.scale);
      v = db::Value::time((days - kDaysTo1970From0001) * kMicrosPerDay + micros);
      if (ty == type::kDateTimeOffsetN) {
        out.offset_minutes = static_cast<int16_t>(read_le(b.subspan(tb + 3, 2)));
        if (out.offset_minutes < -840 || out.offset_minutes > 840)
          return "DATETIMEOFFSET offset out of range";
        out.time_form = db::TimeForm::timestamptz;
      }
      return {};
    }
    case type::kDateTime:
    case type::kDateTim4:
    case type::kDateTimN:
      if (n == 8) {
        const int64_t days = static_cast<int32_t>(read_le(b.subspan(0, 4)));
        const int64_t ticks = static_cast<int64_t>(read_le(b.subspan(4, 4)));  // 1/300 s
        if (ticks >= 300LL * 86400 || days < -53690 || days > 2958463)  // 1753-01-01..9999-12-31
          return "DATETIME value out of range";
        // 1/300 s to microseconds, rounded to the nearest.
        v = db::Value::time((days - kDaysTo1970From1900) * kMicrosPerDay + (ticks * 10000 + 1) / 3);
      } else if (n == 4) {
        const int64_t days = static_cast<int64_t>(read_le(b.subspan(0, 2)));
        const int64_t minutes = static_cast<int64_t>(read_le(b.subspan(2, 2)));
        if (minutes >= 1440) return "SMALLDATETIME value out of range";
        v = db::Value::time((days - kDaysTo1970From1900) * kMicrosPerDay + minutes * 60 * 1000000);
      } else {
        return "DATETIME value of " + std::to_string(n) + " bytes";
      }
      return {};
    default:
      return "unsupported TDS type " + type_name(ty);
  }
}

/// Text or bytes of a string/binary type into out.value.
std::string decode_string(const TypeInfo& t, Bytes b, TypedValue& out) {
  std::string s;
  std::string err;
  switch (t.type) {
    case type::kNVarChar:
    case type::kNChar:
    case type::kXml:
      if (!ucs2_to_utf8(b, s, &err)) return type_name(t.type) + " value: " + err;
      out.value = db::Value::text(std::move(s));
      return {};
    case type::kBigVarChar:
    case type::kBigChar:
      if (t.collation.utf8())
        s.assign(wire::as_view(b));
      else
        cp1252_to_utf8(b, s);
      out.value = db::Value::text(std::move(s));
      return {};
    default:
      out.value = db::Value::bytes(std::string(wire::as_view(b)));
      return {};
  }
}

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

db::Status encode_non_null(std::string& out, const TypeInfo& t, const db::ValueView& v) {
  const uint8_t ty = t.type;
  switch (ty) {
    case type::kInt1:
    case type::kInt2:
    case type::kInt4:
    case type::kInt8:
    case type::kIntN: {
      int64_t i;
      if (!as_int(v, i)) {
        if (v.kind == db::Kind::U64) return make_error("22003", "integer out of range for INT8");
        return cannot(t, v);
      }
      const size_t n = ty == type::kIntN ? t.max_length : fixed_size(ty);
      const bool fits = n == 8 || (n == 4 && i >= INT32_MIN && i <= INT32_MAX) ||
                        (n == 2 && i >= INT16_MIN && i <= INT16_MAX) ||
                        (n == 1 && i >= 0 && i <= 255);
      if (!fits)
        return make_error("22003", "integer " + std::to_string(i) + " out of range for a " +
                                       std::to_string(n) + "-byte integer");
      if (ty == type::kIntN) wire::put_u8(out, static_cast<uint8_t>(n));
      put_le(out, static_cast<uint64_t>(i), n);
      return {};
    }
    case type::kBit:
    case type::kBitN: {
      int64_t i;
      if (!as_int(v, i)) return cannot(t, v);
      if (ty == type::kBitN) wire::put_u8(out, 1);
      wire::put_u8(out, i != 0 ? 1 : 0);
      return {};
    }
    case type::kFlt4:
    case type::kFlt8:
    case type::kFltN: {
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
    case type::kDecimalN:
    case type::kNumericN:
    case type::kMoney:
    case type::kMoney4:
    case type::kMoneyN: {
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
    case type::kGuid: {
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
    case type::kDateN:
    case type::kTimeN:
    case type::kDateTime2N:
    case type::kDateTimeOffsetN: {
      if (ty == type::kTimeN && v.kind == db::Kind::Text) {
        // A time of day as TIMEN decodes it: "HH:MM:SS[.fffffff]".
        uint64_t units;
        if (!parse_time_of_day(v.str, t.scale, units))
          return make_error("22007", "invalid time of day \"" + std::string(v.str) +
                                         "\" for TIME(" + std::to_string(t.scale) + ")");
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
    case type::kDateTime:
    case type::kDateTim4:
    case type::kDateTimN: {
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
        if (days < 0 || days > 65535)
          return make_error("22008", "date out of range for SMALLDATETIME");
        if (ty == type::kDateTimN) wire::put_u8(out, 4);
        wire::put_u16(out, static_cast<uint16_t>(days));
        wire::put_u16(out, static_cast<uint16_t>(minutes));
      }
      return {};
    }
    case type::kNVarChar:
    case type::kNChar:
    case type::kBigVarChar:
    case type::kBigChar:
    case type::kXml: {
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
        return make_error("22001", "value of " + std::to_string(data.size()) +
                                       " bytes too long for " + type_name(ty) + "(" +
                                       std::to_string(t.max_length) + " bytes)");
      wire::put_u16(out, static_cast<uint16_t>(data.size()));
      out += data;
      return {};
    }
    case type::kBigVarBinary:
    case type::kBigBinary: {
      if (v.kind != db::Kind::Bytes && v.kind != db::Kind::Text) return cannot(t, v);
      if (t.plp()) {
        put_plp(out, v.str);
        return {};
      }
      if (v.str.size() > t.max_length)
        return make_error("22001", "value of " + std::to_string(v.str.size()) +
                                       " bytes too long for " + type_name(ty) + "(" +
                                       std::to_string(t.max_length) + ")");
      wire::put_u16(out, static_cast<uint16_t>(v.str.size()));
      out.append(v.str);
      return {};
    }
    default:
      return make_error("0A000", "cannot encode values of TDS type " + type_name(ty));
  }
}

/// The base name of a native type ("VARCHAR(20)" -> "varchar", "int4" -> "int4").
std::string base_name(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c == '(' || c == ' ') break;
    s.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------

std::string type_name(uint8_t t) {
  switch (t) {
    case type::kNull:
      return "NULLTYPE";
    case type::kInt1:
      return "TINYINT";
    case type::kBit:
      return "BIT";
    case type::kInt2:
      return "SMALLINT";
    case type::kInt4:
      return "INT";
    case type::kDateTim4:
      return "SMALLDATETIME";
    case type::kFlt4:
      return "REAL";
    case type::kMoney:
      return "MONEY";
    case type::kDateTime:
      return "DATETIME";
    case type::kFlt8:
      return "FLOAT";
    case type::kMoney4:
      return "SMALLMONEY";
    case type::kInt8:
      return "BIGINT";
    case type::kGuid:
      return "UNIQUEIDENTIFIER";
    case type::kIntN:
      return "INTN";
    case type::kDateN:
      return "DATE";
    case type::kTimeN:
      return "TIME";
    case type::kDateTime2N:
      return "DATETIME2";
    case type::kDateTimeOffsetN:
      return "DATETIMEOFFSET";
    case type::kBitN:
      return "BITN";
    case type::kDecimalN:
      return "DECIMAL";
    case type::kNumericN:
      return "NUMERIC";
    case type::kFltN:
      return "FLTN";
    case type::kMoneyN:
      return "MONEYN";
    case type::kDateTimN:
      return "DATETIMN";
    case type::kBigVarBinary:
      return "VARBINARY";
    case type::kBigVarChar:
      return "VARCHAR";
    case type::kBigBinary:
      return "BINARY";
    case type::kBigChar:
      return "CHAR";
    case type::kNVarChar:
      return "NVARCHAR";
    case type::kNChar:
      return "NCHAR";
    case type::kXml:
      return "XML";
    case type::kImage:
      return "IMAGE";
    case type::kText:
      return "TEXT";
    case type::kNText:
      return "NTEXT";
    default:
      return "0x" + hex2(t);
  }
}

bool TypeInfo::plp() const {
  return type == type::kXml || (is_ushort_type(type) && max_length == kPlpMarker);
}

Decoded<TypeInfo> decode_type_info(Bytes in) {
  Reader r(in);
  TypeInfo t;
  t.type = r.u8();
  if (!r.ok()) return need_more<TypeInfo>();
  const uint8_t ty = t.type;
  const size_t fixed = fixed_size(ty);
  if (fixed != SIZE_MAX) {
    t.max_length = static_cast<uint32_t>(fixed);
  } else {
    switch (ty) {
      case type::kIntN:
      case type::kBitN:
      case type::kFltN:
      case type::kMoneyN:
      case type::kDateTimN:
      case type::kGuid: {
        t.max_length = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        const uint32_t n = t.max_length;
        const bool valid = (ty == type::kIntN && (n == 1 || n == 2 || n == 4 || n == 8)) ||
                           (ty == type::kBitN && n == 1) ||
                           ((ty == type::kFltN || ty == type::kMoneyN || ty == type::kDateTimN) &&
                            (n == 4 || n == 8)) ||
                           (ty == type::kGuid && n == 16);
        if (!valid) return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(n));
        break;
      }
      case type::kDecimalN:
      case type::kNumericN:
        t.max_length = r.u8();
        t.precision = r.u8();
        t.scale = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (t.precision < 1 || t.precision > 38 || t.scale > t.precision)
          return fail<TypeInfo>(type_name(ty) + "(" + std::to_string(t.precision) + "," +
                                std::to_string(t.scale) + ") is not a valid precision/scale");
        if (t.max_length < decimal_bytes(t.precision) || t.max_length > 17)
          return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(t.max_length));
        break;
      case type::kDateN:
        t.max_length = 3;
        break;
      case type::kTimeN:
      case type::kDateTime2N:
      case type::kDateTimeOffsetN:
        t.scale = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (t.scale > 7)
          return fail<TypeInfo>(type_name(ty) + " with scale " + std::to_string(t.scale));
        t.max_length = static_cast<uint32_t>(time_bytes(t.scale) + (ty == type::kTimeN ? 0 : 3) +
                                             (ty == type::kDateTimeOffsetN ? 2 : 0));
        break;
      case type::kBigVarBinary:
      case type::kBigBinary:
      case type::kBigVarChar:
      case type::kBigChar:
      case type::kNVarChar:
      case type::kNChar: {
        t.max_length = r.u16();
        if (is_char_type(ty)) {
          Bytes c = r.take(5);
          if (r.ok()) std::memcpy(t.collation.bytes.data(), c.data(), 5);
        }
        if (!r.ok()) return need_more<TypeInfo>();
        const bool var =
            ty == type::kBigVarBinary || ty == type::kBigVarChar || ty == type::kNVarChar;
        if (t.max_length == kPlpMarker ? !var : t.max_length > kMaxShortLen)
          return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(t.max_length));
        if ((ty == type::kNVarChar || ty == type::kNChar) && t.max_length != kPlpMarker &&
            t.max_length % 2 != 0)
          return fail<TypeInfo>(type_name(ty) + " with an odd length " +
                                std::to_string(t.max_length));
        break;
      }
      case type::kXml: {
        const uint8_t schema = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (schema > 1)
          return fail<TypeInfo>("XML TYPE_INFO with schema flag " + std::to_string(schema));
        if (schema == 1) {
          // database, owning schema (B_VARCHAR), collection (US_VARCHAR): skipped.
          const uint8_t a = r.u8();
          r.take(size_t{a} * 2);
          const uint8_t b = r.u8();
          r.take(size_t{b} * 2);
          const uint16_t c = r.u16();
          r.take(size_t{c} * 2);
          if (!r.ok()) return need_more<TypeInfo>();
        }
        t.max_length = kPlpMarker;
        break;
      }
      case type::kImage:
      case type::kText:
      case type::kNText:
        return fail<TypeInfo>("legacy type " + type_name(ty) + " (0x" + hex2(ty) +
                              ") is not supported: use VARCHAR(MAX), NVARCHAR(MAX) or "
                              "VARBINARY(MAX)");
      default:
        return fail<TypeInfo>("unknown TDS type 0x" + hex2(ty));
    }
  }
  Decoded<TypeInfo> d;
  d.status = DecodeStatus::ok;
  d.message = t;
  d.consumed = r.pos();
  return d;
}

void encode_type_info(std::string& out, const TypeInfo& t) {
  wire::put_u8(out, t.type);
  switch (t.type) {
    case type::kIntN:
    case type::kBitN:
    case type::kFltN:
    case type::kMoneyN:
    case type::kDateTimN:
    case type::kGuid:
      wire::put_u8(out, static_cast<uint8_t>(t.max_length));
      break;
    case type::kDecimalN:
    case type::kNumericN:
      wire::put_u8(out, static_cast<uint8_t>(decimal_bytes(t.precision)));
      wire::put_u8(out, t.precision);
      wire::put_u8(out, t.scale);
      break;
    case type::kTimeN:
    case type::kDateTime2N:
    case type::kDateTimeOffsetN:
      wire::put_u8(out, t.scale);
      break;
    case type::kBigVarBinary:
    case type::kBigBinary:
    case type::kBigVarChar:
    case type::kBigChar:
    case type::kNVarChar:
    case type::kNChar:
      wire::put_u16(out, static_cast<uint16_t>(t.max_length));
      if (is_char_type(t.type))
        out.append(reinterpret_cast<const char*>(t.collation.bytes.data()), 5);
      break;
    case type::kXml:
      wire::put_u8(out, 0);  // no schema
      break;
    default:
      break;  // fixed-length types and DATEN: the type byte alone
  }
}

Decoded<TypedValue> decode_value(const TypeInfo& t, Bytes in, const Limits& limits) {
  Reader r(in);
  TypedValue tv;
  tv.type = t;
  std::string err;
  const uint8_t ty = t.type;
  auto more = [](size_t needed) {
    auto d = need_more<TypedValue>();
    d.needed = needed;
    return d;
  };
  const size_t fixed = fixed_size(ty);
  if (fixed != SIZE_MAX) {
    Bytes b = r.take(fixed);
    if (!r.ok()) return more(fixed);
    if (fixed > 0) err = decode_scalar(t, b, tv);
  } else if (t.plp()) {
    const uint64_t total = r.u64();
    if (!r.ok()) return more(8);
    if (total != UINT64_MAX) {
      constexpr uint64_t kUnknown = 0xFFFFFFFFFFFFFFFEULL;
      const uint64_t cap =
          uint64_t{limits.max_value} * (limits.ucs2_as_utf8 && is_ucs2_type(ty) ? 2 : 1);
      auto over = [&](std::string message) {
        auto d = fail<TypedValue>(std::move(message));
        d.over_limit = true;
        return d;
      };
      // Refused by the announced length, else once the chunks pass the limit.
      if (total != kUnknown && total > cap)
        return over("PLP value of " + std::to_string(total) + " bytes exceeds the limit of " +
                    std::to_string(cap));
      // The least the whole value takes: its data, one chunk header, the terminator.
      const size_t least =
          total == kUnknown ? 0 : 8 + static_cast<size_t>(total) + (total > 0 ? 8 : 4);
      std::string data;
      for (;;) {
        const uint32_t n = r.u32();
        if (!r.ok()) return more(std::max(least, r.pos() + 4));
        if (n == 0) break;
        if (data.size() + n > cap)
          return over("PLP value exceeds the limit of " + std::to_string(cap) + " bytes");
        Bytes chunk = r.take(n);
        if (!r.ok()) return more(std::max(least, r.pos() + n));
        wire::put_bytes(data, chunk);
      }
      if (total != kUnknown && total != data.size())
        return fail<TypedValue>("PLP value announced " + std::to_string(total) +
                                " bytes but its chunks hold " + std::to_string(data.size()));
      err = decode_string(t, as_bytes(data), tv);
    }
  } else if (is_ushort_type(ty)) {
    const uint16_t n = r.u16();
    if (!r.ok()) return more(2);
    if (n != 0xFFFF) {
      if (n > t.max_length)
        return fail<TypedValue>(type_name(ty) + " value of " + std::to_string(n) +
                                " bytes exceeds its declared length " +
                                std::to_string(t.max_length));
      Bytes b = r.take(n);
      if (!r.ok()) return more(2 + size_t{n});
      err = decode_string(t, b, tv);
    }
  } else {
    // BYTELEN: length 0 is NULL.
    const uint8_t n = r.u8();
    if (!r.ok()) return more(1);
    if (n != 0) {
      if (ty != type::kDecimalN && ty != type::kNumericN && n > t.max_length)
        return fail<TypedValue>(type_name(ty) + " value of " + std::to_string(n) +
                                " bytes exceeds its declared length " +
                                std::to_string(t.max_length));
      Bytes b = r.take(n);
      if (!r.ok()) return more(1 + size_t{n});
      err = decode_scalar(t, b, tv);
    }
  }
  if (!err.empty()) return fail<TypedValue>(std::move(err));
  if (tv.value.kind == db::Kind::Time && tv.time_form == db::TimeForm::timestamp &&
      ty == type::kDateN)
    tv.time_form = db::TimeForm::date;
  Decoded<TypedValue> d;
  d.status = DecodeStatus::ok;
  d.message = std::move(tv);
  d.consumed = r.pos();
  return d;
}

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

size_t null_size(const TypeInfo& t) {
  if (t.plp()) return 8;
  if (is_ushort_type(t.type)) return 2;
  if (fixed_size(t.type) != SIZE_MAX) return 0;
  return 1;
}

TypeInfo column_type(const db::Column& c, const Collation& collation, const db::ValueView* sample) {
  TypeInfo t;
  const db::NativeType& n = c.native;
  const std::string base = base_name(n.name);
  if (n.pg_oid == 2950 || base == "uuid" || base == "uniqueidentifier") {
    t.type = type::kGuid;
    t.max_length = 16;
    return t;
  }
  switch (c.kind) {
    case db::Kind::Bool:
      t.type = type::kBitN;
      t.max_length = 1;
      return t;
    case db::Kind::I64:
      t.type = type::kIntN;
      t.max_length = 8;
      if (n.pg_oid == 23 || base == "int4" || base == "int" || base == "mediumint")
        t.max_length = 4;
      else if (n.pg_oid == 21 || base == "int2" || base == "smallint" || base == "tinyint")
        t.max_length = 2;  // MySQL's tinyint is signed: SQL Server's TINYINT is not
      return t;
    case db::Kind::U64:
      t.type = type::kDecimalN;
      t.precision = 20;
      t.scale = 0;
      t.max_length = static_cast<uint32_t>(decimal_bytes(20));
      return t;
    case db::Kind::F64:
      t.type = type::kFltN;
      t.max_length = (n.pg_oid == 700 || base == "float4" || base == "real") ? 4 : 8;
      return t;
    case db::Kind::Decimal: {
      t.type = type::kDecimalN;
      if (n.precision >= 1 && n.precision <= 38 && n.scale >= 0 && n.scale <= n.precision) {
        t.precision = static_cast<uint8_t>(n.precision);
        t.scale = static_cast<uint8_t>(n.scale);
      } else {
        t.precision = 38;
        t.scale = 18;
        if (sample && sample->kind == db::Kind::Decimal) {
          const size_t dot = sample->str.find('.');
          t.scale = dot == std::string_view::npos
                        ? 0
                        : static_cast<uint8_t>(std::min<size_t>(sample->str.size() - dot - 1, 38));
        }
      }
      t.max_length = static_cast<uint32_t>(decimal_bytes(t.precision));
      return t;
    }
    case db::Kind::Time:
      if (n.time_form == db::TimeForm::date) {
        t.type = type::kDateN;
        t.max_length = 3;
        return t;
      }
      t.type =
          n.time_form == db::TimeForm::timestamptz ? type::kDateTimeOffsetN : type::kDateTime2N;
      t.scale = 7;
      t.max_length = t.type == type::kDateTimeOffsetN ? 10 : 8;
      return t;
    case db::Kind::Bytes:
      t.type = type::kBigVarBinary;
      t.max_length =
          n.length >= 1 && n.length <= kMaxShortLen ? static_cast<uint32_t>(n.length) : kPlpMarker;
      return t;
    case db::Kind::Text:
    case db::Kind::Null:
    default:
      // A declared length counts characters; a character above U+FFFF takes
      // two UCS-2 code units, so 2 * length units (4 bytes a character) are
      // declared. Unknown or longer: NVARCHAR(MAX).
      t.type = type::kNVarChar;
      t.collation = collation;
      t.max_length = c.kind == db::Kind::Text && n.length >= 1 && n.length * 4 <= kMaxShortLen
                         ? static_cast<uint32_t>(n.length * 4)
                         : kPlpMarker;
      return t;
  }
}

// ---------------------------------------------------------------------------
// Text

bool utf8_to_ucs2(std::string_view s, std::string& out, std::string* error) {
  size_t i = 0;
  auto bad = [&](const char* what) {
    if (error) *error = std::string(what) + " at byte " + std::to_string(i);
    return false;
  };
  out.reserve(out.size() + s.size() * 2);
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    } else {
      return bad("invalid UTF-8 lead byte");
    }
    if (i + len > s.size()) return bad("truncated UTF-8 sequence");
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return bad("invalid UTF-8 continuation byte");
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
      return bad("overlong UTF-8 sequence");
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad("invalid code point");
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      wire::put_u16(out, static_cast<uint16_t>(0xD800 + (v >> 10)));
      wire::put_u16(out, static_cast<uint16_t>(0xDC00 + (v & 0x3FF)));
    } else {
      wire::put_u16(out, static_cast<uint16_t>(cp));
    }
    i += len;
  }
  return true;
}

bool ucs2_to_utf8(Bytes in, std::string& out, std::string* error) {
  if (in.size() % 2 != 0) {
    if (error) *error = "UCS-2 text of odd length " + std::to_string(in.size());
    return false;
  }
  out.reserve(out.size() + in.size());
  for (size_t i = 0; i < in.size(); i += 2) {
    uint32_t cp = in[i] | (in[i + 1] << 8);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const uint32_t lo = i + 3 < in.size() ? (in[i + 2] | (in[i + 3] << 8)) : 0;
      if (lo < 0xDC00 || lo > 0xDFFF) {
        if (error) *error = "unpaired UTF-16 surrogate at byte " + std::to_string(i);
        return false;
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      i += 2;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      if (error) *error = "unpaired UTF-16 surrogate at byte " + std::to_string(i);
      return false;
    }
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return true;
}

namespace {
// cp1252 0x80..0x9F; the five undefined bytes map to the C1 control itself.
constexpr uint16_t kCp1252High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};
}  // namespace

void cp1252_to_utf8(Bytes in, std::string& out) {
  for (uint8_t b : in) {
    const uint32_t cp = (b >= 0x80 && b < 0xA0) ? kCp1252High[b - 0x80] : b;
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
}

bool utf8_to_cp1252(std::string_view utf8, std::string& out) {
  std::string u16;
  if (!utf8_to_ucs2(utf8, u16)) return false;
  for (size_t i = 0; i + 1 < u16.size(); i += 2) {
    const uint32_t cp = static_cast<uint8_t>(u16[i]) | (static_cast<uint8_t>(u16[i + 1]) << 8);
    if (cp < 0x80 || (cp >= 0xA0 && cp <= 0xFF)) {
      out.push_back(static_cast<char>(cp));
      continue;
    }
    bool found = false;
    for (int k = 0; k < 32; ++k) {
      if (kCp1252High[k] == cp) {
        out.push_back(static_cast<char>(0x80 + k));
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------

std::string guid_to_text(Bytes b) {
  if (b.size() != 16) return {};
  static constexpr int kOrder[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s += hex2(b[static_cast<size_t>(kOrder[i])]);
  }
  return s;
}

bool parse_guid(std::string_view text, std::string& wire16) {
  if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
  if (text.size() != 36) return false;
  uint8_t canon[16];
  size_t k = 0;
  for (size_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return false;
      ++i;
      continue;
    }
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = nib(text[i]), lo = nib(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    canon[k++] = static_cast<uint8_t>(hi * 16 + lo);
    i += 2;
  }
  static constexpr int kOrder[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  wire16.clear();
  for (int i : kOrder)
    wire16.push_back(static_cast<char>(canon[i]));
  return true;
}

std::string decimal_to_text(bool negative, Bytes mag, uint8_t scale) {
  u128 m = 0;
  for (size_t i = std::min<size_t>(mag.size(), 16); i-- > 0;)
    m = (m << 8) | mag[i];
  std::string digits = u128_text(m);
  if (digits.size() <= scale) digits.insert(0, scale + 1 - digits.size(), '0');
  if (scale > 0) digits.insert(digits.size() - scale, 1, '.');
  if (negative && m != 0) digits.insert(0, 1, '-');
  return digits;
}

}  // namespace wirepool::tds
