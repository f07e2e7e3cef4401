// Client certificates on a server context (requested, never required, never fatal):
//  - no client certificate: the handshake succeeds and peer_certificate() reports none;
//  - a self-signed client certificate is accepted; peer_certificate() reports its public-key
//    pin and CN, chain_verified false (with and without a client_ca);
//  - a certificate signed by the configured client_ca reports chain_verified true and its CN;
//  - one signed by another CA reports chain_verified false;
//  - with neither a client_ca nor any user's pins, no certificate is requested: a client
//    holding one does not send it.

#include <gtest/gtest.h>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::Handshake;
using test::TempDir;

class ClientCertificate : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = test::generate_pair(dir_, "server");
    ca_key_ = test::make_ec_key();
    ca_ = test::make_cert("wirepool test CA", ca_key_.get(), nullptr, nullptr, true, EVP_sha256());
    test::write_cert(dir_.path("ca.crt"), ca_.get());
    std::string error;
    ClientContextPtr client = ClientContext::create(pair_.cert, {}, &error);
    ASSERT_TRUE(client) << error;
    client_ = client;
  }

  ServerContextPtr server(const std::string& client_ca) {
    std::string error;
    ServerContextPtr s =
        ServerContext::create(test::tls_config(pair_, client_ca), kAlpnPostgresql, &error);
    EXPECT_TRUE(s) << error;
    return s;
  }

  /// Handshakes presenting `cert`/`key` (null: no client certificate).
  PeerCertificate connect(const ServerContext& server, X509* cert, EVP_PKEY* key) {
    SSL* ssl = test::client_ssl(*client_, "localhost");
    if (cert != nullptr) {
      EXPECT_EQ(SSL_use_certificate(ssl, cert), 1);
      EXPECT_EQ(SSL_use_PrivateKey(ssl, key), 1);
    }
    Handshake h;
    test::drive(server, ssl, &h);
    EXPECT_TRUE(h.ok()) << h.server_error << h.client_error;
    EXPECT_TRUE(h.echo("x"));
    return peer_certificate(h.server);
  }

  TempDir dir_;
  test::Pair pair_;
  test::PkeyPtr ca_key_;
  test::X509Ptr ca_;
  ClientContextPtr client_;
};

TEST_F(ClientCertificate, NoCertificateIsAcceptedAndReportedAbsent) {
  ServerContextPtr s = server(dir_.path("ca.crt"));
  ASSERT_TRUE(s);
  const PeerCertificate peer = connect(*s, nullptr, nullptr);
  EXPECT_FALSE(peer.present);
  EXPECT_FALSE(peer.chain_verified);
  EXPECT_EQ(peer.public_key_sha256, "");
}

TEST_F(ClientCertificate, NothingToCheckItAgainstMeansNoCertificateRequest) {
  config::Tls tls = test::tls_config(pair_);
  tls.client_pins = false;
  std::string error;
  ServerContextPtr s = ServerContext::create(tls, kAlpnPostgresql, &error);
  ASSERT_TRUE(s) << error;
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert = test::make_cert("alice", key.get(), nullptr, nullptr, false, EVP_sha256());
  EXPECT_FALSE(connect(*s, cert.get(), key.get()).present);
}

TEST_F(ClientCertificate, SelfSignedCertificateIsAcceptedWithItsPinAndUnverifiedChain) {
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert = test::make_cert("alice", key.get(), nullptr, nullptr, false, EVP_sha256());
  for (const std::string& client_ca : {std::string(), dir_.path("ca.crt")}) {
    SCOPED_TRACE(client_ca);
    ServerContextPtr s = server(client_ca);
    ASSERT_TRUE(s);
    const PeerCertificate peer = connect(*s, cert.get(), key.get());
    EXPECT_TRUE(peer.present);
    EXPECT_EQ(peer.public_key_sha256, public_key_sha256(cert.get()));
    EXPECT_EQ(peer.public_key_sha256.size(), 64u);
    EXPECT_FALSE(peer.chain_verified);
    EXPECT_EQ(peer.common_name, "alice");
  }
}

TEST_F(ClientCertificate, CertificateSignedByClientCaIsVerifiedAndNamed) {
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert =
      test::make_cert("bob", key.get(), ca_.get(), ca_key_.get(), false, EVP_sha256());
  ServerContextPtr s = server(dir_.path("ca.crt"));
  ASSERT_TRUE(s);
  const PeerCertificate peer = connect(*s, cert.get(), key.get());
  EXPECT_TRUE(peer.present);
  EXPECT_TRUE(peer.chain_verified);
  EXPECT_EQ(peer.common_name, "bob");
  EXPECT_EQ(peer.public_key_sha256, public_key_sha256(cert.get()));
}

TEST_F(ClientCertificate, CertificateSignedByAnotherCaIsNotVerified) {
  test::PkeyPtr other_ca_key = test::make_ec_key();
  test::X509Ptr other_ca =
      test::make_cert("wirepool test CA", other_ca_key.get(), nullptr, nullptr, true, EVP_sha256());
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert = test::make_cert("mallory", key.get(), other_ca.get(), other_ca_key.get(),
                                       false, EVP_sha256());
  ServerContextPtr s = server(dir_.path("ca.crt"));
  ASSERT_TRUE(s);
  const PeerCertificate peer = connect(*s, cert.get(), key.get());
  EXPECT_TRUE(peer.present);
  EXPECT_FALSE(peer.chain_verified);
  EXPECT_EQ(peer.common_name, "mallory");
}

TEST_F(ClientCertificate, CaSignedCertificateWithoutClientCaIsNotVerified) {
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert =
      test::make_cert("bob", key.get(), ca_.get(), ca_key_.get(), false, EVP_sha256());
  ServerContextPtr s = server("");
  ASSERT_TRUE(s);
  const PeerCertificate peer = connect(*s, cert.get(), key.get());
  EXPECT_TRUE(peer.present);
  EXPECT_FALSE(peer.chain_verified);
}

}  // namespace
}  // namespace wirepool::tls
