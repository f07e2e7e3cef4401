// ClientContext: TLS 1.3 to a backend, verified against the configured CA only, with
// optional public-key pins.

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <utility>

#include "tls/openssl_util.hpp"
#include "tls/tls.hpp"

namespace wirepool::tls {
namespace {

/// Lower-case hex without colons, for comparing pins as written and as computed.
std::string normalize_hex(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != ':') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

/// The address inside "[...]" or the text itself, when it is an IPv4 or IPv6 literal.
std::optional<std::string> ip_literal(const std::string& host) {
  std::string text = host;
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  unsigned char buf[16];
  if (inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1) {
    return text;
  }
  return std::nullopt;
}

}  // namespace

ClientContextPtr ClientContext::create(const std::string& ca_file, std::vector<std::string> pins,
                                       std::string* error, std::string_view alpn) {
  ERR_clear_error();
  if (ca_file.empty()) {
    *error = "tls.ca is not set: a TLS backend is verified against the CA it names";
    return nullptr;
  }
  if (alpn.size() > 255) {
    *error = "ALPN protocol longer than 255 bytes";
    return nullptr;
  }
  std::shared_ptr<ClientContext> out(new ClientContext());
  out->pins_ = std::move(pins);
  out->ctx_ = SSL_CTX_new(TLS_client_method());
  SSL_CTX* ctx = out->ctx_;
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + last_error();
    return nullptr;
  }
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
    *error = "cannot restrict TLS to version 1.3: " + last_error();
    return nullptr;
  }
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // The CA file is the only root: no SSL_CTX_set_default_verify_paths().
  FILE* f = std::fopen(ca_file.c_str(), "re");
  if (f == nullptr) {
    *error = "tls.ca " + ca_file + ": " + detail::errno_text();
    return nullptr;
  }
  std::fclose(f);
  if (SSL_CTX_load_verify_file(ctx, ca_file.c_str()) != 1) {
    *error = "tls.ca " + ca_file + ": " + last_error();
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!alpn.empty()) {
    std::string wire(1, static_cast<char>(alpn.size()));
    wire += alpn;
    // SSL_CTX_set_alpn_protos answers 0 on success.
    if (SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned int>(wire.size())) != 0) {
      *error = "cannot set ALPN: " + last_error();
      return nullptr;
    }
  }
  return out;
}

ClientContext::~ClientContext() {
  SSL_CTX_free(ctx_);
}

bool ClientContext::prepare(SSL* ssl, const std::string& host, std::string* error) const {
  ERR_clear_error();
  if (host.empty()) {
    *error = "TLS to a backend needs its host name or address to verify";
    return false;
  }
  bool ok = false;
  if (const std::optional<std::string> ip = ip_literal(host)) {
    // RFC 6066 forbids IP literals in SNI; the certificate must carry the address.
    ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip->c_str()) == 1;
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
  }
  if (!ok) {
    *error = "TLS host " + host + ": " + last_error();
    return false;
  }
  SSL_set_connect_state(ssl);
  return true;
}

bool ClientContext::check_pins(SSL* ssl, std::string* error) const {
  if (pins_.empty()) return true;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) {
    *error = "the server sent no certificate to check against tls.pin_sha256";
    return false;
  }
  const std::string spki = public_key_sha256(cert);
  if (pin_matches(spki, pins_)) return true;
  *error = "server public key sha256 " + spki + " matches none of tls.pin_sha256";
  return false;
}

bool ClientContext::pin_matches(std::string_view spki_hex, const std::vector<std::string>& pins) {
  const std::string wanted = normalize_hex(spki_hex);
  if (wanted.empty()) return false;
  for (const std::string& pin : pins) {
    if (normalize_hex(pin) == wanted) return true;
  }
  return false;
}

}  // namespace wirepool::tls
