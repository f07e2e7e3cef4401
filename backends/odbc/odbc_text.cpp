#include "backends/odbc/odbc_text.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wirepool::odbc {

// ---- UTF-16 ------------------------------------------------------------------

namespace {

// The ASCII run at the start of a text, copied 16 code units a time with
// SSE2 (every x86-64), then 8 a time (a cell is converted for every row a
// reader reads, a text parameter for every execution: docs/performance.md,
// drivers). Returns its length. The 8-unit lanes are shifted as little-endian
// words; a big-endian host takes the unit-by-unit loop.
constexpr bool kLittle = std::endian::native == std::endian::little;

size_t ascii_prefix(const char* s, size_t n, char16_t* out) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    if (_mm_movemask_epi8(v) != 0) break;  // a byte with its high bit set
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi8(v, zero));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 8), _mm_unpackhi_epi8(v, zero));
  }
#endif
  for (; kLittle && i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    if (w & 0x8080808080808080ULL) break;
    // Each byte to a 16-bit lane (little-endian units, as ODBC's SQLWCHAR).
    const uint64_t lo =
        (w & 0xff) | ((w & 0xff00) << 8) | ((w & 0xff0000) << 16) | ((w & 0xff000000) << 24);
    const uint64_t hi = ((w >> 32) & 0xff) | ((w >> 24) & 0xff0000) | ((w >> 16) & 0xff00000000) |
                        ((w >> 8) & 0xff000000000000);
    std::memcpy(out + i, &lo, 8);
    std::memcpy(out + i + 4, &hi, 8);
  }
  while (i < n && static_cast<unsigned char>(s[i]) < 0x80) {
    out[i] = static_cast<char16_t>(s[i]);
    ++i;
  }
  return i;
}

size_t ascii_prefix(const char16_t* u, size_t n, char* out) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i high = _mm_set1_epi16(static_cast<short>(0xff80));
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u + i + 8));
    const __m128i over = _mm_and_si128(_mm_or_si128(a, b), high);
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(over, zero)) != 0xffff) break;  // a unit >= 0x80
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(a, b));
  }
#endif
  for (; kLittle && i + 8 <= n; i += 8) {
    uint64_t a, b;
    std::memcpy(&a, u + i, 8);
    std::memcpy(&b, u + i + 4, 8);
    if ((a | b) & 0xff80ff80ff80ff80ULL) break;
    // The low byte of each 16-bit lane, packed.
    const uint64_t w = (a & 0xff) | ((a >> 8) & 0xff00) | ((a >> 16) & 0xff0000) |
                       ((a >> 24) & 0xff000000) | ((b & 0xff) << 32) | ((b & 0xff0000) << 24) |
                       ((b & 0xff00000000) << 16) | ((b & 0xff000000000000) << 8);
    std::memcpy(out + i, &w, 8);
  }
  while (i < n && u[i] < 0x80) {
    out[i] = static_cast<char>(u[i]);
    ++i;
  }
  return i;
}

}  // namespace

namespace {
size_t utf16_rest(std::string_view s, size_t i, char16_t* out, size_t room);
}  // namespace

std::optional<std::u16string> to_utf16(std::string_view s) {
  std::u16string out;
  if (!to_utf16(s, out)) return std::nullopt;
  return out;
}

bool to_utf16(std::string_view s, std::u16string& out) {
  // A UTF-8 text never takes more UTF-16 units than it has bytes.
  out.resize(s.size());
  const size_t n = to_utf16(s, out.data(), out.size());
  if (n == kNoRoom) return false;
  out.resize(n);
  return true;
}

size_t to_utf16(std::string_view s, char16_t* out, size_t room) {
  // ASCII first, written in place: most text is nothing else.
  size_t i = 0;
  if (s.size() <= room) {
    i = ascii_prefix(s.data(), s.size(), out);
    if (i == s.size()) [[likely]]
      return i;
  }
  return utf16_rest(s, i, out, room);
}

