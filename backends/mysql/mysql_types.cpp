#include "backends/mysql/mysql_types.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace wirepool::mysql {

namespace {

std::string type_name(enum_field_types type, bool is_unsigned, unsigned long length) {
  std::string n;
  switch (type) {
    case MYSQL_TYPE_TINY:
      n = length == 1 ? "TINYINT(1)" : "TINYINT";
      break;
    case MYSQL_TYPE_SHORT:
      n = "SMALLINT";
      break;
    case MYSQL_TYPE_INT24:
      n = "MEDIUMINT";
      break;
    case MYSQL_TYPE_LONG:
      n = "INT";
      break;
    case MYSQL_TYPE_LONGLONG:
      n = "BIGINT";
      break;
    case MYSQL_TYPE_YEAR:
      return "YEAR";
    case MYSQL_TYPE_FLOAT:
      n = "FLOAT";
      break;
    case MYSQL_TYPE_DOUBLE:
      n = "DOUBLE";
      break;
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL:
      n = "DECIMAL";
      break;
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      return "DATE";
    case MYSQL_TYPE_DATETIME:
      return "DATETIME";
    case MYSQL_TYPE_TIMESTAMP:
      return "TIMESTAMP";
    case MYSQL_TYPE_TIME:
      return "TIME";
    case MYSQL_TYPE_BIT:
      return "BIT";
    case MYSQL_TYPE_JSON:
      return "JSON";
    case MYSQL_TYPE_GEOMETRY:
      return "GEOMETRY";
    case MYSQL_TYPE_ENUM:
      return "ENUM";
    case MYSQL_TYPE_SET:
      return "SET";
    case MYSQL_TYPE_NULL:
      return "NULL";
    case MYSQL_TYPE_VARCHAR:
    case MYSQL_TYPE_VAR_STRING:
      return "VARCHAR";
    case MYSQL_TYPE_STRING:
      return "CHAR";
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB:
      return "BLOB";
    default:
      return "UNKNOWN";
  }
  if (is_unsigned) n += " UNSIGNED";
  return n;
}

}  // namespace

ColumnType classify(std::string_view name, enum_field_types type, unsigned flags,
                    unsigned long length, unsigned charsetnr, unsigned decimals) {
  ColumnType out;
  out.type = type;
  out.flags = flags;
  out.length = length;
  out.charsetnr = charsetnr;
  out.decimals = decimals;
  db::Column& c = out.column;
  c.name.assign(name);
  c.nullable = (flags & NOT_NULL_FLAG) == 0;
  const bool is_unsigned = (flags & UNSIGNED_FLAG) != 0;
  const bool binary = charsetnr == kBinaryCharset;
  c.native.name = type_name(type, is_unsigned, length);
  // ENUM and SET columns arrive as MYSQL_TYPE_STRING: text, not CHAR(n).
  if (type == MYSQL_TYPE_STRING && (flags & ENUM_FLAG) != 0) c.native.name = "ENUM";
  if (type == MYSQL_TYPE_STRING && (flags & SET_FLAG) != 0) c.native.name = "SET";
  switch (type) {
    case MYSQL_TYPE_TINY:
      // TINYINT(1) is MySQL's BOOL; the display width is all that says so.
      out.read = length == 1 ? Read::boolean : Read::i64;
      c.native.int_bytes = 2;
      break;
    case MYSQL_TYPE_SHORT:
      out.read = Read::i64;
      c.native.int_bytes = is_unsigned ? 4 : 2;
      break;
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_YEAR:
      out.read = Read::i64;
      c.native.int_bytes = 4;
      break;
    case MYSQL_TYPE_LONG:
      out.read = Read::i64;  // unsigned INT fits in 64 signed bits
      c.native.int_bytes = is_unsigned ? 8 : 4;
      break;
    case MYSQL_TYPE_LONGLONG:
      out.read = is_unsigned ? Read::u64 : Read::i64;
      break;
    case MYSQL_TYPE_FLOAT:
      out.read = Read::f32;
      break;
    case MYSQL_TYPE_DOUBLE:
      out.read = Read::f64;
      break;
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL: {
      out.read = Read::decimal;
      // length counts digits, the point and the sign (unsigned: no sign).
      const int64_t digits =
          static_cast<int64_t>(length) - (decimals > 0 ? 1 : 0) - (is_unsigned ? 0 : 1);
      c.native.precision = static_cast<int32_t>(digits > 0 ? digits : length);
      c.native.scale = static_cast<int32_t>(decimals);
      break;
    }
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      out.read = Read::date;
      c.native.time_form = db::TimeForm::date;
      break;
    case MYSQL_TYPE_DATETIME:
      out.read = Read::datetime;
      c.native.time_form = db::TimeForm::timestamp;
      break;
    case MYSQL_TYPE_TIMESTAMP:
      out.read = Read::timestamp;
      c.native.time_form = db::TimeForm::timestamptz;
      break;
    case MYSQL_TYPE_TIME:
      out.read = Read::time_text;
      break;
    case MYSQL_TYPE_BIT:
      out.read = Read::bit;
      break;
    case MYSQL_TYPE_GEOMETRY:
      out.read = Read::bytes;
      break;
    case MYSQL_TYPE_NULL:
      out.read = Read::null;
      break;
    case MYSQL_TYPE_JSON:  // MySQL's JSON: utf8mb4 text (MariaDB's is LONGTEXT)
      out.read = Read::text;
      break;
    default:  // CHAR, VARCHAR, TEXT/BLOB, ENUM, SET: charset 63 is binary
      out.read = binary ? Read::bytes : Read::text;
      if (type != MYSQL_TYPE_TINY_BLOB && type != MYSQL_TYPE_MEDIUM_BLOB &&
          type != MYSQL_TYPE_LONG_BLOB && type != MYSQL_TYPE_BLOB) {
        // In characters: text arrives as utf8mb4 (the connection's), 4 bytes
        // a character in the length MariaDB reports (PostgreSQL's varchar(n)).
        c.native.length = static_cast<int64_t>(binary ? length : length / 4);
      }
      if (binary && c.native.name == "VARCHAR") c.native.name = "VARBINARY";
      if (binary && c.native.name == "CHAR") c.native.name = "BINARY";
      if (!binary && c.native.name == "BLOB") c.native.name = "TEXT";
      break;
  }
  switch (out.read) {
    case Read::null:
      c.kind = db::Kind::Null;
      break;
    case Read::boolean:
      c.kind = db::Kind::Bool;
      break;
    case Read::i64:
      c.kind = db::Kind::I64;
      break;
    case Read::u64:
    case Read::bit:
      c.kind = db::Kind::U64;
      break;
    case Read::f32:
    case Read::f64:
      c.kind = db::Kind::F64;
      break;
    case Read::decimal:
      c.kind = db::Kind::Decimal;
      break;
    case Read::date:
    case Read::datetime:
    case Read::timestamp:
      c.kind = db::Kind::Time;
      break;
    case Read::time_text:
    case Read::text:
      c.kind = db::Kind::Text;
      break;
    case Read::bytes:
      c.kind = db::Kind::Bytes;
      break;
  }
  return out;
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's days_from_civil.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> micros_of(const MYSQL_TIME& t) {
  if (t.year == 0 || t.month < 1 || t.month > 12 || t.day < 1 || t.day > 31) return std::nullopt;
  if (t.hour > 23 || t.minute > 59 || t.second > 59 || t.second_part > 999999) return std::nullopt;
  const int64_t days = days_from_civil(t.year, t.month, t.day);
  const int64_t secs = days * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
  return secs * 1000000 + static_cast<int64_t>(t.second_part);
}

