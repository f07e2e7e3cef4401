// ServerContext and ClientContext over an in-memory handshake (non-blocking socketpair):
//  - a ClientContext trusting the generated certificate connects at TLS 1.3 for
//    localhost, 127.0.0.1 and [::1], and data flows both ways;
//  - a wrong host name or address fails the client's verification;
//  - a client limited to TLS 1.2 is refused; a client trusting another CA refuses the server;
//  - only the configured ciphersuites are negotiated; no session ticket is issued;
//    SSL_MODE_RELEASE_BUFFERS is set;
//  - creation errors are clear: key not matching the certificate, missing files (named),
//    unknown or empty ciphersuite lists, a missing CA file;
//  - last_error() drains the queue and tls_version() reports the version.

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::Handshake;
using test::TempDir;

class HandshakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = test::generate_pair(dir_, "server");
    std::string error;
    server_ = ServerContext::create(test::tls_config(pair_), kAlpnPostgresql, &error);
    ASSERT_TRUE(server_) << error;
    client_ = ClientContext::create(pair_.cert, {}, &error);
    ASSERT_TRUE(client_) << error;
  }
  TempDir dir_;
  test::Pair pair_;
  ServerContextPtr server_;
  ClientContextPtr client_;
};

TEST_F(HandshakeTest, SucceedsAtTls13ForLocalhostAndLoopbackAddresses) {
  for (const char* host : {"localhost", "127.0.0.1", "::1", "[::1]"}) {
    SCOPED_TRACE(host);
    Handshake h;
    test::drive(*server_, test::client_ssl(*client_, host), &h);
    ASSERT_TRUE(h.ok()) << "server: " << h.server_error << " client: " << h.client_error;
    EXPECT_EQ(tls_version(h.server), "TLSv1.3");
    EXPECT_EQ(tls_version(h.client), "TLSv1.3");
    EXPECT_TRUE(h.echo("SELECT 1"));
    std::string error;
    EXPECT_TRUE(client_->check_pins(h.client, &error)) << error;
  }
}

TEST_F(HandshakeTest, SniIsSentForNamesOnly) {
  Handshake by_name;
  test::drive(*server_, test::client_ssl(*client_, "localhost"), &by_name);
  ASSERT_TRUE(by_name.ok());
  const char* sni = SSL_get_servername(by_name.server, TLSEXT_NAMETYPE_host_name);
  EXPECT_STREQ(sni, "localhost");
  Handshake by_ip;
  test::drive(*server_, test::client_ssl(*client_, "127.0.0.1"), &by_ip);
  ASSERT_TRUE(by_ip.ok());
  EXPECT_EQ(SSL_get_servername(by_ip.server, TLSEXT_NAMETYPE_host_name), nullptr);
}

TEST_F(HandshakeTest, WrongHostNameFailsVerification) {
  Handshake h;
  test::drive(*server_, test::client_ssl(*client_, "db.example.com"), &h);
  EXPECT_FALSE(h.client_ok);
  EXPECT_FALSE(h.server_ok);
  EXPECT_NE(h.client_error.find("certificate verify failed"), std::string::npos) << h.client_error;
  EXPECT_NE(h.client_error.find("hostname mismatch"), std::string::npos) << h.client_error;
}

TEST_F(HandshakeTest, WrongIpAddressFailsVerification) {
  Handshake h;
  test::drive(*server_, test::client_ssl(*client_, "127.0.0.2"), &h);
  EXPECT_FALSE(h.client_ok);
  EXPECT_NE(h.client_error.find("IP address mismatch"), std::string::npos) << h.client_error;
}

TEST_F(HandshakeTest, ClientLimitedToTls12IsRefused) {
  test::SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL* ssl = SSL_new(ctx.get());
  SSL_set_connect_state(ssl);
  Handshake h;
  test::drive(*server_, ssl, &h);
  EXPECT_FALSE(h.server_ok);
  EXPECT_FALSE(h.client_ok);
  EXPECT_NE(h.server_error.find("unsupported protocol"), std::string::npos) << h.server_error;
}

