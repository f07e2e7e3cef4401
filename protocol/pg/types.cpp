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

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace wirepool::pg {

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

constexpr int64_t kMicrosPerSecond = 1000000;
constexpr int64_t kMicrosPerDay = 86400 * kMicrosPerSecond;
constexpr int64_t kPgEpochDays = 10957;  // 2000-01-01 - 1970-01-01
constexpr int64_t kPgEpochMicros = kPgEpochDays * kMicrosPerDay;
constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinusInfinity = std::numeric_limits<int64_t>::min();

// numeric limits (PostgreSQL numeric.c)
constexpr size_t kNumericMaxIntDigits = 131072;
constexpr size_t kNumericMaxScale = 0x3FFF;
constexpr uint16_t kNumericPos = 0x0000;
constexpr uint16_t kNumericNeg = 0x4000;
constexpr uint16_t kNumericNaN = 0xC000;
constexpr uint16_t kNumericPInf = 0xD000;
constexpr uint16_t kNumericNInf = 0xF000;

// ---------------------------------------------------------------------------
// Small helpers

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t get_be(std::string_view s) {
  uint64_t v = 0;
  for (char c : s)
    v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

template <class T>
void append_int(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

/// Shows untrusted input in an error message without flooding the log.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string q = "\"";
  q.append(s.substr(0, kMax));
  if (s.size() > kMax) q.append("...");
  q.push_back('"');
  return q;
}

db::Error make_error(std::string_view sqlstate, std::string message) {
  return db::Error{
      db::Errc::invalid_query, std::string(sqlstate), 0, std::move(message), {}, {}, {}};
}

std::string hex_byte(uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

// ---------------------------------------------------------------------------
// Integers, booleans, floats

enum class Parse : uint8_t { ok, syntax, range };

/// PostgreSQL int8in: optional sign and decimal digits, surrounded by whitespace.
Parse parse_int64(std::string_view text, int64_t& out) {
  std::string_view s = trim(text);
  size_t first = 0;
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
  } else if (!s.empty() && s.front() == '-') {
    first = 1;
  }
  if (s.size() <= first || !is_digit(s[first])) return Parse::syntax;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ptr != s.data() + s.size()) {
    // from_chars stops at the first non-digit: out of range only if all were digits.
    for (const char* p = r.ptr; p < s.data() + s.size(); ++p) {
      if (!is_digit(*p)) return Parse::syntax;
    }
  }
  if (r.ec == std::errc::result_out_of_range) return Parse::range;
  if (r.ec != std::errc()) return Parse::syntax;
  return Parse::ok;
}

/// PostgreSQL parse_bool: t/true/y/yes/on/1 and f/false/n/no/off/0, any unique
/// prefix of the words, case-insensitive, surrounded by whitespace.
std::optional<bool> parse_bool(std::string_view text) {
  const std::string_view s = trim(text);
  if (s.empty()) return std::nullopt;
  auto prefix_of = [&](std::string_view word, size_t min_len) {
    return s.size() >= min_len && s.size() <= word.size() && iequals(s, word.substr(0, s.size()));
  };
  switch (lower(s[0])) {
    case 't':
      if (prefix_of("true", 1)) return true;
      break;
    case 'f':
      if (prefix_of("false", 1)) return false;
      break;
    case 'y':
      if (prefix_of("yes", 1)) return true;
      break;
    case 'n':
      if (prefix_of("no", 1)) return false;
      break;
    case 'o':
      if (prefix_of("on", 2)) return true;
      if (prefix_of("off", 2)) return false;
      break;
    case '1':
      if (s.size() == 1) return true;
      break;
    case '0':
      if (s.size() == 1) return false;
      break;
    default:
      break;
  }
  return std::nullopt;
}

/// PostgreSQL float4in/float8in: decimal or exponent form, NaN, [+-]Infinity,
/// [+-]inf; surrounding whitespace; overflow and underflow to zero are range errors.
template <class F>
Parse parse_float(std::string_view text, F& out) {
  std::string_view s = trim(text);
  if (iequals(s, "nan")) {
    out = std::numeric_limits<F>::quiet_NaN();
    return Parse::ok;
  }
  bool neg = false;
  std::string_view body = s;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    neg = body.front() == '-';
    body.remove_prefix(1);
  }
  if (iequals(body, "infinity") || iequals(body, "inf")) {
    out = neg ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
    return Parse::ok;
  }
  if (body.empty() || !(is_digit(body.front()) || body.front() == '.')) return Parse::syntax;
  F v{};
  auto r = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (r.ptr != body.data() + body.size()) return Parse::syntax;
  if (r.ec == std::errc::result_out_of_range) return Parse::range;
  if (r.ec != std::errc()) return Parse::syntax;
  out = neg ? -v : v;
  return Parse::ok;
}

