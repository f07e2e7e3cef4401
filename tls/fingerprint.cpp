// Fingerprints, channel binding data and the shared OpenSSL helpers of tls/.

#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tls/openssl_util.hpp"
#include "tls/tls.hpp"

namespace wirepool::tls {
namespace detail {

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (md == nullptr || EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) != 1) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string certificate_der(X509* cert) {
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert, &der);
  if (len <= 0) return {};
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return out;
}

std::string errno_text() {
  return std::strerror(errno);
}

X509Ptr read_certificate(const std::string& path, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    *error = path + ": " + errno_text();
    return nullptr;
  }
  ERR_clear_error();
  X509Ptr cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!cert) {
    *error = path + ": no PEM certificate (" + last_error() + ")";
    return nullptr;
  }
  return cert;
}

}  // namespace detail

void SslFree::operator()(SSL* ssl) const {
  SSL_free(ssl);
}

std::string public_key_sha256(X509* cert) {
  // The SubjectPublicKeyInfo (algorithm + key), not X509_pubkey_digest's bare key bits:
  // this is what `openssl x509 -pubkey | openssl pkey -pubin -outform DER | sha256sum`
  // and HPKP-style pins hash.
  unsigned char* der = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  if (len <= 0) return {};
  std::string spki(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return detail::hex(detail::digest(EVP_sha256(), spki));
}

Fingerprints fingerprints(X509* cert) {
  Fingerprints f;
  f.certificate = detail::hex(detail::digest(EVP_sha256(), detail::certificate_der(cert)));
  f.public_key = public_key_sha256(cert);
  return f;
}

std::optional<Fingerprints> fingerprints_of_file(const std::string& pem, std::string* error) {
  detail::X509Ptr cert = detail::read_certificate(pem, error);
  if (!cert) return std::nullopt;
  return fingerprints(cert.get());
}

int print_fingerprints(const std::string& pem, FILE* out, FILE* err) {
  std::string error;
  const std::optional<Fingerprints> f = fingerprints_of_file(pem, &error);
  if (!f) {
    std::fprintf(err, "wirepool: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(out, "sha256 certificate: %s\nsha256 public-key: %s\n", f->certificate.c_str(),
               f->public_key.c_str());
  return 0;
}

std::string tls_server_end_point(X509* cert) {
  // RFC 5929 section 4.1: the hash of the certificate's signature algorithm, except that
  // MD5 and SHA-1 are replaced by SHA-256. Algorithms without a separate hash (EdDSA) have
  // no tls-server-end-point binding.
  // X509_get_signature_info also reads the hash of RSA-PSS from its parameters.
  int md_nid = NID_undef;
  if (X509_get_signature_info(cert, &md_nid, nullptr, nullptr, nullptr) != 1) return {};
  if (md_nid == NID_md5 || md_nid == NID_sha1) md_nid = NID_sha256;
  if (md_nid == NID_undef) return {};
  return detail::digest(EVP_get_digestbynid(md_nid), detail::certificate_der(cert));
}

}  // namespace wirepool::tls
