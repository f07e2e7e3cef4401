#pragma once
// TLS for wirepool, on OpenSSL 3: TLS 1.3 only everywhere, no setting that lowers
// the version or skips a certificate check (DESIGN.md "TLS and trust").
//
//  - Fingerprints: SHA-256 of a certificate's DER and of its SubjectPublicKeyInfo DER
//    (the "public-key" pin that `pin_sha256` and `client_cert_pins` hold).
//  - generate_self_signed(): the `tls.generate: true` development pair.
//  - ServerContext: one SSL_CTX per listener protocol (ALPN "postgresql" or "tds/8.0"),
//    requesting but never requiring a client certificate; ServerContextHolder swaps it on
//    reload.
//  - ClientContext: the backend side (TDS driver): the configured CA is the only root,
//    hostname or IP verified, public-key pins checked after the handshake.
//
// The caller drives SSL objects itself (non-blocking sockets, SSL_accept/SSL_read/
// SSL_write, WANT_READ/WANT_WRITE); this module only builds and inspects them. Nothing
// here throws: creation answers nullptr and an error string that names the file and
// OpenSSL's reason.

#include <openssl/types.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace wirepool::tls {

/// ALPN protocol of PostgreSQL direct TLS (PostgreSQL 17 `sslnegotiation=direct`).
inline constexpr std::string_view kAlpnPostgresql = "postgresql";
/// ALPN protocol of TDS 8.0 strict encryption.
inline constexpr std::string_view kAlpnTds = "tds/8.0";

/// Frees an SSL object (for SslPtr).
struct SslFree {
  /// Calls SSL_free.
  void operator()(SSL* ssl) const;
};
/// Owning handle of one connection's SSL object.
using SslPtr = std::unique_ptr<SSL, SslFree>;

// ---- fingerprints ---------------------------------------------------------------------

/// Lower-case hex SHA-256 fingerprints of a certificate, without colons.
struct Fingerprints {
  /// Of the certificate's DER (what `openssl x509 -fingerprint -sha256` shows).
  std::string certificate;
  /// Of the DER SubjectPublicKeyInfo: the pin of `pin_sha256` / `client_cert_pins`.
  std::string public_key;
};

/// Fingerprints of the first certificate of a PEM file; nullopt and `*error` ("<path>: ...")
/// when it cannot be read or holds no certificate.
std::optional<Fingerprints> fingerprints_of_file(const std::string& pem, std::string* error);
/// Fingerprints of a certificate.
Fingerprints fingerprints(X509* cert);
/// Lower-case hex SHA-256 of the certificate's DER SubjectPublicKeyInfo.
std::string public_key_sha256(X509* cert);
/// `wirepool --fingerprint FILE`: prints "sha256 certificate: <hex>" and
/// "sha256 public-key: <hex>" to `out` and answers 0, or one error line to `err` and 1.
int print_fingerprints(const std::string& pem, FILE* out, FILE* err);

/// RFC 5929 tls-server-end-point channel binding data (raw bytes, for SCRAM-SHA-256-PLUS):
/// the certificate's DER hashed with the hash of its signature algorithm, SHA-256 when that
/// is MD5 or SHA-1 (RSA-PSS: the hash of its parameters). Empty when the algorithm has no
/// separate hash (Ed25519, Ed448): RFC 5929 defines no binding then, so do not offer -PLUS.
std::string tls_server_end_point(X509* cert);

// ---- generation -----------------------------------------------------------------------

/// Creates a self-signed development pair: an ECDSA P-256 key (PKCS#8 PEM, mode 0600) and an
/// X.509 v3 leaf certificate (PEM, mode 0644 less the umask) for CN=wirepool with
/// subjectAltName DNS:localhost, IP:127.0.0.1 and IP:::1, a random 128-bit serial, valid 825
/// days, signed with ECDSA-SHA256, CA:FALSE. Clients trust it by naming the certificate itself
/// as their root (psql sslrootcert= with sslmode=verify-full, node `ca`). Parent directories are
/// created. Never overwrites: an existing file is an error and nothing is written. On failure,
/// files it created are removed.
bool generate_self_signed(const std::string& cert_path, const std::string& key_path,
                          std::string* error);

// ---- server side ----------------------------------------------------------------------

