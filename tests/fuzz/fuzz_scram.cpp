// libFuzzer target for the SCRAM-SHA-256 server side (protocol/pg/scram).
//
// The input is split at the first NUL into a client-first and a client-final
// message (the rest of the input after a second NUL, if any, is fed to
// parse_verifier and base64_decode). Both mechanisms are tried, with and
// without channel-binding data, against a real verifier and a fake one.
//
// Checked: nothing crashes or reads out of bounds (sanitizers); an exchange
// whose first step failed never succeeds later; success needs a proof, which
// random bytes cannot forge: any success aborts; base64 round-trips.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/pg/scram.hpp"

namespace {

using namespace wirepool::pg::scram;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_scram: postcondition violated: %s\n", what);
  std::abort();
}

const Verifier& real_verifier() {
  // Few iterations: the fuzzer should spend its time in the parsers.
  static const Verifier v = make_verifier("pencil", "0123456789abcdef", 16);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t a = in.find('\0');
  std::string_view first = in.substr(0, a);
  std::string_view rest = a == std::string_view::npos ? std::string_view() : in.substr(a + 1);
  size_t b = rest.find('\0');
  std::string_view final_msg = rest.substr(0, b);
  std::string_view tail = b == std::string_view::npos ? std::string_view() : rest.substr(b + 1);

  static const uint8_t secret[32] = {1, 2, 3};
  for (int variant = 0; variant < 4; ++variant) {
    Verifier v = variant % 2 ? real_verifier() : fake_verifier("someone", secret);
    std::string binding = variant >= 2 ? std::string(32, '\x5a') : std::string();
    ServerExchange x(v, binding, "fixed-server-nonce");
    auto mech = variant >= 2 ? kMechanismPlus : kMechanism;
    auto r1 = x.client_first(mech, first);
    auto r2 = x.client_final(final_msg);
    if (r1.outcome != ServerExchange::Outcome::next &&
        r2.outcome == ServerExchange::Outcome::success) {
      fail("success after a failed first step");
    }
    if (r2.outcome == ServerExchange::Outcome::success) fail("random input forged a proof");
  }
  (void)parse_verifier(tail);
  if (auto decoded = base64_decode(tail)) {
    if (base64_decode(base64_encode(*decoded)) != decoded) fail("base64 round trip");
  }
  return 0;
}
