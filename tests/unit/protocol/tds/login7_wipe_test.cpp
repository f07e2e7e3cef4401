// The LOGIN7 password leaves no copy in freed memory: every heap block freed
// while decode_login7 and encode_login7 run, and while a server's message
// assembler takes the LOGIN7 packets in small pieces and is then freed, is
// scanned (this binary replaces the global operator delete) for the password
// in UTF-8, in UCS-2 and in its obfuscated UCS-2 form.

// The replacements below pair malloc with free; GCC cannot see that through
// std::allocator's inlined calls.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <gtest/gtest.h>
#include <malloc.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "tds_test_util.hpp"

namespace {

std::atomic<bool> g_armed{false};
std::vector<std::string>* g_needles = nullptr;  // set while armed
std::atomic<int> g_found{0};

void scan(void* p, size_t n) {
  if (!g_armed.load() || p == nullptr) return;
  g_armed = false;  // the scan itself must not recurse
  const auto* bytes = static_cast<const char*>(p);
  for (const std::string& needle : *g_needles) {
    if (n >= needle.size() &&
        std::search(bytes, bytes + n, needle.begin(), needle.end()) != bytes + n) {
      ++g_found;
    }
  }
  g_armed = true;
}

void (*volatile g_release)(void*) = std::free;  // opaque to the mismatch warning

}  // namespace

void* operator new(size_t n) {
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p) scan(p, malloc_usable_size(p));
  g_release(p);
}
void operator delete(void* p, size_t n) noexcept {
  scan(p, n);
  g_release(p);
}

namespace wirepool::tds {
namespace {

using test::bytes_of;

std::string ucs2(const std::string& ascii) {
  std::string out;
  for (char c : ascii) {
    out.push_back(c);
    out.push_back('\0');
  }
  return out;
}

TEST(Login7Wipe, NoFreedBufferHoldsThePassword) {
  const std::string secret = "Wipe-Me-Secret-77-long-enough";
  std::vector<std::string> needles = {secret, ucs2(secret), obfuscate_password(ucs2(secret))};
  Login7 l;
  l.user_name = "app";
  l.password = secret;
  l.database = "demo";
  l.features = {{feature::kUtf8Support, ""}};
  std::string out;
  g_needles = &needles;
  g_found = 0;
  g_armed = true;
  encode_login7(out, l);
  g_armed = false;
  EXPECT_EQ(g_found.load(), 0) << "encode_login7 freed a copy of the password";
  g_found = 0;
  g_armed = true;
  {
    auto d = decode_login7(bytes_of(out));
    g_armed = false;
    ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
    EXPECT_EQ(d.message.password, secret);
    OPENSSL_cleanse(d.message.password.data(), d.message.password.size());
  }
  EXPECT_EQ(g_found.load(), 0) << "decode_login7 freed a copy of the password";
  g_needles = nullptr;
}

TEST(Login7Wipe, TheAssemblerFreesNoCopyOfThePassword) {
  const std::string secret = "Assembler-Secret-91-long-enough";
  std::vector<std::string> needles = {obfuscate_password(ucs2(secret))};
  Login7 l;
  l.user_name = "app";
  l.password = secret;
  l.database = std::string(600, 'd');  // the message spans two 512-byte packets
  std::string payload;
  encode_login7(payload, l);
  PacketWriter w;
  w.set_packet_size(512);
  std::string wire;
  w.write(wire, PacketType::login7, payload);
  OPENSSL_cleanse(payload.data(), payload.size());
  g_needles = &needles;
  g_found = 0;
  g_armed = true;
  {
    MessageAssembler a(AssemblerLimits{kMaxLoginMessage, false});
    Message m;
    std::string error;
    DecodeStatus st = DecodeStatus::need_more;
    for (size_t at = 0; at < wire.size() && st == DecodeStatus::need_more; at += 97) {
      a.feed(std::string_view(wire).substr(at, 97));
      st = a.next(m, error);
    }
    ASSERT_EQ(st, DecodeStatus::ok) << error;
    OPENSSL_cleanse(m.payload.data(), m.payload.size());
    a.shrink();
  }
  g_armed = false;
  OPENSSL_cleanse(wire.data(), wire.size());
  EXPECT_EQ(g_found.load(), 0) << "the assembler freed a copy of the password";
  g_needles = nullptr;
}

}  // namespace
}  // namespace wirepool::tds