class ServerContext;
/// Shared, immutable server context: a connection keeps the one it was accepted with.
using ServerContextPtr = std::shared_ptr<const ServerContext>;

/// What the client presented as its certificate, read after the handshake.
struct PeerCertificate {
  /// The client sent a certificate.
  bool present = false;
  /// Lower-case hex SHA-256 of its SubjectPublicKeyInfo, for `client_cert_pins`.
  std::string public_key_sha256;
  /// The chain verified against `tls.client_ca` (always false without one).
  bool chain_verified = false;
  /// The subject's first commonName (UTF-8), empty when it has none.
  std::string common_name;
};

/// A server SSL_CTX for one listener protocol. TLS 1.3 only; ciphersuites from the
/// configuration; SSL_MODE_RELEASE_BUFFERS (an idle connection holds no record buffers) and
/// SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER (a retried SSL_write may pass a moved buffer with the
/// same bytes); no session tickets and no session cache, so every connection makes a full
/// handshake and its client certificate is always verified afresh.
///
/// ALPN: a client that offers ALPN must offer this context's protocol, else the handshake
/// fails with no_application_protocol; a client that offers none is accepted, and the
/// caller decides with alpn_negotiated() whether it needed one.
///
/// Client certificates are requested only when one could be checked (`client_ca` set, or
/// `client_pins`), never required, and never fail the handshake: the caller reads
/// peer_certificate() and checks pins (and chain_verified) itself. No CA names are sent in the
/// CertificateRequest, so clients also offer self-signed pinned certificates.
///
/// SSL objects hold a reference to the SSL_CTX and its ALPN setting: they stay valid after
/// the ServerContext that made them is destroyed (a reload while connections are open).
class ServerContext {
 public:
  /// Builds a context from the `tls` section (certificate chain, key, ciphersuites,
  /// client_ca) serving ALPN `alpn`. nullptr and `*error` on failure: "tls.certificate
  /// <path>: <reason>", a key that does not match the certificate, an invalid or empty
  /// ciphersuite list, an unreadable client_ca.
  static ServerContextPtr create(const config::Tls& tls, std::string_view alpn, std::string* error);
  /// Releases this reference to the SSL_CTX; SSL objects keep theirs.
  ~ServerContext();
  /// Not copyable: shared through ServerContextPtr.
  ServerContext(const ServerContext&) = delete;
  /// Not copyable: shared through ServerContextPtr.
  ServerContext& operator=(const ServerContext&) = delete;

  /// The OpenSSL context (owned; SSL objects made from it take their own reference).
  SSL_CTX* native() const { return ctx_; }
  /// The ALPN protocol this context serves.
  const std::string& alpn() const { return alpn_; }
  /// Fingerprints of the server's own (leaf) certificate, for the start-up log line.
  const Fingerprints& fingerprints() const { return fingerprints_; }
  /// tls_server_end_point() of the server's own certificate, computed once: pass it to
  /// SCRAM-SHA-256-PLUS for connections made from this context. Empty = no -PLUS.
  const std::string& channel_binding_data() const { return channel_binding_; }

 private:
  /// Made by create() only.
  ServerContext() = default;
  SSL_CTX* ctx_ = nullptr;       ///< owned
  std::string alpn_;             ///< e.g. "postgresql"
  Fingerprints fingerprints_;    ///< of the leaf certificate
  std::string channel_binding_;  ///< raw tls-server-end-point bytes
};

/// A new server-side SSL object on a connected socket (SSL_set_fd, accept state); the
/// caller drives SSL_accept and frees it (SslPtr). nullptr when OpenSSL fails (last_error()).
/// Both set SSL_OP_CLEANSE_PLAINTEXT; the caller clears it once the client has logged in.
SSL* new_server_ssl(const ServerContext& context, int fd);

/// A new server-side SSL object whose handshake is carried by the caller (TDS 7.x wraps
/// it in PRELOGIN packets): feed the client's bytes with BIO_write(SSL_get_rbio()), drive
/// SSL_do_handshake, and send what BIO_read(SSL_get_wbio()) yields. nullptr on failure.
SSL* new_server_ssl_memory(const ServerContext& context);
/// Moves a session made by new_server_ssl_memory() onto the socket `fd` once its handshake
/// is done: reads return `prefix` first (records the client sent right behind its last
/// handshake message, already received), then the socket's bytes; writes go to the socket.
/// BIO_pending(SSL_get_rbio()) counts the prefix still unread. False on failure.
bool attach_socket(SSL* ssl, int fd, std::string prefix);

