#pragma once
// Internal to protocol/pg/: the constants and small helpers the value files
// (numbers, numeric, datetime, bytea, convert, types, params) share.

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg::detail {

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

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

inline void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

inline uint64_t get_be(std::string_view s) {
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
inline std::string quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string q = "\"";
  q.append(s.substr(0, kMax));
  if (s.size() > kMax) q.append("...");
  q.push_back('"');
  return q;
}

inline db::Error make_error(std::string_view sqlstate, std::string message) {
  return db::Error{
      db::Errc::invalid_query, std::string(sqlstate), 0, std::move(message), {}, {}, {}};
}

inline std::string hex_byte(uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

}  // namespace wirepool::pg::detail