/// The shortest exact digits, laid out as PostgreSQL's Ryu output does: fixed
/// point for decimal exponents in [-4, fixed_limit), else d.ddde+XX.
template <class F>
size_t format_float_pg(F v, char* buf, size_t cap, int fixed_limit) {
  auto put = [&](std::string_view s) {
    std::memcpy(buf, s.data(), s.size());
    return s.size();
  };
  if (std::isnan(v)) return put("NaN");
  if (std::isinf(v)) return put(v > 0 ? "Infinity" : "-Infinity");
  auto r = std::to_chars(buf, buf + cap, v, std::chars_format::scientific);
  const char* e = std::find(buf, r.ptr, 'e');
  int exp = 0;
  if (e != r.ptr) {
    const char* p = e + 1;
    if (*p == '+') ++p;
    (void)std::from_chars(p, r.ptr, exp);
  }
  if (exp >= -4 && exp < fixed_limit) {
    r = std::to_chars(buf, buf + cap, v, std::chars_format::fixed);
  }
  return size_t(r.ptr - buf);
}

void append_float8(std::string& out, double v) {
  char buf[64];
  out.append(buf, format_float_pg(v, buf, sizeof buf, 15));
}

void append_float4(std::string& out, float v) {
  char buf[64];
  out.append(buf, format_float_pg(v, buf, sizeof buf, 6));
}

// ---------------------------------------------------------------------------
// numeric

/// A decimal in PostgreSQL's model: sign, integer digits, exactly dscale
/// fraction digits, or a special value.
struct Decimal {
  enum class Special : uint8_t { none, nan, pinf, ninf };
  Special special = Special::none;
  bool neg = false;
  std::string int_digits;   ///< no leading zeros; empty for |x| < 1
  std::string frac_digits;  ///< exactly dscale digits

  bool is_zero() const {
    return int_digits.empty() &&
           std::all_of(frac_digits.begin(), frac_digits.end(), [](char c) { return c == '0'; });
  }
};

