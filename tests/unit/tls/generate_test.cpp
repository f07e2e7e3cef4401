// generate_self_signed():
//  - the key file is created with mode 0600 and the certificate 0644 (umask 022);
//  - the certificate: X.509 v3, CN=wirepool, SANs DNS:localhost, IP:127.0.0.1, IP:::1,
//    a positive serial of at most 128 bits (two certificates differ), ECDSA P-256 key,
//    ECDSA-SHA256 signature, 825 days of validity, critical basicConstraints CA:FALSE,
//    no keyUsage (it would need keyCertSign), extendedKeyUsage serverAuth;
//  - the certificate verifies against itself as the only root, for localhost, 127.0.0.1
//    and ::1 (also in X509_V_FLAG_X509_STRICT mode), and not for another name;
//  - the key matches the certificate;
//  - parent directories are created;
//  - an existing certificate or key is never overwritten, and then nothing is written.

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::TempDir;

mode_t file_mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string slurp(const std::string& path) {
  std::ostringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

/// X509_verify_cert of `cert` with `cert` as the only root, for a host name or an IP.
int verify_against_itself(X509* cert, const std::string& host, bool ip, unsigned long flags = 0) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, cert);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, cert, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM_set_flags(param, flags);
  if (ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  const int ok = X509_verify_cert(ctx);
  const int err = X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok == 1 ? X509_V_OK : (err == X509_V_OK ? -1 : err);
}

class Generate : public ::testing::Test {
 protected:
  void SetUp() override { old_umask_ = ::umask(022); }
  void TearDown() override { ::umask(old_umask_); }
  TempDir dir_;
  mode_t old_umask_ = 0;
};

TEST_F(Generate, KeyIsMode0600AndCertificate0644) {
  const test::Pair p = test::generate_pair(dir_, "server");
  EXPECT_EQ(file_mode(p.key), 0600u);
  EXPECT_EQ(file_mode(p.cert), 0644u);
}

TEST_F(Generate, CertificateHasTheSubjectAltNamesForLocalhost) {
  const test::Pair p = test::generate_pair(dir_, "server");
  test::X509Ptr cert = test::read_cert(p.cert);
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  ASSERT_NE(names, nullptr);
  std::vector<std::string> seen;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_DNS) {
      seen.push_back("DNS:" +
                     std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)),
                                 ASN1_STRING_length(n->d.dNSName)));
    } else if (n->type == GEN_IPADD) {
      seen.push_back("IP:" + std::to_string(ASN1_STRING_length(n->d.iPAddress)) + "B");
    }
  }
  GENERAL_NAMES_free(names);
  EXPECT_EQ(seen, (std::vector<std::string>{"DNS:localhost", "IP:4B", "IP:16B"}));
  const std::string text =
      test::run("openssl x509 -in '" + p.cert + "' -noout -ext subjectAltName");
  EXPECT_NE(text.find("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"),
            std::string::npos)
      << text;
}

TEST_F(Generate, CertificateIsAV3EcdsaP256Sha256LeafFor825DaysWithARandomSerial) {
  const test::Pair a = test::generate_pair(dir_, "a");
  const test::Pair b = test::generate_pair(dir_, "b");
  test::X509Ptr cert = test::read_cert(a.cert);
  test::X509Ptr other = test::read_cert(b.cert);
  EXPECT_EQ(X509_get_version(cert.get()), X509_VERSION_3);
  EXPECT_EQ(X509_get_signature_nid(cert.get()), NID_ecdsa_with_SHA256);
  char group[64] = {};
  EXPECT_EQ(EVP_PKEY_get_group_name(X509_get0_pubkey(cert.get()), group, sizeof group, nullptr), 1);
  EXPECT_STREQ(group, "prime256v1");
  char cn[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "wirepool");
  EXPECT_EQ(X509_check_issued(cert.get(), cert.get()), X509_V_OK);

  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr);
  BIGNUM* serial2 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(other.get()), nullptr);
  EXPECT_FALSE(BN_is_negative(serial));
  EXPECT_FALSE(BN_is_zero(serial));
  EXPECT_LE(BN_num_bits(serial), 128);
  EXPECT_GT(BN_num_bits(serial), 64);
  EXPECT_NE(BN_cmp(serial, serial2), 0);
  BN_free(serial);
  BN_free(serial2);

  int days = 0;
  int seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()),
                           X509_get0_notAfter(cert.get())),
            1);
  EXPECT_EQ(days, 825);
  EXPECT_EQ(seconds, 0);
  EXPECT_LT(X509_cmp_current_time(X509_get0_notBefore(cert.get())), 0);

  int critical = 0;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(cert.get(), NID_basic_constraints, &critical, nullptr));
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(critical, 1);
  EXPECT_EQ(bc->ca, 0);
  BASIC_CONSTRAINTS_free(bc);
  // No keyUsage (see generate.cpp): OpenSSL 1.1.1 and LibreSSL then treat it as self-signed.
  EXPECT_EQ(X509_get_key_usage(cert.get()), UINT32_MAX);
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()), static_cast<uint32_t>(XKU_SSL_SERVER));
}