TEST_F(HandshakeTest, ClientTrustingAnotherCaRefusesTheServer) {
  const test::Pair other = test::generate_pair(dir_, "other");
  std::string error;
  ClientContextPtr wrong = ClientContext::create(other.cert, {}, &error);
  ASSERT_TRUE(wrong) << error;
  Handshake h;
  test::drive(*server_, test::client_ssl(*wrong, "localhost"), &h);
  EXPECT_FALSE(h.client_ok);
  EXPECT_NE(h.client_error.find("certificate verify failed"), std::string::npos) << h.client_error;
}

TEST_F(HandshakeTest, ClientContextTrustsOnlyTheCaFile) {
  // No system default paths: the store holds exactly the one certificate of the CA file.
  const test::Pair other = test::generate_pair(dir_, "other");
  std::string error;
  ClientContextPtr ctx = ClientContext::create(other.cert, {}, &error);
  ASSERT_TRUE(ctx) << error;
  X509_STORE* store = SSL_CTX_get_cert_store(ctx->native());
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(store);
  EXPECT_EQ(sk_X509_OBJECT_num(objects), 1);
}

TEST_F(HandshakeTest, OnlyConfiguredCiphersuitesAreNegotiated) {
  config::Tls tls = test::tls_config(pair_);
  tls.ciphersuites = "TLS_CHACHA20_POLY1305_SHA256";
  std::string error;
  ServerContextPtr chacha = ServerContext::create(tls, kAlpnPostgresql, &error);
  ASSERT_TRUE(chacha) << error;
  Handshake h;
  test::drive(*chacha, test::client_ssl(*client_, "localhost"), &h);
  ASSERT_TRUE(h.ok()) << h.server_error << h.client_error;
  EXPECT_STREQ(SSL_get_cipher_name(h.server), "TLS_CHACHA20_POLY1305_SHA256");

  // A client that supports none of them is refused.
  test::SslCtxPtr aes_only(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_ciphersuites(aes_only.get(), "TLS_AES_128_GCM_SHA256");
  SSL* ssl = SSL_new(aes_only.get());
  SSL_set_connect_state(ssl);
  Handshake refused;
  test::drive(*chacha, ssl, &refused);
  EXPECT_FALSE(refused.server_ok);
  EXPECT_NE(refused.server_error.find("no shared cipher"), std::string::npos)
      << refused.server_error;
}

TEST_F(HandshakeTest, NoSessionTicketIsIssuedAndBuffersAreReleased) {
  Handshake h;
  test::drive(*server_, test::client_ssl(*client_, "localhost"), &h);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h.echo("ping"));  // the client has read whatever followed the handshake
  SSL_SESSION* session = SSL_get0_session(h.client);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(SSL_SESSION_has_ticket(session), 0);
  EXPECT_EQ(SSL_SESSION_is_resumable(session), 0);
  EXPECT_NE(SSL_CTX_get_mode(server_->native()) & SSL_MODE_RELEASE_BUFFERS, 0u);
  EXPECT_NE(SSL_get_mode(h.server) & SSL_MODE_RELEASE_BUFFERS, 0u);
}

TEST_F(HandshakeTest, KeyNotMatchingTheCertificateIsAClearError) {
  const test::Pair other = test::generate_pair(dir_, "other");
  config::Tls tls = test::tls_config(pair_);
  tls.key = other.key;
  std::string error;
  EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
  EXPECT_EQ(
      error.rfind("tls.key " + other.key + " does not match tls.certificate " + pair_.cert, 0), 0u)
      << error;
  EXPECT_EQ(ERR_peek_error(), 0u) << "the error queue was drained";
}

