// numeric's text and binary forms (numeric.hpp).
#include "protocol/pg/numeric.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {
namespace detail {

/// PostgreSQL numeric_in: [+-]digits[.digits][e[+-]digits], NaN, [+-]Infinity, [+-]inf.
/// nullopt on a syntax error; `range` is set when the value is outside numeric's limits.
std::optional<Decimal> parse_decimal(std::string_view text, bool* range) {
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
  if (text.empty()) text.push_back('0');  // not = "0": GCC 12 -Wrestrict false positive
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

}  // namespace detail

using namespace detail;

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

}  // namespace wirepool::pg
