// Parsers for the value syntaxes of the configuration: durations, sizes,
// certificate pins and CIDR networks, plus Cidr::contains. Pure functions: no
// YAML, no locations; the loader turns a nullopt into a located Problem.

#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <limits>

#include "config/config.hpp"

namespace wirepool::config {

namespace {

/// Splits "250ms" into digits ("250") and the rest ("ms"). Returns false unless
/// the text starts with at least one ASCII digit.
bool split_number(std::string_view s, uint64_t& number, std::string_view& unit) {
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9')
    ++digits;
  if (digits == 0) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + digits, number);
  if (ec != std::errc() || end != s.data() + digits) return false;  // overflow
  unit = s.substr(digits);
  return true;
}

bool multiply(uint64_t a, uint64_t b, uint64_t limit, uint64_t& out) {
  if (b != 0 && a > limit / b) return false;
  out = a * b;
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Compares the first `prefix` bits of two addresses of at least ceil(prefix/8) bytes.
bool prefix_equal(const uint8_t* a, const uint8_t* b, int prefix) {
  int whole = prefix / 8;
  if (std::memcmp(a, b, static_cast<size_t>(whole)) != 0) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

/// ::ffff:0:0/96, the IPv4-mapped IPv6 prefix (RFC 4291 section 2.5.5.2).
constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

}  // namespace

std::optional<Duration> parse_duration(std::string_view s) {
  uint64_t number = 0;
  std::string_view unit;
  if (!split_number(s, number, unit)) return std::nullopt;
  uint64_t factor = 0;
  if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60 * 1000;
  } else if (unit == "h") {
    factor = 60 * 60 * 1000;
  } else if (unit == "d") {
    factor = 24 * 60 * 60 * 1000;
  } else if (unit.empty() && number == 0) {
    factor = 1;  // a bare "0" needs no unit: it is zero in any
  } else {
    return std::nullopt;
  }
  uint64_t ms = 0;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max());
  if (!multiply(number, factor, kMax, ms)) return std::nullopt;
  return Duration(static_cast<Duration::rep>(ms));
}

std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t number = 0;
  std::string_view unit;
  if (!split_number(s, number, unit)) return std::nullopt;
  uint64_t factor = 0;
  if (unit.empty() || unit == "B") {
    factor = 1;
  } else if (unit == "kB" || unit == "KB") {
    factor = 1000;
  } else if (unit == "KiB") {
    factor = 1ull << 10;
  } else if (unit == "MB") {
    factor = 1000ull * 1000;
  } else if (unit == "MiB") {
    factor = 1ull << 20;
  } else if (unit == "GB") {
    factor = 1000ull * 1000 * 1000;
  } else if (unit == "GiB") {
    factor = 1ull << 30;
  } else {
    return std::nullopt;
  }
  uint64_t bytes = 0;
  if (!multiply(number, factor, std::numeric_limits<uint64_t>::max(), bytes)) return std::nullopt;
  return bytes;
}

std::optional<std::string> normalize_pin(std::string_view s) {
  // Either 64 hex digits, or 32 byte pairs separated by single colons ("AB:CD:..."):
  // a pin with colons in only some places is more likely a paste error than a pin.
  constexpr size_t kHexDigits = 64;
  const bool colons = s.find(':') != std::string_view::npos;
  if (s.size() != (colons ? kHexDigits + kHexDigits / 2 - 1 : kHexDigits)) return std::nullopt;
  std::string out;
  out.reserve(kHexDigits);
  for (size_t i = 0; i < s.size(); ++i) {
    if (colons && i % 3 == 2) {
      if (s[i] != ':') return std::nullopt;
      continue;
    }
    int v = hex_value(s[i]);
    if (v < 0) return std::nullopt;
    out.push_back("0123456789abcdef"[v]);
  }
  return out;
}

std::optional<Cidr> parse_cidr(std::string_view s) {
  Cidr cidr;
  cidr.text = std::string(s);
  std::string_view address = s;
  std::optional<int> prefix;
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    address = s.substr(0, slash);
    std::string_view digits = s.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return std::nullopt;
    int p = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
    if (ec != std::errc() || end != digits.data() + digits.size() || p < 0) return std::nullopt;
    prefix = p;
  }
  std::string host(address);  // inet_pton wants a NUL-terminated string
  if (inet_pton(AF_INET, host.c_str(), cidr.addr) == 1) {
    cidr.v6 = false;
  } else if (inet_pton(AF_INET6, host.c_str(), cidr.addr) == 1) {
    cidr.v6 = true;
  } else {
    return std::nullopt;
  }
  const int bits = cidr.v6 ? 128 : 32;
  cidr.prefix = prefix.value_or(bits);
  if (cidr.prefix > bits) return std::nullopt;
  // Keep the network address only: "10.1.2.3/8" is the network 10.0.0.0/8.
  for (int bit = cidr.prefix; bit < bits; ++bit) {
    cidr.addr[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return cidr;
}

bool Cidr::contains(const uint8_t* address, bool address_v6) const {
  if (v6 == address_v6) return prefix_equal(addr, address, prefix);
  if (!v6) {
    // An IPv4 network and an IPv6 address: only an IPv4-mapped one (::ffff:a.b.c.d),
    // as a dual-stack socket reports IPv4 clients, can match.
    if (std::memcmp(address, kV4MappedPrefix, sizeof kV4MappedPrefix) != 0) return false;
    return prefix_equal(addr, address + sizeof kV4MappedPrefix, prefix);
  }
  // An IPv6 network and an IPv4 address: compare as its IPv4-mapped form, so that
  // ::ffff:0:0/96 (or a narrower mapped network) admits IPv4 clients.
  uint8_t mapped[16];
  std::memcpy(mapped, kV4MappedPrefix, sizeof kV4MappedPrefix);
  std::memcpy(mapped + sizeof kV4MappedPrefix, address, 4);
  return prefix_equal(addr, mapped, prefix);
}

}  // namespace wirepool::config
