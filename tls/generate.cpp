// generate_self_signed(): the development certificate of `tls.generate: true`.
//
// An ordinary leaf: basicConstraints CA:FALSE (critical) and extendedKeyUsage serverAuth.
// A client that names this certificate as its root (psql sslrootcert= with verify-full,
// node `ca`) accepts it with OpenSSL 3: a self-signed certificate found in the trust store is
// its own trust anchor, and X509_verify_cert applies no CA checks to the leaf position, also
// in X509_V_FLAG_X509_STRICT mode (tests/unit/tls/generate_test.cpp verifies both; psql 15
// and node 20 were checked by hand). So CA:TRUE is not needed, and CA:FALSE keeps verifiers
// that refuse a CA certificate as an end entity (rustls/webpki) working.
//
// keyUsage is deliberately absent: OpenSSL 1.1.1 and LibreSSL count a certificate as
// self-signed only when keyUsage is absent or includes keyCertSign, so "digitalSignature"
// alone would make clients built on them look for a (non-existent) issuer and fail.

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "tls/openssl_util.hpp"
#include "tls/tls.hpp"

namespace wirepool::tls {
namespace {

using detail::BioPtr;
using detail::PkeyPtr;
using detail::X509Ptr;

constexpr long kValidityDays = 825;
/// notBefore lies a little in the past so that a client whose clock lags still accepts it.
constexpr long kBackdateSeconds = 300;

bool add_extension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

/// A positive random 128-bit serial (RFC 5280: at most 20 octets, positive, non-zero).
bool set_random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;  // positive in two's complement, so the DER stays 16 octets at most
  bytes[0] |= 0x40;  // non-zero, and full length
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr) return false;
  ASN1_INTEGER* serial = BN_to_ASN1_INTEGER(bn, nullptr);
  BN_free(bn);
  if (serial == nullptr) return false;
  const bool ok = X509_set_serialNumber(cert, serial) == 1;
  ASN1_INTEGER_free(serial);
  return ok;
}

X509Ptr make_certificate(EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 || !set_random_serial(cert.get()))
    return nullptr;
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("wirepool"), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1 || X509_set_pubkey(cert.get(), key) != 1) {
    return nullptr;
  }
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(kValidityDays),
                       -kBackdateSeconds, nullptr) == nullptr) {
    return nullptr;
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  if (!add_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash") ||
      !add_extension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always") ||
      !add_extension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth") ||
      !add_extension(cert.get(), &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1")) {
    return nullptr;
  }
  if (X509_sign(cert.get(), key, EVP_sha256()) <= 0) return nullptr;
  return cert;
}

/// PEM text written by `write` into a memory BIO.
template <class Write>
bool pem_text(Write write, std::string* out) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || !write(bio.get())) return false;
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  if (len <= 0) return false;
  out->assign(data, static_cast<size_t>(len));
  return true;
}

/// Creates `path` exclusively with `mode` (never an existing file, never a chmod after)
/// and writes `text` whole. On failure removes what it created and sets `*error`.
bool write_new_file(const std::string& path, const std::string& text, mode_t mode,
                    std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    *error = path + ": " +
             (errno == EEXIST ? std::string("already exists; not overwriting it")
                              : detail::errno_text());
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == text.size() && ::fsync(fd) == 0;
  const std::string why = written ? std::string() : detail::errno_text();
  if (::close(fd) != 0 || !written) {
    *error = path + ": cannot write: " + (why.empty() ? detail::errno_text() : why);
    ::unlink(path.c_str());
    return false;
  }
  return true;
}

bool create_parent(const std::string& path, std::string* error) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return true;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    *error = parent.string() + ": cannot create directory: " + ec.message();
    return false;
  }
  return true;
}

}  // namespace

bool generate_self_signed(const std::string& cert_path, const std::string& key_path,
                          std::string* error) {
  if (cert_path.empty() || key_path.empty() || cert_path == key_path) {
    *error = "generate: the certificate and the key need two distinct paths";
    return false;
  }
  // Refuse before generating anything when either file is there already; O_EXCL below
  // closes the race with another writer.
  for (const std::string* path : {&cert_path, &key_path}) {
    struct stat st;
    if (::lstat(path->c_str(), &st) == 0) {
      *error = *path + ": already exists; not overwriting it";
      return false;
    }
  }
  ERR_clear_error();
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = key ? make_certificate(key.get()) : nullptr;
  std::string key_pem;
  std::string cert_pem;
  if (!cert ||
      !pem_text(
          [&](BIO* b) {
            return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr) ==
                   1;
          },
          &key_pem) ||
      !pem_text([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()) == 1; }, &cert_pem)) {
    *error = "generate: cannot create the certificate: " + last_error();
    return false;
  }
  if (!create_parent(key_path, error) || !create_parent(cert_path, error)) return false;
  if (!write_new_file(key_path, key_pem, 0600, error)) return false;
  if (!write_new_file(cert_path, cert_pem, 0644, error)) {
    ::unlink(key_path.c_str());
    return false;
  }
  return true;
}

}  // namespace wirepool::tls
