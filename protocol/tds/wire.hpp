#pragma once
// Internal to protocol/tds/: a bounds-checked little reader and the
// little-endian writers the codec's .cpp files share. Not a public header.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/tds/types.hpp"

namespace wirepool::tds::wire {

/// Reads from a span. A read past the end returns zeros and sets short_input():
/// callers check ok() before trusting what they read and in every loop.
class Reader {
 public:
  explicit Reader(Bytes in) : in_(in) {}
  bool ok() const { return !short_; }
  bool short_input() const { return short_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return short_ ? 0 : in_.size() - pos_; }
  bool has(size_t n) const { return !short_ && in_.size() - pos_ >= n; }
  Bytes rest() const { return short_ ? Bytes{} : in_.subspan(pos_); }

  uint8_t u8() {
    if (!need(1)) return 0;
    return in_[pos_++];
  }
  uint16_t u16() {  // little-endian
    if (!need(2)) return 0;
    uint16_t v = static_cast<uint16_t>(in_[pos_] | (in_[pos_ + 1] << 8));
    pos_ += 2;
    return v;
  }
  uint16_t u16be() {
    if (!need(2)) return 0;
    uint16_t v = static_cast<uint16_t>((in_[pos_] << 8) | in_[pos_ + 1]);
    pos_ += 2;
    return v;
  }
  uint32_t u32() {
    if (!need(4)) return 0;
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
      v = (v << 8) | in_[pos_ + static_cast<size_t>(i)];
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    if (!need(8)) return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
      v = (v << 8) | in_[pos_ + static_cast<size_t>(i)];
    pos_ += 8;
    return v;
  }
  Bytes take(size_t n) {
    if (!need(n)) return {};
    Bytes b = in_.subspan(pos_, n);
    pos_ += n;
    return b;
  }

 private:
  bool need(size_t n) {
    if (short_ || in_.size() - pos_ < n) {
      short_ = true;
      return false;
    }
    return true;
  }
  Bytes in_;
  size_t pos_ = 0;
  bool short_ = false;
};

inline void put_u8(std::string& out, uint8_t v) {
  out.push_back(static_cast<char>(v));
}
inline void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>(v >> 8));
}
inline void put_u16be(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xFF));
}
inline void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void put_bytes(std::string& out, Bytes b) {
  out.append(reinterpret_cast<const char*>(b.data()), b.size());
}
inline std::string_view as_view(Bytes b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// Writes a UTF-8 string as UCS-2; the caller has validated it (invalid input
/// is replaced by nothing). Returns the number of UCS-2 code units written.
inline size_t put_ucs2(std::string& out, std::string_view utf8) {
  const size_t before = out.size();
  if (!utf8_to_ucs2(utf8, out)) out.resize(before);
  return (out.size() - before) / 2;
}

// Decode outcomes and the string and token forms the codec files share.

template <class M>
Decoded<M> fail(std::string message) {
  Decoded<M> d;
  d.status = DecodeStatus::error;
  d.error = std::move(message);
  return d;
}
/// A failure of an inner decode, with `prefix` before its message; keeps over_limit.
template <class M, class N>
Decoded<M> fail_from(std::string prefix, const Decoded<N>& inner) {
  Decoded<M> d = fail<M>(std::move(prefix) + inner.error);
  d.over_limit = inner.over_limit;
  return d;
}
/// need_more for an inner value at `offset` that needs `needed` bytes of its own (0: unknown).
template <class M>
Decoded<M> need_at(size_t offset, size_t needed) {
  Decoded<M> d;
  d.needed = needed == 0 ? 0 : offset + needed;
  return d;
}
template <class M>
Decoded<M> done_ok(M m, size_t consumed) {
  Decoded<M> d;
  d.status = DecodeStatus::ok;
  d.message = std::move(m);
  d.consumed = consumed;
  return d;
}

inline std::string hex2(uint8_t b) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return {kHex[b >> 4], kHex[b & 15]};
}

/// Reads `chars` UCS-2 code units as UTF-8; false on a short read or bad text.
inline bool read_ucs2(Reader& r, size_t chars, std::string& out, std::string* error) {
  Bytes b = r.take(chars * 2);
  if (!r.ok()) return false;
  return ucs2_to_utf8(b, out, error);
}

/// UTF-8 -> UCS-2 cut to at most `max_units` code units (never inside a pair).
inline std::string ucs2_capped(std::string_view utf8, size_t max_units) {
  std::string u;
  if (!utf8_to_ucs2(utf8, u)) {
    u.clear();
    // Invalid UTF-8 from a backend message: keep the ASCII bytes only.
    for (char c : utf8) {
      if (static_cast<uint8_t>(c) < 0x80) put_u16(u, static_cast<uint16_t>(c));
    }
  }
  if (u.size() > max_units * 2) {
    size_t n = max_units * 2;
    const uint16_t last = static_cast<uint16_t>(static_cast<uint8_t>(u[n - 2]) |
                                                (static_cast<uint8_t>(u[n - 1]) << 8));
    if (last >= 0xD800 && last <= 0xDBFF) n -= 2;  // do not split a surrogate pair
    u.resize(n);
  }
  return u;
}

/// B_VARCHAR: a character count byte and UCS-2.
inline void put_b_varchar(std::string& out, std::string_view utf8) {
  const std::string u = ucs2_capped(utf8, 255);
  put_u8(out, static_cast<uint8_t>(u.size() / 2));
  out += u;
}
/// US_VARCHAR: a 2-byte character count and UCS-2.
inline void put_us_varchar(std::string& out, std::string_view utf8, size_t max_units) {
  const std::string u = ucs2_capped(utf8, max_units);
  put_u16(out, static_cast<uint16_t>(u.size() / 2));
  out += u;
}

inline bool read_b_varchar(Reader& r, std::string& out, std::string* error) {
  const uint8_t n = r.u8();
  return r.ok() && read_ucs2(r, n, out, error);
}
inline bool read_us_varchar(Reader& r, std::string& out, std::string* error) {
  const uint16_t n = r.u16();
  return r.ok() && read_ucs2(r, n, out, error);
}

/// Starts a token with a 2-byte length; returns the length's position.
inline size_t begin_len_token(std::string& out, uint8_t token) {
  put_u8(out, token);
  const size_t at = out.size();
  put_u16(out, 0);
  return at;
}
inline void end_len_token(std::string& out, size_t at) {
  const size_t n = out.size() - at - 2;
  out[at] = static_cast<char>(n & 0xFF);
  out[at + 1] = static_cast<char>((n >> 8) & 0xFF);
}

}  // namespace wirepool::tds::wire
