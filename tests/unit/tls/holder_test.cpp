// ServerContextHolder (reload):
//  - a reload swaps in the new certificate, keeping the listener's ALPN protocol;
//  - a failed reload (missing file, mismatched key) answers the error and keeps the old context;
//  - an SSL object made before a reload completes its handshake, with the old certificate and
//    ALPN, after the holder and every other owner dropped the old context.

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::Handshake;
using test::TempDir;

class Holder : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = test::generate_pair(dir_, "a");
    b_ = test::generate_pair(dir_, "b");
    std::string error;
    ServerContextPtr initial = ServerContext::create(test::tls_config(a_), kAlpnTds, &error);
    ASSERT_TRUE(initial) << error;
    holder_ = std::make_unique<ServerContextHolder>(std::move(initial));
    fp_a_ = *fingerprints_of_file(a_.cert, &error);
    fp_b_ = *fingerprints_of_file(b_.cert, &error);
  }
  TempDir dir_;
  test::Pair a_;
  test::Pair b_;
  Fingerprints fp_a_;
  Fingerprints fp_b_;
  std::unique_ptr<ServerContextHolder> holder_;
};

TEST_F(Holder, ReloadSwapsToTheNewCertificate) {
  const ServerContextPtr before = holder_->current();
  std::string error;
  ASSERT_TRUE(holder_->reload(test::tls_config(b_), &error)) << error;
  const ServerContextPtr after = holder_->current();
  EXPECT_NE(before, after);
  EXPECT_EQ(after->fingerprints().certificate, fp_b_.certificate);
  EXPECT_EQ(after->alpn(), "tds/8.0");
  EXPECT_EQ(before->fingerprints().certificate, fp_a_.certificate);

  // A new connection sees the new certificate.
  ClientContextPtr client = ClientContext::create(b_.cert, {}, &error);
  ASSERT_TRUE(client) << error;
  Handshake h;
  test::drive(*after, test::client_ssl(*client, "localhost"), &h);
  ASSERT_TRUE(h.ok()) << h.client_error;
  EXPECT_EQ(public_key_sha256(SSL_get0_peer_certificate(h.client)), fp_b_.public_key);
}

TEST_F(Holder, FailedReloadKeepsTheOldContext) {
  const ServerContextPtr before = holder_->current();
  config::Tls missing = test::tls_config(b_);
  missing.certificate = dir_.path("missing.crt");
  std::string error;
  EXPECT_FALSE(holder_->reload(missing, &error));
  EXPECT_EQ(error, "tls.certificate " + dir_.path("missing.crt") + ": No such file or directory");
  EXPECT_EQ(holder_->current(), before);

  config::Tls mismatched = test::tls_config(b_);
  mismatched.key = a_.key;
  EXPECT_FALSE(holder_->reload(mismatched, &error));
  EXPECT_NE(error.find("does not match"), std::string::npos) << error;
  EXPECT_EQ(holder_->current(), before);
  EXPECT_EQ(holder_->current()->fingerprints().certificate, fp_a_.certificate);
}

TEST_F(Holder, AConnectionStartedBeforeAReloadKeepsItsContext) {
  std::string error;
  ClientContextPtr client = ClientContext::create(a_.cert, {}, &error, kAlpnTds);
  ASSERT_TRUE(client) << error;
  // The server SSL object is made from the old context, then every owner but it lets go.
  Handshake h;
  h.client = test::client_ssl(*client, "localhost");
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, h.fds), 0);
  h.server = new_server_ssl(*holder_->current(), h.fds[0]);
  ASSERT_NE(h.server, nullptr);
  ASSERT_TRUE(holder_->reload(test::tls_config(b_), &error)) << error;
  ASSERT_EQ(SSL_set_fd(h.client, h.fds[1]), 1);
  bool server_done = false;
  bool client_done = false;
  for (int i = 0; i < 100 && !(server_done && client_done); ++i) {
    server_done = server_done || SSL_do_handshake(h.server) == 1;
    client_done = client_done || SSL_do_handshake(h.client) == 1;
  }
  ASSERT_TRUE(server_done && client_done) << last_error();
  EXPECT_EQ(selected_alpn(h.server), "tds/8.0");
  EXPECT_EQ(public_key_sha256(SSL_get0_peer_certificate(h.client)), fp_a_.public_key);
}

}  // namespace
}  // namespace wirepool::tls