/// PostgreSQL numeric_in: [+-]digits[.digits][e[+-]digits], NaN, [+-]Infinity, [+-]inf.
/// nullopt on a syntax error; `range` is set when the value is outside numeric's limits.
std::optional<Decimal> parse_decimal(std::string_view text, bool* range = nullptr) {
  const std::string_view s = trim(text);
  Decimal d;
  if (iequals(s, "nan")) {
    d.special = Decimal::Special::nan;
    return d;
  }
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  const std::string_view rest = s.substr(i);
  if (iequals(rest, "infinity") || iequals(rest, "inf")) {
    d.special = neg ? Decimal::Special::ninf : Decimal::Special::pinf;
    return d;
  }
  const size_t int_start = i;
  while (i < s.size() && is_digit(s[i]))
    ++i;
  const std::string_view ip = s.substr(int_start, i - int_start);
  std::string_view fp;
  if (i < s.size() && s[i] == '.') {
    const size_t f = ++i;
    while (i < s.size() && is_digit(s[i]))
      ++i;
    fp = s.substr(f, i - f);
  }
  if (ip.empty() && fp.empty()) return std::nullopt;
  int64_t exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    const size_t e0 = i;
    while (i < s.size() && is_digit(s[i]))
      ++i;
    if (i == e0) return std::nullopt;
    // Bounded before use, so a hostile exponent cannot make us allocate.
    if (i - e0 > 7) {
      if (range) *range = true;
      return std::nullopt;
    }
    (void)std::from_chars(s.data() + e0, s.data() + i, exp);
    if (eneg) exp = -exp;
  }
  if (i != s.size()) return std::nullopt;
  if (exp > int64_t(kNumericMaxIntDigits) || exp < -int64_t(kNumericMaxScale) - 1000 ||
      int64_t(fp.size()) - exp > int64_t(kNumericMaxScale)) {
    if (range) *range = true;
    return std::nullopt;
  }
  // Move the point by the exponent over the concatenated digits.
  std::string all;
  all.reserve(ip.size() + fp.size());
  all.append(ip).append(fp);
  const int64_t point = int64_t(ip.size()) + exp;
  if (point <= 0) {
    d.frac_digits.assign(size_t(-point), '0');
    d.frac_digits.append(all);
  } else if (point >= int64_t(all.size())) {
    d.int_digits = all;
    d.int_digits.append(size_t(point - int64_t(all.size())), '0');
  } else {
    d.int_digits = all.substr(0, size_t(point));
    d.frac_digits = all.substr(size_t(point));
  }
  const size_t nz = d.int_digits.find_first_not_of('0');
  d.int_digits.erase(0, nz == std::string::npos ? d.int_digits.size() : nz);
  if (d.int_digits.size() > kNumericMaxIntDigits || d.frac_digits.size() > kNumericMaxScale) {
    if (range) *range = true;
    return std::nullopt;
  }
  d.neg = neg && !d.is_zero();
  return d;
}

void append_decimal_text(std::string& out, const Decimal& d) {
  switch (d.special) {
    case Decimal::Special::nan:
      out.append("NaN");
      return;
    case Decimal::Special::pinf:
      out.append("Infinity");
      return;
    case Decimal::Special::ninf:
      out.append("-Infinity");
      return;
    case Decimal::Special::none:
      break;
  }
  if (d.neg) out.push_back('-');
  out.append(d.int_digits.empty() ? std::string_view("0") : std::string_view(d.int_digits));
  if (!d.frac_digits.empty()) out.append(".").append(d.frac_digits);
}

void append_decimal_binary(std::string& out, const Decimal& d) {
  auto header = [&](size_t ndigits, int weight, uint16_t sign, size_t dscale) {
    put_be(out, ndigits, 2);
    put_be(out, static_cast<uint16_t>(static_cast<int16_t>(weight)), 2);
    put_be(out, sign, 2);
    put_be(out, dscale, 2);
  };
  switch (d.special) {
    case Decimal::Special::nan:
      return header(0, 0, kNumericNaN, 0);
    case Decimal::Special::pinf:
      return header(0, 0, kNumericPInf, 0);
    case Decimal::Special::ninf:
      return header(0, 0, kNumericNInf, 0);
    case Decimal::Special::none:
      break;
  }
  // Group digits by four around the decimal point.
  const size_t int_pad = (4 - d.int_digits.size() % 4) % 4;
  const size_t frac_pad = (4 - d.frac_digits.size() % 4) % 4;
  std::string all(int_pad, '0');
  all.append(d.int_digits).append(d.frac_digits).append(frac_pad, '0');
  std::vector<uint16_t> groups(all.size() / 4);
  for (size_t g = 0; g < groups.size(); ++g) {
    uint16_t v = 0;
    for (size_t k = 0; k < 4; ++k)
      v = static_cast<uint16_t>(v * 10 + (all[g * 4 + k] - '0'));
    groups[g] = v;
  }
  int weight = int((int_pad + d.int_digits.size()) / 4) - 1;
  size_t first = 0, last = groups.size();
  while (first < last && groups[first] == 0)
    ++first, --weight;
  while (last > first && groups[last - 1] == 0)
    --last;
  if (first == last) return header(0, 0, kNumericPos, d.frac_digits.size());
  header(last - first, weight, d.neg ? kNumericNeg : kNumericPos, d.frac_digits.size());
  for (size_t g = first; g < last; ++g)
    put_be(out, groups[g], 2);
}

