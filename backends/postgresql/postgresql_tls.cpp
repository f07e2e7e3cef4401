#include "backends/postgresql/postgresql_tls.hpp"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>

namespace wirepool::postgresql {

std::optional<std::string> peer_public_key_sha256(PGconn* conn) {
  auto* ssl = static_cast<SSL*>(PQsslStruct(conn, "OpenSSL"));
  if (ssl == nullptr) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  std::optional<std::string> out;
  EVP_PKEY* key = X509_get0_pubkey(cert);
  const int n = key ? i2d_PUBKEY(key, nullptr) : -1;
  if (n > 0) {
    std::string der(static_cast<size_t>(n), '\0');
    auto* p = reinterpret_cast<unsigned char*>(der.data());
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (i2d_PUBKEY(key, &p) == n &&
        EVP_Digest(der.data(), der.size(), digest, &len, EVP_sha256(), nullptr) == 1) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (unsigned int i = 0; i < len; ++i) {
        hex.push_back(kHex[digest[i] >> 4]);
        hex.push_back(kHex[digest[i] & 15]);
      }
      out = std::move(hex);
    }
  }
  X509_free(cert);
  return out;
}

std::optional<db::Error> check_pins(PGconn* conn, const std::vector<std::string>& pins) {
  if (pins.empty()) return std::nullopt;
  const auto actual = peer_public_key_sha256(conn);
  if (!actual) {
    return db::Error::connection(
        "the backend connection has no TLS server certificate to check against tls.pin_sha256");
  }
  if (std::find(pins.begin(), pins.end(), *actual) != pins.end()) return std::nullopt;
  return db::Error::connection("server public key sha256 " + *actual +
                               " matches none of tls.pin_sha256");
}

}  // namespace wirepool::postgresql
