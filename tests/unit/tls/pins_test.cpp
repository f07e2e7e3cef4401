// Backend public-key pins (ClientContext::check_pins, pin_matches):
//  - no pins configured: any verified server passes;
//  - the server's public-key SHA-256 among the pins passes (also written upper-case with colons);
//  - a wrong pin fails with "server public key sha256 <hex> matches none of tls.pin_sha256";
//  - pin_matches ignores case and colons, and an empty hash matches nothing.

#include <gtest/gtest.h>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::Handshake;
using test::TempDir;

class Pins : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = test::generate_pair(dir_, "server");
    std::string error;
    server_ = ServerContext::create(test::tls_config(pair_), kAlpnTds, &error);
    ASSERT_TRUE(server_) << error;
    spki_ = server_->fingerprints().public_key;
  }

  /// Connects with `pins` and answers check_pins(); the handshake itself must succeed.
  bool connect_with(std::vector<std::string> pins, std::string* error) {
    ClientContextPtr client = ClientContext::create(pair_.cert, std::move(pins), error);
    EXPECT_TRUE(client) << *error;
    if (!client) return false;
    Handshake h;
    test::drive(*server_, test::client_ssl(*client, "localhost"), &h);
    EXPECT_TRUE(h.ok()) << h.client_error;
    return client->check_pins(h.client, error);
  }

  TempDir dir_;
  test::Pair pair_;
  ServerContextPtr server_;
  std::string spki_;
};

TEST_F(Pins, NoPinsAcceptAnyVerifiedServer) {
  std::string error;
  EXPECT_TRUE(connect_with({}, &error)) << error;
}

TEST_F(Pins, TheServersPublicKeyPinPasses) {
  std::string error;
  EXPECT_TRUE(connect_with({std::string(64, '0'), spki_}, &error)) << error;
}

TEST_F(Pins, APinWrittenUpperCaseWithColonsPasses) {
  std::string written;
  for (size_t i = 0; i < spki_.size(); i += 2) {
    if (i > 0) written += ':';
    written += static_cast<char>(std::toupper(spki_[i]));
    written += static_cast<char>(std::toupper(spki_[i + 1]));
  }
  std::string error;
  EXPECT_TRUE(connect_with({written}, &error)) << error;
}

TEST_F(Pins, AWrongPinFailsNamingTheServersKeyHash) {
  const test::Pair other = test::generate_pair(dir_, "other");
  std::string error;
  const std::string other_pin = fingerprints_of_file(other.cert, &error)->public_key;
  EXPECT_FALSE(connect_with({other_pin}, &error));
  EXPECT_EQ(error, "server public key sha256 " + spki_ + " matches none of tls.pin_sha256");
}

TEST_F(Pins, TheCertificateFingerprintIsNotAPublicKeyPin) {
  std::string error;
  EXPECT_FALSE(connect_with({server_->fingerprints().certificate}, &error));
}

TEST(PinMatches, IgnoresCaseAndColonsAndMatchesNothingWhenEmpty) {
  const std::vector<std::string> pins = {"ab:CD:01", "ffee"};
  EXPECT_TRUE(ClientContext::pin_matches("abcd01", pins));
  EXPECT_TRUE(ClientContext::pin_matches("AB:cd:01", pins));
  EXPECT_TRUE(ClientContext::pin_matches("FFEE", pins));
  EXPECT_FALSE(ClientContext::pin_matches("abcd02", pins));
  EXPECT_FALSE(ClientContext::pin_matches("abcd0", pins));
  EXPECT_FALSE(ClientContext::pin_matches("", pins));
  EXPECT_FALSE(ClientContext::pin_matches("", {""}));
  EXPECT_FALSE(ClientContext::pin_matches("abcd01", {}));
}

}  // namespace
}  // namespace wirepool::tls