TEST_F(HandshakeTest, MissingFilesAreNamedInTheError) {
  config::Tls tls = test::tls_config(pair_);
  tls.certificate = dir_.path("nope.crt");
  std::string error;
  EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
  EXPECT_EQ(error, "tls.certificate " + dir_.path("nope.crt") + ": No such file or directory");

  tls = test::tls_config(pair_);
  tls.key = dir_.path("nope.key");
  EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
  EXPECT_EQ(error, "tls.key " + dir_.path("nope.key") + ": No such file or directory");

  tls = test::tls_config(pair_, dir_.path("nope-ca.crt"));
  EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
  EXPECT_EQ(error, "tls.client_ca " + dir_.path("nope-ca.crt") + ": No such file or directory");

  EXPECT_FALSE(ClientContext::create(dir_.path("nope-ca.crt"), {}, &error));
  EXPECT_EQ(error, "tls.ca " + dir_.path("nope-ca.crt") + ": No such file or directory");
  EXPECT_FALSE(ClientContext::create("", {}, &error));
  EXPECT_NE(error.find("tls.ca is not set"), std::string::npos) << error;
}

TEST_F(HandshakeTest, AFileWithoutACertificateIsRefused) {
  config::Tls tls = test::tls_config(pair_);
  tls.certificate = pair_.key;  // a key where the certificate belongs
  std::string error;
  EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
  EXPECT_EQ(error.rfind("tls.certificate " + pair_.key + ": ", 0), 0u) << error;
  EXPECT_FALSE(ClientContext::create(pair_.key, {}, &error));
  EXPECT_EQ(error.rfind("tls.ca " + pair_.key + ": ", 0), 0u) << error;
}

TEST_F(HandshakeTest, InvalidCiphersuiteListsAreRefused) {
  for (const std::string list : {"TLS_AES_256_GCM_SHA384:TLS_NOT_A_SUITE",
                                 "ECDHE-RSA-AES128-GCM-SHA256", "", "TLS_AES_128_GCM_SHA256:"}) {
    SCOPED_TRACE(list);
    config::Tls tls = test::tls_config(pair_);
    tls.ciphersuites = list;
    std::string error;
    EXPECT_FALSE(ServerContext::create(tls, kAlpnPostgresql, &error));
    EXPECT_EQ(error.rfind("tls.ciphersuites \"" + list + "\": ", 0), 0u) << error;
  }
  config::Tls tls = test::tls_config(pair_);
  tls.ciphersuites = "TLS_AES_128_CCM_SHA256:TLS_AES_128_CCM_8_SHA256:TLS_AES_256_GCM_SHA384";
  std::string error;
  EXPECT_TRUE(ServerContext::create(tls, kAlpnPostgresql, &error)) << error;
}

TEST_F(HandshakeTest, ServerContextReportsItsCertificateFingerprints) {
  std::string error;
  const auto f = fingerprints_of_file(pair_.cert, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(server_->fingerprints().certificate, f->certificate);
  EXPECT_EQ(server_->fingerprints().public_key, f->public_key);
  EXPECT_EQ(server_->alpn(), "postgresql");
}

TEST(TlsHelpers, LastErrorDrainsTheQueueIntoOneLine) {
  ERR_clear_error();
  EXPECT_EQ(last_error(), "unknown TLS error");
  ERR_raise(ERR_LIB_SSL, SSL_R_NO_SHARED_CIPHER);
  ERR_raise_data(ERR_LIB_SYS, ENOENT, "calling fopen(%s)", "x");
  EXPECT_EQ(last_error(), "no shared cipher; No such file or directory (calling fopen(x))");
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(TlsHelpers, VersionIsUnknownBeforeTheHandshake) {
  test::SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  SSL* ssl = SSL_new(ctx.get());
  EXPECT_EQ(tls_version(ssl), "unknown");
  EXPECT_EQ(tls_version(nullptr), "unknown");
  SSL_free(ssl);
}

}  // namespace
}  // namespace wirepool::tls
