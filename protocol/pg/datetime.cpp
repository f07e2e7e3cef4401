// Dates and times in PostgreSQL's text and binary forms (datetime.hpp).
#include "protocol/pg/datetime.hpp"

#include <charconv>
#include <limits>

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {
namespace detail {

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

}  // namespace detail

using namespace detail;

std::string format_time(int64_t micros_since_epoch, db::TimeForm form) {
  std::string s;
  append_time(s, micros_since_epoch, form);
  return s;
}

std::optional<int64_t> parse_time(std::string_view text) {
  return parse_time_impl(text, false);
}

std::optional<std::string> date_of_zoned_date(std::string_view text) {
  auto digits = [&](size_t from, size_t n) {
    if (from + n > text.size()) return false;
    for (size_t k = from; k < from + n; ++k) {
      if (text[k] < '0' || text[k] > '9') return false;
    }
    return true;
  };
  size_t year = 0;
  while (year < text.size() && text[year] >= '0' && text[year] <= '9')
    ++year;
  if (year < 4 || !(text.size() > year + 9) || text[year] != '-' || !digits(year + 1, 2) ||
      text[year + 3] != '-' || !digits(year + 4, 2) || text[year + 6] != ' ') {
    return std::nullopt;
  }
  size_t i = year + 7;
  if (text[i] != '+' && text[i] != '-') return std::nullopt;
  if (!digits(i + 1, 2)) return std::nullopt;
  i += 3;
  for (int part = 0; part < 2 && i < text.size(); ++part) {
    if (text[i] != ':' || !digits(i + 1, 2)) return std::nullopt;
    i += 3;
  }
  if (i != text.size()) return std::nullopt;
  return std::string(text.substr(0, year + 6));
}

}  // namespace wirepool::pg
