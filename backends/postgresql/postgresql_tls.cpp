#include "backends/postgresql/postgresql_tls.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tls/tls.hpp"

namespace wirepool::postgresql {

// The pins are checked the one way every network driver checks them
// (tls/tls.hpp): SHA-256 of the server's SubjectPublicKeyInfo against the list.

std::optional<std::string> peer_public_key_sha256(PGconn* conn) {
  auto* ssl = static_cast<SSL*>(PQsslStruct(conn, "OpenSSL"));
  if (ssl == nullptr) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  std::string hex = tls::public_key_sha256(cert);
  X509_free(cert);
  if (hex.empty()) return std::nullopt;
  return hex;
}

bool tls_established(PGconn* conn) {
  auto* ssl = static_cast<SSL*>(PQsslStruct(conn, "OpenSSL"));
  return ssl != nullptr && PQsslInUse(conn) != 0 && SSL_is_init_finished(ssl) == 1;
}

std::optional<db::Error> check_pins(PGconn* conn, const std::vector<std::string>& pins) {
  if (pins.empty()) return std::nullopt;
  const auto actual = peer_public_key_sha256(conn);
  db::Error e = db::Error::connection(
      actual ? "server public key sha256 " + *actual + " matches none of tls.pin_sha256"
             : "the backend connection has no TLS server certificate to check against "
               "tls.pin_sha256");
  if (actual && tls::ClientContext::pin_matches(*actual, pins)) return std::nullopt;
  e.sqlstate = "08001";  // sqlclient_unable_to_establish_sqlconnection
  return e;
}

}  // namespace wirepool::postgresql