/// PostgreSQL numeric_recv, then numeric_out: digits hidden by dscale are dropped.
std::optional<std::string> decimal_text_from_binary(std::string_view b) {
  if (b.size() < 8) return std::nullopt;
  const size_t ndigits = get_be(b.substr(0, 2));
  const auto weight = static_cast<int16_t>(get_be(b.substr(2, 2)));
  const auto sign = static_cast<uint16_t>(get_be(b.substr(4, 2)));
  const size_t dscale = get_be(b.substr(6, 2));
  if (b.size() != 8 + 2 * ndigits) return std::nullopt;
  if (sign != kNumericPos && sign != kNumericNeg && sign != kNumericNaN && sign != kNumericPInf &&
      sign != kNumericNInf) {
    return std::nullopt;
  }
  if (dscale > kNumericMaxScale) return std::nullopt;
  std::vector<uint16_t> digits(ndigits);
  for (size_t i = 0; i < ndigits; ++i) {
    digits[i] = static_cast<uint16_t>(get_be(b.substr(8 + 2 * i, 2)));
    if (digits[i] >= 10000) return std::nullopt;
  }
  if (sign == kNumericNaN) return std::string("NaN");
  if (sign == kNumericPInf) return std::string("Infinity");
  if (sign == kNumericNInf) return std::string("-Infinity");

  // Digit i is worth 10000^(weight - i).
  auto digit_at = [&](int w) -> uint16_t {
    const int64_t i = int64_t(weight) - w;
    return (i >= 0 && i < int64_t(ndigits)) ? digits[size_t(i)] : 0;
  };
  std::string text;
  bool nonzero = false;
  if (weight >= 0) {
    for (int w = weight; w >= 0; --w) {
      const uint16_t g = digit_at(w);
      char buf[4] = {char('0' + g / 1000), char('0' + g / 100 % 10), char('0' + g / 10 % 10),
                     char('0' + g % 10)};
      text.append(buf, 4);
      nonzero |= g != 0;
    }
    const size_t nz = text.find_first_not_of('0');
    text.erase(0, nz == std::string::npos ? text.size() : nz);
  }
  if (text.empty()) text = "0";
  if (dscale > 0) {
    text.push_back('.');
    size_t written = 0;
    for (int w = -1; written < dscale; --w) {
      const uint16_t g = digit_at(w);
      const char buf[4] = {char('0' + g / 1000), char('0' + g / 100 % 10), char('0' + g / 10 % 10),
                           char('0' + g % 10)};
      const size_t take = std::min<size_t>(4, dscale - written);
      for (size_t k = 0; k < take; ++k)
        nonzero |= buf[k] != '0';
      text.append(buf, take);
      written += take;
    }
  }
  if (sign == kNumericNeg && nonzero) text.insert(text.begin(), '-');
  return text;
}

// ---------------------------------------------------------------------------
// Dates and times (proleptic Gregorian; year 0 is 1 BC, as in PostgreSQL)

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

