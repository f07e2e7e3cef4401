// bytea and uuid text forms (bytea.hpp).
#include "protocol/pg/bytea.hpp"

#include <array>

#include "protocol/pg/value_util.hpp"

namespace wirepool::pg {
namespace detail {

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

}  // namespace detail

using namespace detail;

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
