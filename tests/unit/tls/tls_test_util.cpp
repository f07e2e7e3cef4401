// Helpers of the tls unit tests (see tls_test_util.hpp).

#include "tests/unit/tls/tls_test_util.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace wirepool::tls::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/wirepool-tls-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  dir_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Pair generate_pair(const TempDir& dir, const std::string& stem) {
  Pair p{dir.path(stem + ".crt"), dir.path(stem + ".key")};
  std::string error;
  EXPECT_TRUE(generate_self_signed(p.cert, p.key, &error)) << error;
  return p;
}

config::Tls tls_config(const Pair& pair, const std::string& client_ca) {
  config::Tls t;
  t.certificate = pair.cert;
  t.key = pair.key;
  t.client_ca = client_ca;
  t.present = true;
  t.client_pins = true;
  return t;
}

PkeyPtr make_ec_key() {
  return PkeyPtr(EVP_EC_gen("P-256"));
}

X509Ptr make_cert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool ca,
                  const EVP_MD* md, const std::string& san) {
  static long serial = 1;
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer)
                                                     : X509_get_subject_name(cert.get()));
  X509_set_pubkey(cert.get(), key);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    EXPECT_NE(ext, nullptr) << value;
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  if (ca) add(NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign");
  add(NID_subject_key_identifier, "hash");
  if (!san.empty()) add(NID_subject_alt_name, san);
  EXPECT_GT(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, md), 0);
  return cert;
}

void write_cert(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  EXPECT_EQ(PEM_write_X509(f, cert), 1);
  std::fclose(f);
}

void write_key(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  EXPECT_EQ(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(f);
}

X509Ptr read_cert(const std::string& path) {
  std::string error;
  X509Ptr cert = detail::read_certificate(path, &error);
  EXPECT_TRUE(cert) << error;
  return cert;
}

std::string run(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  return ::pclose(p) == 0 ? out : std::string();
}

Handshake::~Handshake() {
  SSL_free(server);
  SSL_free(client);
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

namespace {

/// One step of a side: true while it still needs to run.
bool step(SSL* ssl, bool* done, bool* failed, std::string* error) {
  if (*done || *failed) return false;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl);
  if (r == 1) {
    *done = true;
    return false;
  }
  const int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
  *failed = true;
  *error = last_error(ssl);
  return false;
}

/// SSL_read until `want` bytes arrived or nothing more comes.
std::string read_some(SSL* ssl, size_t want, SSL* other) {
  std::string got;
  for (int i = 0; i < 200 && got.size() < want; ++i) {
    char buf[256];
    const int n = SSL_read(ssl, buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    const int e = SSL_get_error(ssl, n);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) break;
    // Let the peer process what it owes (a TLS 1.3 server reads the client's Finished lazily).
    char none[1];
    (void)SSL_read(other, none, 0);
  }
  return got;
}

}  // namespace

bool Handshake::echo(const std::string& text) {
  if (SSL_write(client, text.data(), static_cast<int>(text.size())) !=
      static_cast<int>(text.size())) {
    return false;
  }
  if (read_some(server, text.size(), client) != text) return false;
  if (SSL_write(server, text.data(), static_cast<int>(text.size())) !=
      static_cast<int>(text.size())) {
    return false;
  }
  return read_some(client, text.size(), server) == text;
}

void drive(const ServerContext& server, SSL* client, Handshake* out) {
  out->client = client;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, out->fds), 0);
  out->server = new_server_ssl(server, out->fds[0]);
  ASSERT_NE(out->server, nullptr) << last_error();
  ASSERT_EQ(SSL_set_fd(client, out->fds[1]), 1);
  bool server_failed = false;
  bool client_failed = false;
  // Alternate the two sides until both finished; a side that failed sent its alert, so
  // the other gets a few more turns to read it, then the loop stops.
  int after_failure = 0;
  for (int i = 0; i < 1000 && after_failure < 10; ++i) {
    const bool s = step(out->server, &out->server_ok, &server_failed, &out->server_error);
    const bool c = step(client, &out->client_ok, &client_failed, &out->client_error);
    if (!s && !c) break;
    if (server_failed || client_failed) ++after_failure;
  }
}

SSL* client_ssl(const ClientContext& context, const std::string& host) {
  SSL* ssl = SSL_new(context.native());
  EXPECT_NE(ssl, nullptr);
  std::string error;
  EXPECT_TRUE(context.prepare(ssl, host, &error)) << error;
  return ssl;
}

}  // namespace wirepool::tls::test
