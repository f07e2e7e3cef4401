// The value syntaxes of the configuration, as tables, bounds included:
//  - parse_duration: ms/s/m/h/d, a bare 0, int64-millisecond overflow, and what is refused
//    (no unit, signs, spaces, fractions, compound or unknown units);
//  - parse_size: plain bytes, B, kB/KB (1000), KiB, MB, MiB, GB, GiB, uint64 overflow,
//    wrong case, fractions and unknown units refused;
//  - normalize_pin: 64 hex digits, colons all or none, normalised to lower case;
//  - parse_cidr: IPv4 and IPv6, a bare address is /32 or /128, host bits masked,
//    malformed prefixes and addresses refused;
//  - Cidr::contains: IPv4, IPv6, and IPv4-mapped IPv6 addresses against IPv4 networks
//    (and IPv4 addresses against IPv4-mapped IPv6 networks).

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace wirepool::config {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsEachUnitAndBareZero) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"0", 0},
      {"0s", 0},
      {"0ms", 0},
      {"00", 0},
      {"1ms", 1},
      {"250ms", 250},
      {"5s", 5'000},
      {"10m", 600'000},
      {"1h", 3'600'000},
      {"1d", 86'400'000},
      {"30d", 2'592'000'000},
      {"9223372036854775807ms", std::numeric_limits<int64_t>::max()},
      {"106751991167d", 106751991167LL * 86'400'000},  // the largest whole number of days
  };
  for (const auto& [text, ms] : cases) {
    auto d = parse_duration(text);
    ASSERT_TRUE(d.has_value()) << text;
    EXPECT_EQ(*d, milliseconds(ms)) << text;
  }
}

TEST(ParseDuration, RefusesMissingUnitsSignsSpacesFractionsAndOverflow) {
  for (const char* text : {"",
                           "s",
                           "ms",
                           "5",
                           "30",
                           "-5s",
                           "+5s",
                           "-0",
                           " 5s",
                           "5s ",
                           "5 s",
                           "5S",
                           "5Ms",
                           "1.5s",
                           "5sec",
                           "5us",
                           "1w",
                           "1h30m",
                           "0x10s",
                           "5s5",
                           "9223372036854775808ms",
                           "106751991168d",
                           "99999999999999999999s"}) {
    EXPECT_FALSE(parse_duration(text).has_value()) << '"' << text << '"';
  }
}

TEST(ParseSize, AcceptsBytesAndEachUnit) {
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"0", 0},
      {"512", 512},
      {"512B", 512},
      {"10kB", 10'000},
      {"10KB", 10'000},
      {"64KiB", 64ull << 10},
      {"1MB", 1'000'000},
      {"64MiB", 64ull << 20},
      {"1GB", 1'000'000'000},
      {"1GiB", 1ull << 30},
      {"18446744073709551615", std::numeric_limits<uint64_t>::max()},
      {"17179869183GiB", 17179869183ull << 30},  // the largest whole number of GiB
  };
  for (const auto& [text, bytes] : cases) {
    auto n = parse_size(text);
    ASSERT_TRUE(n.has_value()) << text;
    EXPECT_EQ(*n, bytes) << text;
  }
}

TEST(ParseSize, RefusesWrongCaseNegativesFractionsUnknownUnitsAndOverflow) {
  for (const char* text : {"",
                           "B",
                           "MiB",
                           "-1",
                           "+1",
                           "1b",
                           "1kb",
                           "1kib",
                           "1mib",
                           "1Mb",
                           "1 MiB",
                           " 1MiB",
                           "1MiB ",
                           "1.5MiB",
                           "1TB",
                           "1TiB",
                           "1K",
                           "1M",
                           "1KiBB",
                           "18446744073709551616",
                           "17179869184GiB",
                           "18446744073709551615KB"}) {
    EXPECT_FALSE(parse_size(text).has_value()) << '"' << text << '"';
  }
}

constexpr const char* kPin = "64f46a7526a186d2346552453ae478ca51244674f5b21ba150bd483b39f7c812";

TEST(NormalizePin, AcceptsHexWithOrWithoutColonsAndLowersCase) {
  EXPECT_EQ(normalize_pin(kPin), kPin);
  EXPECT_EQ(normalize_pin("64F46A7526A186D2346552453AE478CA51244674F5B21BA150BD483B39F7C812"),
            kPin);
  EXPECT_EQ(normalize_pin("64:F4:6A:75:26:A1:86:D2:34:65:52:45:3A:E4:78:CA:"
                          "51:24:46:74:F5:B2:1B:A1:50:BD:48:3B:39:F7:C8:12"),
            kPin);
  EXPECT_EQ(normalize_pin("64:f4:6a:75:26:a1:86:d2:34:65:52:45:3a:e4:78:ca:"
                          "51:24:46:74:f5:b2:1b:a1:50:bd:48:3b:39:f7:c8:12"),
            kPin);
}

TEST(NormalizePin, RefusesWrongLengthNonHexAndPartialColons) {
  const std::string pin = kPin;
  const std::vector<std::string> bad = {
      "",
      pin.substr(0, 63),                         // 63 digits
      pin + "0",                                 // 65 digits
      pin.substr(0, 62),                         // 31 bytes
      "g" + pin.substr(1),                       // not hex
      "64:f4" + pin.substr(4),                   // colons in only some places
      ":" + pin.substr(1),                       // leading colon
      "64f4:6a75:2" + std::string(83, '0'),      // colons between pairs of bytes
      pin.substr(0, 32) + " " + pin.substr(33),  // a space
      "64:f4:6a:75:26:a1:86:d2:34:65:52:45:3a:e4:78:ca:"
      "51:24:46:74:f5:b2:1b:a1:50:bd:48:3b:39:f7:c8:12:",  // trailing colon
      "64:f4:6a:75:26:a1:86:d2:34:65:52:45:3a:e4:78:ca:"
      "51:24:46:74:f5:b2:1b:a1:50:bd:48:3b:39:f7:c8",  // 31 bytes with colons
  };
  for (const auto& text : bad)
    EXPECT_FALSE(normalize_pin(text).has_value()) << text;
}

std::vector<uint8_t> v4(const char* s) {
  std::vector<uint8_t> out(4);
  EXPECT_EQ(inet_pton(AF_INET, s, out.data()), 1) << s;
  return out;
}

std::vector<uint8_t> v6(const char* s) {
  std::vector<uint8_t> out(16);
  EXPECT_EQ(inet_pton(AF_INET6, s, out.data()), 1) << s;
  return out;
}

TEST(ParseCidr, ReadsIpv4AndIpv6WithBareAddressesAsHosts) {
  struct Case {
    const char* text;
    bool v6;
    int prefix;
    std::vector<uint8_t> network;
  };
  const std::vector<Case> cases = {
      {"127.0.0.0/8", false, 8, v4("127.0.0.0")},
      {"10.1.2.3", false, 32, v4("10.1.2.3")},
      {"10.1.2.3/32", false, 32, v4("10.1.2.3")},
      {"0.0.0.0/0", false, 0, v4("0.0.0.0")},
      {"10.1.2.3/8", false, 8, v4("10.0.0.0")},  // host bits dropped
      {"192.168.255.255/23", false, 23, v4("192.168.254.0")},
      {"::1/128", true, 128, v6("::1")},
      {"::1", true, 128, v6("::1")},
      {"::/0", true, 0, v6("::")},
      {"fe80::1/10", true, 10, v6("fe80::")},
      {"2001:db8::/32", true, 32, v6("2001:db8::")},
      {"::ffff:10.0.0.0/104", true, 104, v6("::ffff:10.0.0.0")},
  };
  for (const auto& c : cases) {
    auto cidr = parse_cidr(c.text);
    ASSERT_TRUE(cidr.has_value()) << c.text;
    EXPECT_EQ(cidr->text, c.text);
    EXPECT_EQ(cidr->v6, c.v6) << c.text;
    EXPECT_EQ(cidr->prefix, c.prefix) << c.text;
    EXPECT_EQ(std::vector<uint8_t>(cidr->addr, cidr->addr + c.network.size()), c.network) << c.text;
  }
}

TEST(ParseCidr, RefusesMalformedAddressesAndPrefixes) {
  for (const char* text :
       {"", "/8", "10.0.0.0/", "10.0.0.0/33", "::1/129", "10.0.0.0/-1", "10.0.0.0/+8",
        "10.0.0.0/ 8", "10.0.0.0/8/8", "10.0.0.0/0008", "10.0.0/8", "10.0.0.256", "01.2.3.4",
        "localhost", "fe80::1%eth0", ":::1", " 10.0.0.0/8", "10.0.0.0/8 ", "10.0.0.0/x"}) {
    EXPECT_FALSE(parse_cidr(text).has_value()) << '"' << text << '"';
  }
}

bool contains(const char* network, const std::vector<uint8_t>& address) {
  auto cidr = parse_cidr(network);
  EXPECT_TRUE(cidr.has_value()) << network;
  return cidr && cidr->contains(address.data(), address.size() == 16);
}

TEST(CidrContains, Ipv4NetworksMatchIpv4AddressesInsideThePrefix) {
  EXPECT_TRUE(contains("127.0.0.0/8", v4("127.0.0.1")));
  EXPECT_TRUE(contains("127.0.0.0/8", v4("127.255.255.255")));
  EXPECT_FALSE(contains("127.0.0.0/8", v4("128.0.0.0")));
  EXPECT_FALSE(contains("127.0.0.0/8", v4("126.255.255.255")));
  EXPECT_TRUE(contains("192.168.254.0/23", v4("192.168.255.1")));
  EXPECT_FALSE(contains("192.168.254.0/23", v4("192.168.253.255")));
  EXPECT_TRUE(contains("10.1.2.3", v4("10.1.2.3")));
  EXPECT_FALSE(contains("10.1.2.3", v4("10.1.2.4")));
  EXPECT_TRUE(contains("0.0.0.0/0", v4("203.0.113.9")));
}

TEST(CidrContains, Ipv6NetworksMatchIpv6AddressesInsideThePrefix) {
  EXPECT_TRUE(contains("::1/128", v6("::1")));
  EXPECT_FALSE(contains("::1/128", v6("::2")));
  EXPECT_TRUE(contains("fe80::/10", v6("fe80::1")));
  EXPECT_TRUE(contains("fe80::/10", v6("febf:ffff::1")));
  EXPECT_FALSE(contains("fe80::/10", v6("fec0::1")));
  EXPECT_TRUE(contains("2001:db8::/32", v6("2001:db8:ffff::1")));
  EXPECT_FALSE(contains("2001:db8::/32", v6("2001:db9::1")));
  EXPECT_TRUE(contains("::/0", v6("2001:db8::1")));
}

TEST(CidrContains, Ipv4MappedIpv6AddressesMatchIpv4Networks) {
  EXPECT_TRUE(contains("127.0.0.0/8", v6("::ffff:127.0.0.1")));
  EXPECT_TRUE(contains("10.1.2.3", v6("::ffff:10.1.2.3")));
  EXPECT_FALSE(contains("127.0.0.0/8", v6("::ffff:128.0.0.1")));
  EXPECT_TRUE(contains("0.0.0.0/0", v6("::ffff:203.0.113.9")));
  // Only the ::ffff:0:0/96 form is IPv4: not ::1, not IPv4-compatible ::a.b.c.d, not NAT64.
  EXPECT_FALSE(contains("0.0.0.0/0", v6("::1")));
  EXPECT_FALSE(contains("127.0.0.0/8", v6("::127.0.0.1")));
  EXPECT_FALSE(contains("127.0.0.0/8", v6("64:ff9b::127.0.0.1")));
  EXPECT_FALSE(contains("127.0.0.0/8", v6("::fffe:127.0.0.1")));
}

TEST(CidrContains, Ipv4AddressesMatchIpv6NetworksAsTheirMappedForm) {
  EXPECT_TRUE(contains("::ffff:0:0/96", v4("10.0.0.1")));
  EXPECT_TRUE(contains("::ffff:10.0.0.0/104", v4("10.200.0.1")));
  EXPECT_FALSE(contains("::ffff:10.0.0.0/104", v4("11.0.0.1")));
  EXPECT_FALSE(contains("::1/128", v4("127.0.0.1")));
  EXPECT_FALSE(contains("2001:db8::/32", v4("10.0.0.1")));
}

}  // namespace
}  // namespace wirepool::config