MYSQL_TIME mysql_time_of(int64_t micros) {
  MYSQL_TIME t{};
  int64_t secs = micros / 1000000;
  int64_t frac = micros % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  // Howard Hinnant's civil_from_days.
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  t.year = static_cast<unsigned>(y);
  t.month = m;
  t.day = d;
  t.hour = static_cast<unsigned>(rem / 3600);
  t.minute = static_cast<unsigned>(rem / 60 % 60);
  t.second = static_cast<unsigned>(rem % 60);
  t.second_part = static_cast<unsigned long>(frac);
  t.time_type = MYSQL_TIMESTAMP_DATETIME;
  return t;
}

namespace {
bool digits(std::string_view s, size_t pos, size_t n, unsigned& out) {
  if (pos + n > s.size()) return false;
  unsigned v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
  }
  out = v;
  return true;
}
}  // namespace

std::optional<int64_t> parse_datetime(std::string_view s) {
  MYSQL_TIME t{};
  if (!digits(s, 0, 4, t.year) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, t.month) ||
      s[7] != '-' || !digits(s, 8, 2, t.day)) {
    return std::nullopt;
  }
  if (s.size() > 10) {
    if (s.size() < 19 || (s[10] != ' ' && s[10] != 'T') || !digits(s, 11, 2, t.hour) ||
        s[13] != ':' || !digits(s, 14, 2, t.minute) || s[16] != ':' ||
        !digits(s, 17, 2, t.second)) {
      return std::nullopt;
    }
    if (s.size() > 19) {
      if (s[19] != '.' || s.size() > 26 || s.size() == 20) return std::nullopt;
      unsigned frac = 0;
      if (!digits(s, 20, s.size() - 20, frac)) return std::nullopt;
      for (size_t i = s.size(); i < 26; ++i)
        frac *= 10;
      t.second_part = frac;
    }
  }
  return micros_of(t);
}

std::string format_time_of_day(const MYSQL_TIME& t) {
  char buf[40];
  const unsigned long hours = static_cast<unsigned long>(t.day) * 24 + t.hour;
  int n;
  if (t.second_part != 0) {
    n = std::snprintf(buf, sizeof buf, "%s%02lu:%02u:%02u.%06lu", t.neg ? "-" : "", hours, t.minute,
                      t.second, static_cast<unsigned long>(t.second_part));
  } else {
    n = std::snprintf(buf, sizeof buf, "%s%02lu:%02u:%02u", t.neg ? "-" : "", hours, t.minute,
                      t.second);
  }
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

uint64_t bits_value(std::string_view bytes) {
  uint64_t v = 0;
  for (unsigned char c : bytes)
    v = (v << 8) | c;
  return v;
}

double widen_float(float f) {
  if (!std::isfinite(f)) return static_cast<double>(f);
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  double d = 0;
  std::from_chars(buf, r.ptr, d);
  return d;
}

std::optional<int64_t> parse_i64(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_f64(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    // inf / nan are not SQL values; anything else is not a number
    return std::nullopt;
  }
  return v;
}

}  // namespace wirepool::mysql
