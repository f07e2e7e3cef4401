// UCS-2, cp1252, GUID and decimal text (types.hpp).
#include "protocol/tds/types.hpp"

#include "protocol/tds/value_util.hpp"
#include "sql/utf8.hpp"

namespace wirepool::tds {

using namespace detail;

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
    sql::append_utf8(out, cp);
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