struct Civil {
  int64_t y;
  unsigned m, d;
};

Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = int64_t(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

bool is_leap(int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

void append_padded(std::string& out, uint64_t v, int width) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  for (int n = int(r.ptr - buf); n < width; ++n)
    out.push_back('0');
  out.append(buf, r.ptr);
}

void append_time(std::string& out, int64_t micros, db::TimeForm form) {
  if (micros == kInfinity) {
    out.append("infinity");
    return;
  }
  if (micros == kMinusInfinity) {
    out.append("-infinity");
    return;
  }
  // Floor division without forming days * day, which overflows near INT64_MIN.
  int64_t days = micros / kMicrosPerDay;
  int64_t tod = micros % kMicrosPerDay;
  if (tod < 0) tod += kMicrosPerDay, --days;
  const Civil c = civil_from_days(days);
  const bool bc = c.y <= 0;
  append_padded(out, uint64_t(bc ? 1 - c.y : c.y), 4);
  out.push_back('-');
  append_padded(out, c.m, 2);
  out.push_back('-');
  append_padded(out, c.d, 2);
  if (form != db::TimeForm::date) {
    const int64_t secs = tod / kMicrosPerSecond;
    int64_t frac = tod % kMicrosPerSecond;
    out.push_back(' ');
    append_padded(out, uint64_t(secs / 3600), 2);
    out.push_back(':');
    append_padded(out, uint64_t(secs / 60 % 60), 2);
    out.push_back(':');
    append_padded(out, uint64_t(secs % 60), 2);
    if (frac != 0) {
      int width = 6;
      while (frac % 10 == 0)
        frac /= 10, --width;
      out.push_back('.');
      append_padded(out, uint64_t(frac), width);
    }
    if (form == db::TimeForm::timestamptz) out.append("+00");
  }
  if (bc) out.append(" BC");
}

/// Reads 1..max_digits decimal digits at `i`.
bool read_digits(std::string_view s, size_t& i, size_t min_digits, size_t max_digits, int64_t& v) {
  const size_t start = i;
  v = 0;
  while (i < s.size() && is_digit(s[i]) && i - start < max_digits)
    v = v * 10 + (s[i++] - '0');
  return i - start >= min_digits && !(i < s.size() && is_digit(s[i]));
}

bool starts_with_ci(std::string_view s, size_t i, std::string_view word) {
  return s.size() - i >= word.size() && iequals(s.substr(i, word.size()), word);
}

/// The ISO forms of PostgreSQL's datetime input. `ignore_zone` reads a zone
/// but drops it, as timestamp without time zone does.
std::optional<int64_t> parse_time_impl(std::string_view text, bool ignore_zone) {
  const std::string_view s = trim(text);
  if (iequals(s, "infinity") || iequals(s, "+infinity")) return kInfinity;
  if (iequals(s, "-infinity")) return kMinusInfinity;
  if (iequals(s, "epoch")) return 0;
  size_t i = 0;
  int64_t year = 0, month = 0, day = 0;
  if (!read_digits(s, i, 4, 6, year) || i >= s.size() || s[i++] != '-') return std::nullopt;
  if (!read_digits(s, i, 1, 2, month) || i >= s.size() || s[i++] != '-') return std::nullopt;
  if (!read_digits(s, i, 1, 2, day)) return std::nullopt;

  int64_t hour = 0, minute = 0, second = 0, frac = 0, offset = 0;
  size_t j = i;
  while (j < s.size() && s[j] == ' ')
    ++j;
  if (j == i && j < s.size() && (s[j] == 'T' || s[j] == 't')) ++j;
  if (j > i && j < s.size() && is_digit(s[j])) {
    i = j;
    if (!read_digits(s, i, 1, 2, hour) || i >= s.size() || s[i++] != ':') return std::nullopt;
    if (!read_digits(s, i, 2, 2, minute)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!read_digits(s, i, 2, 2, second)) return std::nullopt;
      if (i < s.size() && s[i] == '.') {
        ++i;
        const size_t f0 = i;
        while (i < s.size() && is_digit(s[i])) {
          if (i - f0 < 6) frac = frac * 10 + (s[i] - '0');
          if (i - f0 == 6 && s[i] >= '5') frac += 1;  // round to microseconds
          ++i;
        }
        if (i == f0) return std::nullopt;
        for (size_t k = std::min<size_t>(i - f0, 6); k < 6; ++k)
          frac *= 10;
      }
    }
    // Zone: Z, UTC, GMT, +HH, +HH:MM, +HHMM, +HH:MM:SS (optionally after spaces).
    j = i;
    while (j < s.size() && s[j] == ' ')
      ++j;
    if (j < s.size() && (s[j] == 'Z' || s[j] == 'z')) {
      i = j + 1;
    } else if (starts_with_ci(s, j, "utc") || starts_with_ci(s, j, "gmt")) {
      i = j + 3;
    } else if (j < s.size() && (s[j] == '+' || s[j] == '-')) {
      const bool neg = s[j] == '-';
      i = j + 1;
      size_t run = 0;
      while (i + run < s.size() && is_digit(s[i + run]))
        ++run;
      auto two = [&](size_t at) { return int64_t(s[at] - '0') * 10 + (s[at + 1] - '0'); };
      int64_t oh = 0, om = 0, os = 0;
      if (run == 1 || run == 2) {
        oh = run == 1 ? s[i] - '0' : two(i);
        i += run;
        if (i < s.size() && s[i] == ':') {
          ++i;
          if (!read_digits(s, i, 2, 2, om)) return std::nullopt;
          if (i < s.size() && s[i] == ':') {
            ++i;
            if (!read_digits(s, i, 2, 2, os)) return std::nullopt;
          }
        }
      } else if (run == 4 || run == 6) {  // +HHMM, +HHMMSS
        oh = two(i);
        om = two(i + 2);
        if (run == 6) os = two(i + 4);
        i += run;
      } else {
        return std::nullopt;
      }
      if (oh > 15 || om > 59 || os > 59) return std::nullopt;
      offset = (oh * 3600 + om * 60 + os) * (neg ? -1 : 1);
    }
  }
  j = i;
  while (j < s.size() && s[j] == ' ')
    ++j;
  bool bc = false;
  if (starts_with_ci(s, j, "bc")) {
    bc = true;
    i = j + 2;
  } else if (starts_with_ci(s, j, "ad")) {
    i = j + 2;
  }
  if (i != s.size()) return std::nullopt;

  if (bc) {
    if (year == 0) return std::nullopt;
    year = 1 - year;
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, unsigned(month))) {
    return std::nullopt;
  }
  if (hour > 24 || minute > 59 || second > 60) return std::nullopt;
  if (hour == 24 && (minute != 0 || second != 0 || frac != 0)) return std::nullopt;
  if (ignore_zone) offset = 0;

  const int64_t days = days_from_civil(year, unsigned(month), unsigned(day));
  const int64_t tod = ((hour * 60 + minute) * 60 + second - offset) * kMicrosPerSecond + frac;
  // 128-bit: near the int64 limits days * day alone may overflow while the sum fits.
  const __int128 micros = static_cast<__int128>(days) * kMicrosPerDay + tod;
  if (micros >= kInfinity || micros <= kMinusInfinity) return std::nullopt;
  return static_cast<int64_t>(micros);
}

