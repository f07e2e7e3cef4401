#include "backends/sqlite/sqlite_types.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace wirepool::sqlite {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

/// "NAME(p)" or "NAME(p, s)": the numbers, -1 when absent.
void parse_modifiers(std::string_view declared, int64_t& p, int64_t& s) {
  p = s = -1;
  const size_t open = declared.find('(');
  if (open == std::string_view::npos) return;
  auto read = [&](size_t& i, int64_t& out) {
    while (i < declared.size() && declared[i] == ' ')
      ++i;
    const char* first = declared.data() + i;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(first, declared.data() + declared.size(), v);
    if (ec != std::errc() || v < 0 || v > INT32_MAX) return false;
    out = v;
    i += static_cast<size_t>(ptr - first);
    while (i < declared.size() && declared[i] == ' ')
      ++i;
    return true;
  };
  size_t i = open + 1;
  int64_t a = -1, b = -1;
  if (!read(i, a)) return;
  if (i < declared.size() && declared[i] == ',') {
    ++i;
    if (!read(i, b)) return;
  }
  if (i >= declared.size() || declared[i] != ')') return;
  p = a;
  s = b;
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return kDays[m - 1];
}

constexpr int64_t kMinSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr int64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z

/// Reads exactly `n` digits at text[i].
bool digits(std::string_view text, size_t& i, size_t n, int& out) {
  if (i + n > text.size()) return false;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    const char c = text[i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  i += n;
  return true;
}

}  // namespace

int8_t declared_int_bytes(std::string_view declared) {
  const std::string u = upper(trim(declared));
  const std::string_view base = trim(std::string_view(u).substr(0, u.find('(')));
  if (base == "SMALLINT" || base == "INT2" || base == "TINYINT") return 2;
  if (base == "INT" || base == "INT4" || base == "MEDIUMINT") return 4;
  return 0;
}

DeclaredType parse_declared_type(std::string_view declared) {
  DeclaredType out;
  const std::string_view name = trim(declared);
  out.native.name = std::string(name);
  if (name.empty()) return out;
  const std::string u = upper(name);
  int64_t p = -1, s = -1;
  parse_modifiers(u, p, s);

  if (contains(u, "BOOL")) {
    out.decl = Decl::boolean;
  } else if (contains(u, "DATE") || contains(u, "TIME")) {
    out.decl = Decl::time;
    const std::string_view base = trim(std::string_view(u).substr(0, u.find('(')));
    if (base == "DATE") {
      out.native.time_form = db::TimeForm::date;
    } else if (contains(u, "TZ") || contains(u, "WITH TIME ZONE")) {
      out.native.time_form = db::TimeForm::timestamptz;
    } else {
      out.native.time_form = db::TimeForm::timestamp;
    }
    if (p >= 0) out.native.precision = static_cast<int32_t>(p);  // fractional digits
  } else if (contains(u, "INT")) {
    out.decl = Decl::integer;
    out.native.int_bytes = declared_int_bytes(name);
  } else if (contains(u, "CHAR") || contains(u, "CLOB") || contains(u, "TEXT")) {
    out.decl = Decl::text;
    if (p >= 0) out.native.length = p;
  } else if (contains(u, "BLOB") || contains(u, "BYTEA") || contains(u, "BINARY")) {
    // BYTEA and (VAR)BINARY have NUMERIC affinity in SQLite, which leaves blobs alone.
    out.decl = Decl::blob;
    if (p >= 0) out.native.length = p;
  } else if (contains(u, "REAL") || contains(u, "FLOA") || contains(u, "DOUB")) {
    out.decl = Decl::real;
    out.native.int_bytes = 8;  // every SQLite REAL is a double
  } else if (contains(u, "NUMERIC") || contains(u, "DECIMAL") || contains(u, "NUMBER") ||
             contains(u, "MONEY")) {
    out.decl = Decl::numeric;
    if (p >= 0) {
      out.native.precision = static_cast<int32_t>(p);
      out.native.scale = static_cast<int32_t>(s >= 0 ? s : 0);
    }
  } else {
    // NUMERIC affinity by SQLite's last rule, but a name SQLite gives no meaning
    // (JSON, UUID, INET, ...): its values are whatever the application stored.
    out.decl = Decl::from_value;
  }
  return out;
}

