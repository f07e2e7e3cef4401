// Integers, booleans and floats in PostgreSQL's text forms (numbers.hpp).
#include "protocol/pg/numbers.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {
namespace detail {

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

template Parse parse_float<float>(std::string_view, float&);
template Parse parse_float<double>(std::string_view, double&);

}  // namespace detail

using namespace detail;

std::string format_float8(double v) {
  std::string s;
  append_float8(s, v);
  return s;
}

}  // namespace wirepool::pg