namespace {
// to_utf16 past its ASCII prefix: the first `i` bytes of `s` are units
// 0..i-1 of `out` already.
[[gnu::noinline]] size_t utf16_rest(std::string_view s, size_t i, char16_t* out, size_t room) {
  size_t o = i;  // in out
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (o == room) return kNoRoom;
      out[o++] = c;
      ++i;
      continue;
    }
    int len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return kNoRoom;
    }
    if (i + static_cast<size_t>(len) > s.size()) return kNoRoom;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xc0) != 0x80) return kNoRoom;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return kNoRoom;
    if (cp >= 0x10000) {
      if (room - o < 2) return kNoRoom;
      cp -= 0x10000;
      out[o++] = static_cast<char16_t>(0xd800 + (cp >> 10));
      out[o++] = static_cast<char16_t>(0xdc00 + (cp & 0x3ff));
    } else {
      if (o == room) return kNoRoom;
      out[o++] = static_cast<char16_t>(cp);
    }
    i += static_cast<size_t>(len);
  }
  return o;
}
}  // namespace

void append_utf8(const char16_t* u, size_t n, std::string& out) {
  // ASCII first, written in place: most cells are nothing else.
  const size_t start = out.size();
  out.resize(start + n);
  size_t i = ascii_prefix(u, n, out.data() + start);
  out.resize(start + i);
  if (i == n) return;
  out.reserve(out.size() + (n - i) * 3);
  for (; i < n; ++i) {
    uint32_t cp = u[i];
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n && u[i + 1] >= 0xdc00 && u[i + 1] <= 0xdfff) {
      cp = 0x10000 + ((cp - 0xd800) << 10) + (u[i + 1] - 0xdc00);
      ++i;
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      cp = 0xfffd;  // a lone surrogate
    }
    if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
}

std::string to_utf8(const char16_t* units, size_t count) {
  std::string out;
  append_utf8(units, count, out);
  return out;
}

// ---- parameter markers ---------------------------------------------------------

std::optional<Rewritten> rewrite_markers(std::string_view text, sql::Dialect d, db::Error* error) {
  Rewritten r;
  const auto markers = sql::find_markers(text, d);
  bool dollar = false;
  bool question = false;
  for (const auto& m : markers) {
    dollar = dollar || m.type == sql::Marker::Type::dollar;
    question = question || m.type != sql::Marker::Type::dollar;
  }
  if (dollar && question) {
    if (error) {
      error->code = db::Errc::invalid_query;
      error->sqlstate = "42601";
      error->message = "a statement cannot mix $n and ? parameter markers";
    }
    return std::nullopt;
  }
  if (!dollar) {
    // ? markers (and, in SQLite text, its other forms) bind in order.
    r.text.assign(text);
    r.binds.reserve(markers.size());
    for (size_t i = 0; i < markers.size(); ++i)
      r.binds.push_back(i);
    r.needed = markers.size();
    return r;
  }
  r.text.reserve(text.size());
  size_t pos = 0;
  for (const auto& m : markers) {
    r.text.append(text.substr(pos, m.offset - pos));
    r.text.push_back('?');
    // SQLite reads "$1::int" as one marker; the cast is PostgreSQL's, not SQLite's.
    const int n = std::max(m.number, 1);
    r.binds.push_back(static_cast<size_t>(n - 1));
    r.needed = std::max(r.needed, static_cast<size_t>(n));
    pos = m.offset + m.length;
  }
  r.text.append(text.substr(pos));
  return r;
}

// ---- connection strings ----------------------------------------------------------

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

struct Attr {
  std::string_view key;
  size_t begin;        // the key's first character, in the connection string
  size_t end;          // past the value and its ';'
  size_t value_begin;  // in the connection string
  size_t value_end;
  std::string value;  // unbraced
};

