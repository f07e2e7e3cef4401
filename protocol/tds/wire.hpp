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

}  // namespace wirepool::tds::wire