/// True when ALPN selected a protocol during the handshake.
bool alpn_negotiated(SSL* ssl);
/// The ALPN protocol selected during the handshake, empty when none.
std::string_view selected_alpn(SSL* ssl);

/// The client certificate of a completed server-side handshake.
PeerCertificate peer_certificate(SSL* ssl);

/// The current server context of a listener, swapped whole on reload. Thread-safe.
class ServerContextHolder {
 public:
  /// Starts with `initial` (not null).
  explicit ServerContextHolder(ServerContextPtr initial);

  /// The context for a new connection; keep the pointer for the connection's lifetime.
  ServerContextPtr current() const;
  /// Builds a new context from `tls` with the current ALPN protocol and swaps it in. On
  /// failure answers false and `*error`, and the current context stays. Connections
  /// already accepted keep the context they were made with.
  bool reload(const config::Tls& tls, std::string* error);

 private:
  mutable std::mutex mutex_;  ///< guards current_ (held only to copy or swap the pointer)
  ServerContextPtr current_;  ///< never null
};

// ---- client side (backends) -----------------------------------------------------------

class ClientContext;
/// Shared, immutable client context for one database entry's backend connections.
using ClientContextPtr = std::shared_ptr<const ClientContext>;

/// A client SSL_CTX for connections to a backend: TLS 1.3 only, `ca_file` is the only
/// trusted root (no system default paths), the peer is always verified (SSL_VERIFY_PEER;
/// a failed verification fails the handshake). Public-key pins are checked after the
/// handshake with check_pins().
class ClientContext {
 public:
  /// Builds a context trusting only `ca_file` (PEM, may hold several certificates), with
  /// `pins` (lower-case hex SHA-256 of public keys, colons allowed) and an optional ALPN
  /// protocol to offer (e.g. kAlpnTds; empty = none). nullptr and `*error` on failure.
  static ClientContextPtr create(const std::string& ca_file, std::vector<std::string> pins,
                                 std::string* error, std::string_view alpn = {});
  /// Releases this reference to the SSL_CTX; SSL objects keep theirs.
  ~ClientContext();
  /// Not copyable: shared through ClientContextPtr.
  ClientContext(const ClientContext&) = delete;
  /// Not copyable: shared through ClientContextPtr.
  ClientContext& operator=(const ClientContext&) = delete;

  /// The OpenSSL context: SSL_new() it, then prepare() the SSL object.
  SSL_CTX* native() const { return ctx_; }
  /// Prepares a new client SSL object for `host`: SNI (not for IP literals) and the name
  /// the certificate must match (DNS name via SSL_set1_host, or IP address; "[v6]" allowed).
  /// Sets connect state. False and `*error` when OpenSSL refuses.
  bool prepare(SSL* ssl, const std::string& host, std::string* error) const;
  /// After the handshake: true when no pins are configured or the server's public-key
  /// SHA-256 is one of them; else false and `*error` = "server public key sha256 <hex>
  /// matches none of tls.pin_sha256".
  bool check_pins(SSL* ssl, std::string* error) const;
  /// True when `spki_hex` equals one of `pins`, ignoring case and colons on both sides.
  static bool pin_matches(std::string_view spki_hex, const std::vector<std::string>& pins);

 private:
  /// Made by create() only.
  ClientContext() = default;
  SSL_CTX* ctx_ = nullptr;         ///< owned
  std::vector<std::string> pins_;  ///< as configured
};

// ---- helpers --------------------------------------------------------------------------

/// Drains OpenSSL's thread-local error queue into one line ("reason (detail); reason"),
/// "unknown TLS error" when empty. With `ssl`, a failed certificate verification adds its
/// reason ("certificate verify failed: hostname mismatch").
std::string last_error(const SSL* ssl = nullptr);
/// The negotiated protocol version ("TLSv1.3"), "unknown" until the handshake completed.
std::string_view tls_version(const SSL* ssl);

}  // namespace wirepool::tls