/// Key=value pairs; a value in braces may hold ';' and '}}' stands for '}'.
std::vector<Attr> parse(std::string_view c) {
  std::vector<Attr> out;
  size_t i = 0;
  while (i < c.size()) {
    const size_t eq = c.find('=', i);
    const size_t semi = c.find(';', i);
    if (eq == std::string_view::npos || (semi != std::string_view::npos && semi < eq)) {
      if (semi == std::string_view::npos) break;
      i = semi + 1;
      continue;
    }
    Attr a;
    a.begin = i;
    a.key = trim(c.substr(i, eq - i));
    size_t v = eq + 1;
    while (v < c.size() && c[v] == ' ')
      ++v;
    a.value_begin = v;
    if (v < c.size() && c[v] == '{') {
      size_t j = v + 1;
      while (j < c.size()) {
        if (c[j] == '}') {
          if (j + 1 < c.size() && c[j + 1] == '}') {
            a.value.push_back('}');
            j += 2;
            continue;
          }
          break;
        }
        a.value.push_back(c[j++]);
      }
      a.value_end = std::min(j + 1, c.size());
      const size_t next = c.find(';', a.value_end);
      i = next == std::string_view::npos ? c.size() : next + 1;
    } else {
      const size_t end = c.find(';', v);
      a.value_end = end == std::string_view::npos ? c.size() : end;
      a.value = std::string(trim(c.substr(v, a.value_end - v)));
      i = end == std::string_view::npos ? c.size() : end + 1;
    }
    a.end = i;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::optional<std::string> connection_value(std::string_view conn, std::string_view key) {
  for (auto& a : parse(conn)) {
    if (iequals(a.key, key)) return std::move(a.value);
  }
  return std::nullopt;
}

std::string redact_connection(std::string_view conn) {
  std::string out;
  size_t pos = 0;
  for (const auto& a : parse(conn)) {
    if (iequals(a.key, "pwd") || iequals(a.key, "password")) {
      out.append(conn.substr(pos, a.value_begin - pos));
      out += "***";
      pos = a.value_end;
    }
  }
  out.append(conn.substr(pos));
  return out;
}

namespace {

/// Appends `key={value}`: in braces ';', '=' and '{' are plain characters,
/// and '}' is written twice (the ODBC connection string grammar).
void append_braced(std::string& out, std::string_view key, std::string_view value) {
  if (!out.empty() && out.back() != ';') out += ';';
  out += key;
  out += "={";
  for (char c : value) {
    out += c;
    if (c == '}') out += '}';
  }
  out += '}';
}

bool is_login_key(std::string_view key) {
  return iequals(key, "uid") || iequals(key, "user") || iequals(key, "pwd") ||
         iequals(key, "password");
}

}  // namespace

std::string full_connection_string(std::string_view conn, std::string_view password,
                                   std::string_view user) {
  std::string out(trim(conn));
  if (out.find('=') == std::string::npos) out = "DSN=" + out;
  if (!user.empty()) {
    // The client's own login (auth.mode passthrough): the string's is dropped whole.
    std::string kept;
    size_t pos = 0;
    for (const auto& a : parse(out)) {
      if (!is_login_key(a.key)) continue;
      kept.append(out, pos, a.begin - pos);
      pos = a.end;
    }
    kept.append(out, pos);
    out = std::string(trim(kept));
    append_braced(out, "UID", user);
    append_braced(out, "PWD", password);
    return out;
  }
  if (!password.empty() && !connection_value(out, "pwd") && !connection_value(out, "password")) {
    append_braced(out, "PWD", password);
  }
  return out;
}

// ---- flavors ----------------------------------------------------------------------

std::string_view to_string(Flavor f) {
  switch (f) {
    case Flavor::postgresql:
      return "postgresql";
    case Flavor::mariadb:
      return "mariadb";
    case Flavor::sqlite:
      return "sqlite";
    case Flavor::generic:
      break;
  }
  return "generic";
}

Flavor flavor_of(std::string_view dbms) {
  std::string l(dbms);
  for (char& c : l)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l.find("postgres") != std::string::npos) return Flavor::postgresql;
  if (l.find("mariadb") != std::string::npos || l.find("mysql") != std::string::npos) {
    return Flavor::mariadb;
  }
  if (l.find("sqlite") != std::string::npos) return Flavor::sqlite;
  return Flavor::generic;
}

sql::Dialect dialect_of(Flavor f) {
  switch (f) {
    case Flavor::postgresql:
      return sql::Dialect::postgres;
    case Flavor::mariadb:
      return sql::Dialect::mysql;
    case Flavor::sqlite:
      return sql::Dialect::sqlite;
    case Flavor::generic:
      break;
  }
  return sql::Dialect::ansi;
}

}  // namespace wirepool::odbc