// ---------------------------------------------------------------------------
// bytea, uuid

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_bytea_hex(std::string& out, std::string_view raw) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.append("\\x");
  for (char ch : raw) {
    const auto b = static_cast<uint8_t>(ch);
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
}

/// PostgreSQL string_to_uuid: 32 hex digits, a hyphen allowed after any group
/// of four, optionally inside braces.
std::optional<std::array<uint8_t, 16>> parse_uuid(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '{') {
    if (s.back() != '}' || s.size() < 2) return std::nullopt;
    s = s.substr(1, s.size() - 2);
  }
  std::array<uint8_t, 16> u{};
  size_t i = 0;
  for (size_t b = 0; b < 16; ++b) {
    if (s.size() - i < 2) return std::nullopt;
    const int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    u[b] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
    if (b % 2 == 1 && b != 15 && i < s.size() && s[i] == '-') ++i;
  }
  if (i != s.size()) return std::nullopt;
  return u;
}

void append_uuid_text(std::string& out, const uint8_t* u) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int b = 0; b < 16; ++b) {
    if (b == 4 || b == 6 || b == 8 || b == 10) out.push_back('-');
    out.push_back(kHex[u[b] >> 4]);
    out.push_back(kHex[u[b] & 15]);
  }
}

// ---------------------------------------------------------------------------
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
// Value -> the intermediate a target needs (PostgreSQL cast rules)

