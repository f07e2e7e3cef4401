#pragma once
// Helpers for the TDS codec tests: captured tedious messages (captures/*.hex,
// one packet per line), hex conversion and little byte builders.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/tds/codec.hpp"

namespace wirepool::tds::test {

inline std::string unhex(std::string_view hex) {
  std::string out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(nib(hex[i]) * 16 + nib(hex[i + 1])));
  return out;
}

inline std::string hex(std::string_view bytes) {
  static constexpr char k[] = "0123456789abcdef";
  std::string s;
  for (char c : bytes) {
    s.push_back(k[static_cast<uint8_t>(c) >> 4]);
    s.push_back(k[static_cast<uint8_t>(c) & 15]);
  }
  return s;
}

/// The packets of a captured message, each with its header.
inline std::vector<std::string> capture_packets(const std::string& name) {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "captures" / name;
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::vector<std::string> packets;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty()) packets.push_back(unhex(line));
  }
  return packets;
}

/// The captured message's raw stream (all packets concatenated).
inline std::string capture_stream(const std::string& name) {
  std::string s;
  for (const auto& p : capture_packets(name))
    s += p;
  return s;
}

/// The captured message assembled (payload of all packets).
inline Message capture_message(const std::string& name) {
  MessageAssembler a;
  a.feed(capture_stream(name));
  Message m;
  std::string error;
  EXPECT_EQ(a.next(m, error), DecodeStatus::ok) << error;
  return m;
}

inline Bytes bytes_of(const std::string& s) {
  return as_bytes(s);
}

}  // namespace wirepool::tds::test