TEST_F(Generate, CertificateVerifiesAgainstItselfAsTheOnlyRootForLocalhostAndLoopbackIps) {
  const test::Pair p = test::generate_pair(dir_, "server");
  test::X509Ptr cert = test::read_cert(p.cert);
  for (const unsigned long flags : {0ul, static_cast<unsigned long>(X509_V_FLAG_X509_STRICT)}) {
    SCOPED_TRACE(flags);
    EXPECT_EQ(verify_against_itself(cert.get(), "localhost", false, flags), X509_V_OK);
    EXPECT_EQ(verify_against_itself(cert.get(), "127.0.0.1", true, flags), X509_V_OK);
    EXPECT_EQ(verify_against_itself(cert.get(), "::1", true, flags), X509_V_OK);
  }
  EXPECT_EQ(verify_against_itself(cert.get(), "example.com", false), X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(verify_against_itself(cert.get(), "127.0.0.2", true), X509_V_ERR_IP_ADDRESS_MISMATCH);
  // The openssl command line agrees (as psql and node, both OpenSSL, will).
  const std::string out =
      test::run("openssl verify -CAfile '" + p.cert +
                "' -verify_hostname localhost -verify_ip 127.0.0.1 '" + p.cert + "' 2>&1");
  EXPECT_EQ(out, p.cert + ": OK\n");
}

TEST_F(Generate, KeyMatchesTheCertificate) {
  const test::Pair p = test::generate_pair(dir_, "server");
  test::X509Ptr cert = test::read_cert(p.cert);
  FILE* f = std::fopen(p.key.c_str(), "r");
  ASSERT_NE(f, nullptr);
  test::PkeyPtr key(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  ASSERT_TRUE(key);
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  EXPECT_NE(slurp(p.key).find("-----BEGIN PRIVATE KEY-----"), std::string::npos);
}

TEST_F(Generate, CreatesParentDirectories) {
  const std::string cert = dir_.path("a/b/tls/server.crt");
  const std::string key = dir_.path("c/server.key");
  std::string error;
  ASSERT_TRUE(generate_self_signed(cert, key, &error)) << error;
  EXPECT_TRUE(std::filesystem::exists(cert));
  EXPECT_EQ(file_mode(key), 0600u);
}

TEST_F(Generate, RefusesToOverwriteAnExistingCertificateOrKey) {
  const test::Pair p = test::generate_pair(dir_, "server");
  const std::string cert_before = slurp(p.cert);
  const std::string key_before = slurp(p.key);
  std::string error;
  EXPECT_FALSE(generate_self_signed(p.cert, p.key, &error));
  EXPECT_EQ(error, p.cert + ": already exists; not overwriting it");
  EXPECT_EQ(slurp(p.cert), cert_before);
  EXPECT_EQ(slurp(p.key), key_before);

  // Only the key exists: refused, and no certificate appears.
  const std::string lone_cert = dir_.path("lone.crt");
  EXPECT_FALSE(generate_self_signed(lone_cert, p.key, &error));
  EXPECT_EQ(error, p.key + ": already exists; not overwriting it");
  EXPECT_FALSE(std::filesystem::exists(lone_cert));
  EXPECT_EQ(slurp(p.key), key_before);

  // Only the certificate exists: refused, and no key appears.
  const std::string lone_key = dir_.path("lone.key");
  EXPECT_FALSE(generate_self_signed(p.cert, lone_key, &error));
  EXPECT_FALSE(std::filesystem::exists(lone_key));
}

TEST_F(Generate, ADanglingSymlinkIsNotFollowed) {
  const std::string target = dir_.path("elsewhere.key");
  const std::string link = dir_.path("server.key");
  std::filesystem::create_symlink(target, link);
  std::string error;
  EXPECT_FALSE(generate_self_signed(dir_.path("server.crt"), link, &error));
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_FALSE(std::filesystem::exists(dir_.path("server.crt")));
}

}  // namespace
}  // namespace wirepool::tls