/// Why a conversion failed, already worded for the client.
using Why = std::string;

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

/// Contract micros -> PostgreSQL binary timestamp (micros since 2000).
std::optional<int64_t> to_pg_timestamp(int64_t micros) {
  if (micros == kInfinity || micros == kMinusInfinity) return micros;
  int64_t r = 0;
  if (__builtin_sub_overflow(micros, kPgEpochMicros, &r)) return std::nullopt;
  return r;
}

int32_t to_pg_date(int64_t micros) {
  if (micros == kInfinity) return INT32_MAX;
  if (micros == kMinusInfinity) return INT32_MIN;
  // |micros| / day < 2^27: always fits in int32.
  return static_cast<int32_t>(floor_div(micros, kMicrosPerDay) - kPgEpochDays);
}

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
      switch (parse_int64(s, v)) {
        case Parse::syntax:
          return syntax_error(type_oid, s);
        case Parse::range:
          return range_error(type_oid, s);
        case Parse::ok:
          break;
      }
      if (!int_range(t, v)) return range_error(type_oid, s);
      p.value = db::Value::int64(v);
      return p;
    }
    case Target::float4: {
      float f = 0;
      switch (parse_float(s, f)) {
        case Parse::syntax:
          return syntax_error(type_oid, s);
        case Parse::range:
          return range_error(type_oid, s);
        case Parse::ok:
          break;
      }
      p.value = db::Value::float64(double(f));
      return p;
    }
    case Target::float8: {
      double d = 0;
      switch (parse_float(s, d)) {
        case Parse::syntax:
          return syntax_error(type_oid, s);
        case Parse::range:
          return range_error(type_oid, s);
        case Parse::ok:
          break;
      }
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

std::string format_float8(double v) {
  std::string s;
  append_float8(s, v);
  return s;
}

std::string format_time(int64_t micros_since_epoch, db::TimeForm form) {
  std::string s;
  append_time(s, micros_since_epoch, form);
  return s;
}

std::optional<int64_t> parse_time(std::string_view text) {
  return parse_time_impl(text, false);
}

std::optional<std::string> numeric_to_binary(std::string_view decimal_text) {
  auto d = parse_decimal(decimal_text);
  if (!d) return std::nullopt;
  std::string out;
  append_decimal_binary(out, *d);
  return out;
}

std::optional<std::string> numeric_from_binary(std::string_view bytes) {
  return decimal_text_from_binary(bytes);
}

std::string bytea_to_hex(std::string_view raw) {
  std::string s;
  s.reserve(2 + raw.size() * 2);
  append_bytea_hex(s, raw);
  return s;
}

std::optional<std::string> bytea_from_text(std::string_view text) {
  std::string out;
  if (text.size() >= 2 && text[0] == '\\' && (text[1] == 'x' || text[1] == 'X')) {
    // Hex format: pairs of hex digits, whitespace allowed between pairs.
    out.reserve((text.size() - 2) / 2);
    for (size_t i = 2; i < text.size();) {
      const char c = text[i];
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++i;
        continue;
      }
      if (i + 1 >= text.size()) return std::nullopt;  // odd number of digits
      const int hi = hex_value(c), lo = hex_value(text[i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi << 4 | lo));
      i += 2;
    }
    return out;
  }
  // Escape format: \\ is a backslash, \ooo an octal byte (first digit 0-3).
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '\\') {
      out.push_back(text[i++]);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      out.push_back('\\');
      i += 2;
      continue;
    }
    if (i + 3 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '3' && text[i + 2] >= '0' &&
        text[i + 2] <= '7' && text[i + 3] >= '0' && text[i + 3] <= '7') {
      out.push_back(static_cast<char>((text[i + 1] - '0') << 6 | (text[i + 2] - '0') << 3 |
                                      (text[i + 3] - '0')));
      i += 4;
      continue;
    }
    return std::nullopt;
  }
  return out;
}

}  // namespace wirepool::pg
