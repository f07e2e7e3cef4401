#pragma once
// Byte builders for PostgreSQL wire-protocol tests: big-endian integers,
// C strings and whole frames (type byte + int32 length), so each test spells
// out the bytes it feeds the codec.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wirepool::pg::test {

/// Appends wire-format fields to a byte vector.
class ByteBuilder {
 public:
  ByteBuilder& u8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  ByteBuilder& i16(int16_t v) {
    const auto u = static_cast<uint16_t>(v);
    bytes_.push_back(static_cast<uint8_t>(u >> 8));
    bytes_.push_back(static_cast<uint8_t>(u));
    return *this;
  }
  ByteBuilder& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  ByteBuilder& u32(uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
      bytes_.push_back(static_cast<uint8_t>(v >> s));
    return *this;
  }
  ByteBuilder& i64(int64_t v) {
    const auto u = static_cast<uint64_t>(v);
    for (int s = 56; s >= 0; s -= 8)
      bytes_.push_back(static_cast<uint8_t>(u >> s));
    return *this;
  }
  /// The string and its terminating NUL.
  ByteBuilder& cstr(std::string_view s) {
    raw(s);
    bytes_.push_back(0);
    return *this;
  }
  /// The bytes as they are, no terminator.
  ByteBuilder& raw(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  ByteBuilder& append(const std::vector<uint8_t>& v) {
    bytes_.insert(bytes_.end(), v.begin(), v.end());
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

/// A frontend/backend frame: type byte, int32 length (body + 4), body.
inline std::vector<uint8_t> frame(char type, const ByteBuilder& body) {
  ByteBuilder b;
  b.u8(static_cast<uint8_t>(type)).i32(static_cast<int32_t>(body.size() + 4)).append(body.bytes());
  return b.bytes();
}

/// A frame whose length field says `length` whatever the body is.
inline std::vector<uint8_t> frame_with_length(char type, uint32_t length, const ByteBuilder& body) {
  ByteBuilder b;
  b.u8(static_cast<uint8_t>(type)).u32(length).append(body.bytes());
  return b.bytes();
}

/// A startup packet: int32 length (including itself), int32 code, body.
inline std::vector<uint8_t> startup_packet(uint32_t code, const ByteBuilder& body) {
  ByteBuilder b;
  b.i32(static_cast<int32_t>(body.size() + 8)).u32(code).append(body.bytes());
  return b.bytes();
}

inline std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline std::span<const uint8_t> span_of(const std::vector<uint8_t>& v) {
  return {v.data(), v.size()};
}

inline std::string as_string(const std::vector<uint8_t>& v) {
  return {v.begin(), v.end()};
}

inline std::vector<uint8_t> as_bytes(std::string_view s) {
  return {s.begin(), s.end()};
}

}  // namespace wirepool::pg::test
