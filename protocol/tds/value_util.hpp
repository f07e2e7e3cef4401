#pragma once
// Internal to protocol/tds/: the epochs, sizes and small helpers the value
// files (value_decode, value_encode, type_info) share. Not a public header.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/tds/types.hpp"
#include "protocol/tds/wire.hpp"

namespace wirepool::tds::detail {

using namespace wire;
using u128 = unsigned __int128;

/// Days from 0001-01-01 (TDS DATEN's epoch) to 1970-01-01.
inline constexpr int64_t kDaysTo1970From0001 = 719162;
/// Days from 1900-01-01 (DATETIME's epoch) to 1970-01-01.
inline constexpr int64_t kDaysTo1970From1900 = 25567;
inline constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
inline constexpr int64_t kMaxDateN = 3652058;  // 9999-12-31

inline db::Error make_error(std::string_view sqlstate, std::string message) {
  db::Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::string(sqlstate);
  e.message = std::move(message);
  return e;
}

template <class M>
Decoded<M> need_more() {
  return {};
}

/// Bytes of a TIMEN value at `scale` ([MS-TDS] 2.2.5.4.2).
inline size_t time_bytes(uint8_t scale) {
  return scale <= 2 ? 3 : scale <= 4 ? 4 : 5;
}

/// Bytes of a DECIMALN value (sign byte included) for `precision`.
inline size_t decimal_bytes(uint8_t precision) {
  return precision <= 9 ? 5 : precision <= 19 ? 9 : precision <= 28 ? 13 : 17;
}

inline int64_t pow10(int n) {
  int64_t v = 1;
  while (n-- > 0)
    v *= 10;
  return v;
}

// Howard Hinnant's civil-from-days (proleptic Gregorian).
inline void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
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

inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

inline void append_2(std::string& s, unsigned v) {
  s.push_back(static_cast<char>('0' + v / 10 % 10));
  s.push_back(static_cast<char>('0' + v % 10));
}

/// "HH:MM:SS[.f...]" for `units` of 10^-scale seconds since midnight.
inline std::string time_of_day_text(uint64_t units, uint8_t scale) {
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
inline std::string time_text(int64_t micros) {
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

inline uint64_t read_le(Bytes b) {
  uint64_t v = 0;
  for (size_t i = b.size(); i-- > 0;)
    v = (v << 8) | b[i];
  return v;
}

inline void put_le(std::string& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

/// Parsed exact decimal text: sign, integer digits, fraction digits.
struct DecimalText {
  bool negative = false;
  std::string int_digits;
  std::string frac_digits;
};

inline bool parse_decimal_text(std::string_view s, DecimalText& out) {
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
inline std::optional<u128> scaled_magnitude(const DecimalText& d, uint8_t precision, uint8_t scale,
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

inline std::string u128_text(u128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return {s.rbegin(), s.rend()};
}

inline bool is_char_type(uint8_t t) {
  return t == type::kBigVarChar || t == type::kBigChar || t == type::kNVarChar || t == type::kNChar;
}
inline bool is_ushort_type(uint8_t t) {
  return is_char_type(t) || t == type::kBigVarBinary || t == type::kBigBinary;
}
/// The types whose values travel as UCS-2.
inline bool is_ucs2_type(uint8_t t) {
  return t == type::kNVarChar || t == type::kNChar || t == type::kXml;
}

inline size_t fixed_size(uint8_t t) {
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

}  // namespace wirepool::tds::detail
