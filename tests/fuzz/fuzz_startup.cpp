// libFuzzer target for the first bytes of a PostgreSQL connection:
// decode_startup (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest).
//
// Checked: no crash or out-of-bounds read (sanitizers); consumed <= size and
// > 0 exactly when ok; every proper prefix of an accepted packet answers
// need_more; a length field below 8 or above the limit is an error as soon as
// the 4-byte length is there; decoding is deterministic; the startup
// parameters of an accepted packet are NUL-free and the lookup agrees with them.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "protocol/pg/codec.hpp"

namespace {

using namespace wirepool::pg;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_startup: postcondition violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  auto d = decode_startup(in);
  if (d.consumed > size) fail("consumed beyond the input");
  if ((d.status == DecodeStatus::ok) != (d.consumed > 0)) fail("consumed vs status");
  if (size >= 4) {
    uint32_t len =
        (uint32_t(data[0]) << 24) | (uint32_t(data[1]) << 16) | (uint32_t(data[2]) << 8) | data[3];
    if ((len < 8 || len > kMaxStartupPacket) && d.status != DecodeStatus::error) {
      fail("an out-of-bounds length was not refused at once");
    }
  }
  auto again = decode_startup(in);
  if (again.status != d.status || again.consumed != d.consumed) fail("not deterministic");
  if (d.status == DecodeStatus::ok) {
    for (size_t n = 0; n < d.consumed; ++n) {
      if (decode_startup(Bytes(data, n)).status != DecodeStatus::need_more) {
        fail("a prefix of an accepted packet did not answer need_more");
      }
    }
    if (auto* sm = std::get_if<StartupMessage>(&d.message)) {
      for (const auto& [k, v] : sm->params) {
        if (k.find('\0') != std::string_view::npos || v.find('\0') != std::string_view::npos) {
          fail("a parameter holds a NUL");
        }
        auto found = sm->get(k);
        if (!found) fail("get() misses a parameter that is there");
      }
    }
  }
  return 0;
}