db::Kind declared_kind(Decl d) {
  switch (d) {
    case Decl::from_value:
      return db::Kind::Null;
    case Decl::blob:
      return db::Kind::Bytes;
    case Decl::integer:
      return db::Kind::I64;
    case Decl::real:
      return db::Kind::F64;
    case Decl::text:
      return db::Kind::Text;
    case Decl::numeric:
      return db::Kind::Decimal;
    case Decl::boolean:
      return db::Kind::Bool;
    case Decl::time:
      return db::Kind::Time;
  }
  return db::Kind::Null;
}

std::optional<int64_t> unix_seconds_to_micros(int64_t seconds) {
  if (seconds < kMinSeconds || seconds > kMaxSeconds) return std::nullopt;
  return seconds * 1000000;
}

std::optional<int64_t> unix_seconds_to_micros(double seconds) {
  if (!std::isfinite(seconds)) return std::nullopt;
  if (seconds < static_cast<double>(kMinSeconds) ||
      seconds >= static_cast<double>(kMaxSeconds + 1)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(seconds * 1e6));
}

std::optional<int64_t> parse_iso_time(std::string_view t) {
  size_t i = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(t, i, 4, year) || i >= t.size() || t[i++] != '-' || !digits(t, i, 2, month) ||
      i >= t.size() || t[i++] != '-' || !digits(t, i, 2, day)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 ||
      static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month))) {
    return std::nullopt;
  }
  int64_t micros = 0;
  if (i < t.size() && (t[i] == 'T' || t[i] == 't' || t[i] == ' ') && i + 1 < t.size() &&
      t[i + 1] >= '0' && t[i + 1] <= '9') {
    ++i;
    if (!digits(t, i, 2, hour) || i >= t.size() || t[i++] != ':' || !digits(t, i, 2, minute)) {
      return std::nullopt;
    }
    if (i < t.size() && t[i] == ':') {
      ++i;
      if (!digits(t, i, 2, second)) return std::nullopt;
      if (i < t.size() && (t[i] == '.' || t[i] == ',')) {
        ++i;
        const size_t start = i;
        int64_t nanos = 0;
        while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
          if (i - start < 9) nanos = nanos * 10 + (t[i] - '0');
          ++i;
        }
        if (i == start) return std::nullopt;
        for (size_t k = std::min<size_t>(i - start, 9); k < 9; ++k)
          nanos *= 10;
        micros = (nanos + 500) / 1000;  // may reach 1000000: carried by the sum below
      }
    }
    if (hour > 23 || minute > 59 || second > 59) return std::nullopt;
  }
  int offset_seconds = 0;
  if (i < t.size()) {
    if (t[i] == ' ' && i + 1 < t.size()) ++i;  // "2024-01-02 03:04:05 +02"
    if (t[i] == 'Z' || t[i] == 'z') {
      ++i;
    } else if (t[i] == '+' || t[i] == '-') {
      const int sign = t[i] == '-' ? -1 : 1;
      ++i;
      int oh = 0, om = 0;
      if (!digits(t, i, 2, oh)) return std::nullopt;
      if (i < t.size() && t[i] == ':') {
        ++i;
        if (!digits(t, i, 2, om)) return std::nullopt;
      } else if (i < t.size()) {
        if (!digits(t, i, 2, om)) return std::nullopt;
      }
      if (oh > 15 || om > 59) return std::nullopt;
      offset_seconds = sign * (oh * 3600 + om * 60);
    } else {
      return std::nullopt;
    }
    if (i != t.size()) return std::nullopt;
  }
  const int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds;
  return seconds * 1000000 + micros;
}

