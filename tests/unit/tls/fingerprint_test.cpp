// Fingerprints and channel binding data:
//  - fingerprints of a generated certificate equal the openssl command line's
//    (`x509 -fingerprint -sha256`; `x509 -pubkey | pkey -pubin -outform DER | sha256sum`);
//  - the public-key fingerprint hashes the whole SubjectPublicKeyInfo, not the key bits;
//  - print_fingerprints prints exactly two lines and answers 0, or one error line and 1;
//  - fingerprints_of_file names the file when it is missing or holds no certificate;
//  - tls_server_end_point (RFC 5929): the certificate hashed with its signature hash
//    (SHA-256 for ECDSA-SHA256, SHA-384 for ECDSA-SHA384 and RSA-PSS with SHA-384), SHA-256
//    in place of SHA-1, empty for Ed25519.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::TempDir;

std::string strip_hex(std::string s) {
  std::string out;
  for (char c : s) {
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return out;
}

std::string read_stream(FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[512];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  return out;
}

std::string raw_sha(const EVP_MD* md, const std::string& data) {
  return detail::digest(md, data);
}

TEST(Fingerprints, CertificateFingerprintEqualsOpensslCommandLine) {
  TempDir dir;
  const test::Pair pair = test::generate_pair(dir, "server");
  const std::string cli =
      test::run("openssl x509 -in '" + pair.cert + "' -noout -fingerprint -sha256");
  ASSERT_NE(cli.find('='), std::string::npos) << cli;
  const std::string expected = strip_hex(cli.substr(cli.find('=') + 1));
  std::string error;
  const std::optional<Fingerprints> f = fingerprints_of_file(pair.cert, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(expected.size(), 64u);
  EXPECT_EQ(f->certificate, expected);
}

TEST(Fingerprints, PublicKeyFingerprintIsSha256OfSubjectPublicKeyInfoDer) {
  TempDir dir;
  const test::Pair pair = test::generate_pair(dir, "server");
  const std::string cli = test::run("openssl x509 -in '" + pair.cert +
                                    "' -noout -pubkey | openssl pkey -pubin -outform DER | "
                                    "sha256sum");
  ASSERT_GE(cli.size(), 64u) << cli;
  std::string error;
  const std::optional<Fingerprints> f = fingerprints_of_file(pair.cert, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->public_key, cli.substr(0, 64));
  // The same key gives the same pin through the other entry points.
  test::X509Ptr cert = test::read_cert(pair.cert);
  EXPECT_EQ(public_key_sha256(cert.get()), f->public_key);
  EXPECT_EQ(fingerprints(cert.get()).certificate, f->certificate);
  EXPECT_NE(f->public_key, f->certificate);
}

TEST(Fingerprints, FirstCertificateOfAFileWithSeveral) {
  TempDir dir;
  const test::Pair a = test::generate_pair(dir, "a");
  const test::Pair b = test::generate_pair(dir, "b");
  const std::string both = dir.path("both.pem");
  std::ofstream(both) << std::ifstream(a.key).rdbuf() << std::ifstream(a.cert).rdbuf()
                      << std::ifstream(b.cert).rdbuf();
  std::string error;
  const auto f = fingerprints_of_file(both, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->certificate, fingerprints_of_file(a.cert, &error)->certificate);
}

TEST(Fingerprints, PrintFingerprintsPrintsExactlyTwoLines) {
  TempDir dir;
  const test::Pair pair = test::generate_pair(dir, "server");
  std::string error;
  const auto f = fingerprints_of_file(pair.cert, &error);
  ASSERT_TRUE(f) << error;
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  EXPECT_EQ(print_fingerprints(pair.cert, out, err), 0);
  EXPECT_EQ(read_stream(out), "sha256 certificate: " + f->certificate +
                                  "\nsha256 public-key: " + f->public_key + "\n");
  EXPECT_EQ(read_stream(err), "");
  std::fclose(out);
  std::fclose(err);
}

TEST(Fingerprints, PrintFingerprintsOfAMissingFileIsOneErrorLineAndExitCodeOne) {
  TempDir dir;
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  EXPECT_EQ(print_fingerprints(dir.path("missing.crt"), out, err), 1);
  EXPECT_EQ(read_stream(out), "");
  const std::string line = read_stream(err);
  EXPECT_EQ(line, "wirepool: " + dir.path("missing.crt") + ": No such file or directory\n");
  std::fclose(out);
  std::fclose(err);
}

TEST(Fingerprints, AFileWithoutACertificateIsAnErrorNamingIt) {
  TempDir dir;
  const test::Pair pair = test::generate_pair(dir, "server");
  std::string error;
  EXPECT_FALSE(fingerprints_of_file(pair.key, &error));
  EXPECT_EQ(error.rfind(pair.key + ": no PEM certificate", 0), 0u) << error;
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  EXPECT_EQ(print_fingerprints(pair.key, out, err), 1);
  const std::string text = read_stream(err);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  std::fclose(out);
  std::fclose(err);
}

TEST(ChannelBinding, EcdsaSha256CertificateBindsSha256OfItsDer) {
  TempDir dir;
  const test::Pair pair = test::generate_pair(dir, "server");
  test::X509Ptr cert = test::read_cert(pair.cert);
  const std::string expected = raw_sha(EVP_sha256(), detail::certificate_der(cert.get()));
  EXPECT_EQ(expected.size(), 32u);
  EXPECT_EQ(tls_server_end_point(cert.get()), expected);
  // The server context precomputes the same bytes.
  std::string error;
  ServerContextPtr ctx = ServerContext::create(test::tls_config(pair), kAlpnPostgresql, &error);
  ASSERT_TRUE(ctx) << error;
  EXPECT_EQ(ctx->channel_binding_data(), expected);
}

TEST(ChannelBinding, EcdsaSha384CertificateBindsSha384) {
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert = test::make_cert("x", key.get(), nullptr, nullptr, false, EVP_sha384());
  EXPECT_EQ(tls_server_end_point(cert.get()),
            raw_sha(EVP_sha384(), detail::certificate_der(cert.get())));
}

TEST(ChannelBinding, Sha1SignatureBindsSha256Instead) {
  test::PkeyPtr key = test::make_ec_key();
  test::X509Ptr cert = test::make_cert("x", key.get(), nullptr, nullptr, false, EVP_sha1());
  EXPECT_EQ(X509_get_signature_nid(cert.get()), NID_ecdsa_with_SHA1);
  EXPECT_EQ(tls_server_end_point(cert.get()),
            raw_sha(EVP_sha256(), detail::certificate_der(cert.get())));
}

TEST(ChannelBinding, RsaPssCertificateBindsTheHashOfItsParameters) {
  EVP_PKEY_CTX* gen = EVP_PKEY_CTX_new_from_name(nullptr, "RSA-PSS", nullptr);
  ASSERT_NE(gen, nullptr);
  EVP_PKEY* raw = nullptr;
  EXPECT_EQ(EVP_PKEY_keygen_init(gen), 1);
  EXPECT_EQ(EVP_PKEY_CTX_set_rsa_keygen_bits(gen, 2048), 1);
  EXPECT_EQ(EVP_PKEY_generate(gen, &raw), 1);
  EVP_PKEY_CTX_free(gen);
  test::PkeyPtr key(raw);
  ASSERT_TRUE(key);
  test::X509Ptr cert = test::make_cert("x", key.get(), nullptr, nullptr, false, EVP_sha384());
  EXPECT_EQ(X509_get_signature_nid(cert.get()), NID_rsassaPss);
  EXPECT_EQ(tls_server_end_point(cert.get()),
            raw_sha(EVP_sha384(), detail::certificate_der(cert.get())));
}

TEST(ChannelBinding, Ed25519CertificateHasNoBinding) {
  test::PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  ASSERT_TRUE(key);
  test::X509Ptr cert = test::make_cert("x", key.get(), nullptr, nullptr, false, nullptr);
  EXPECT_EQ(tls_server_end_point(cert.get()), "");
}

}  // namespace
}  // namespace wirepool::tls