std::string format_iso_time(int64_t micros) {
  int64_t seconds = micros / 1000000;
  int64_t frac = micros % 1000000;
  if (frac < 0) {
    frac += 1000000;
    --seconds;
  }
  int64_t days = seconds / 86400;
  int64_t sod = seconds % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0, d = 0;
  civil_from_days(days, y, m, d);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02d:%02d:%02d",
                        static_cast<long long>(y), m, d, static_cast<int>(sod / 3600),
                        static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60));
  std::string out(buf, static_cast<size_t>(n));
  if (frac != 0) {
    n = std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(frac));
    out.append(buf, static_cast<size_t>(n));
  }
  out += "+00:00";
  return out;
}

std::optional<bool> parse_bool_text(std::string_view t) {
  const std::string u = upper(t);
  if (u == "1" || u == "TRUE" || u == "T") return true;
  if (u == "0" || u == "FALSE" || u == "F") return false;
  return std::nullopt;
}

std::string decimal_from_int(int64_t v, int scale) {
  std::string out = std::to_string(v);
  if (scale > 0) {
    out += '.';
    out.append(static_cast<size_t>(scale), '0');
  }
  return out;
}

std::optional<std::string> decimal_from_double(double v, int scale) {
  if (!std::isfinite(v)) return std::nullopt;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  if (ec != std::errc()) return std::nullopt;
  std::string_view s(buf, static_cast<size_t>(end - buf));

  bool negative = false;
  if (!s.empty() && s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  // Split into significant digits and the position of the decimal point.
  std::string ds;
  int64_t point = 0;
  bool seen_point = false;
  size_t i = 0;
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.') {
      seen_point = true;
    } else {
      ds += s[i];
      if (!seen_point) ++point;
    }
  }
  if (i < s.size()) {
    int exp = 0;
    std::from_chars(s.data() + i + 1 + (s[i + 1] == '+' ? 1 : 0), s.data() + s.size(), exp);
    point += exp;
  }
  while (ds.size() > 1 && ds.front() == '0') {
    ds.erase(0, 1);
    --point;
  }
  if (ds == "0") point = 1;

  if (scale >= 0) {
    const int64_t keep = point + scale;  // digits kept
    if (keep < 0) {
      ds = "0";
      point = 1;
    } else if (keep < static_cast<int64_t>(ds.size())) {
      const bool round_up = ds[static_cast<size_t>(keep)] >= '5';
      ds.resize(static_cast<size_t>(keep));
      if (round_up) {
        int64_t k = keep - 1;
        while (k >= 0 && ds[static_cast<size_t>(k)] == '9') {
          ds[static_cast<size_t>(k)] = '0';
          --k;
        }
        if (k >= 0) {
          ++ds[static_cast<size_t>(k)];
        } else {
          ds.insert(ds.begin(), '1');
          ++point;
        }
      }
      if (ds.empty()) {
        ds = "0";
        point = 1;
      }
    }
  }

  std::string out;
  // Integer part.
  if (point <= 0) {
    out = "0";
  } else if (point >= static_cast<int64_t>(ds.size())) {
    out = ds;
    out.append(static_cast<size_t>(point - static_cast<int64_t>(ds.size())), '0');
  } else {
    out = ds.substr(0, static_cast<size_t>(point));
  }
  // Fraction.
  std::string frac;
  if (point < 0) frac.append(static_cast<size_t>(-point), '0');
  if (point < static_cast<int64_t>(ds.size())) {
    frac += ds.substr(static_cast<size_t>(std::max<int64_t>(point, 0)));
  }
  if (scale >= 0) {
    if (static_cast<int64_t>(frac.size()) > scale) frac.resize(static_cast<size_t>(scale));
    frac.append(static_cast<size_t>(scale) - frac.size(), '0');
  } else {
    while (!frac.empty() && frac.back() == '0')
      frac.pop_back();
  }
  if (!frac.empty()) out += "." + frac;
  const bool zero = out.find_first_not_of("0.") == std::string::npos;
  if (negative && !zero) out.insert(out.begin(), '-');
  return out;
}

}  // namespace wirepool::sqlite
