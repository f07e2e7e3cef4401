#pragma once
// Helpers of the tls unit tests: temporary directories, certificates made in memory, the
// openssl command line, and an in-memory handshake over a non-blocking socketpair driven
// the way the server drives SSL objects (SSL_do_handshake, WANT_READ/WANT_WRITE).

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

#include "config/config.hpp"
#include "tls/openssl_util.hpp"
#include "tls/tls.hpp"

namespace wirepool::tls::test {

using detail::PkeyPtr;
using detail::SslCtxPtr;
using detail::X509Ptr;

/// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// `name` inside the directory.
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

/// A generated server pair (generate_self_signed) in `dir`, named `<stem>.crt`/`<stem>.key`.
struct Pair {
  std::string cert;
  std::string key;
};
Pair generate_pair(const TempDir& dir, const std::string& stem);

/// The `tls` configuration section for a pair, optionally with a client CA; as when
/// some user has client_cert_pins (client certificates are requested).
config::Tls tls_config(const Pair& pair, const std::string& client_ca = "");

/// An ECDSA P-256 key.
PkeyPtr make_ec_key();
/// A certificate for `cn` and `key`, signed by `issuer`/`issuer_key` (both null: self-signed)
/// with `md` (null for Ed25519 keys). `ca` adds CA:TRUE and keyCertSign; `san` is a
/// subjectAltName value ("DNS:localhost,IP:127.0.0.1") or empty.
X509Ptr make_cert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool ca,
                  const EVP_MD* md, const std::string& san = "");
/// Writes a certificate or a key as PEM.
void write_cert(const std::string& path, X509* cert);
void write_key(const std::string& path, EVP_PKEY* key);
/// Reads the first certificate of a PEM file (fails the test when it cannot).
X509Ptr read_cert(const std::string& path);

/// Runs a shell command; its standard output, "" when it fails.
std::string run(const std::string& command);

/// The outcome of one handshake: both SSL objects stay usable for inspection.
class Handshake {
 public:
  ~Handshake();
  bool server_ok = false;
  bool client_ok = false;
  std::string server_error;  ///< last_error() of a failed server side
  std::string client_error;  ///< last_error() of a failed client side
  SSL* server = nullptr;     ///< owned
  SSL* client = nullptr;     ///< owned
  int fds[2] = {-1, -1};     ///< owned: [0] server side, [1] client side
  /// Both sides completed.
  bool ok() const { return server_ok && client_ok; }
  /// Sends `text` from client to server and back; true when both arrive intact.
  bool echo(const std::string& text);
};

/// Accepts on `server` (new_server_ssl) and connects with `client` (a configured client SSL
/// in connect state; the Handshake takes ownership) over a fresh socketpair.
void drive(const ServerContext& server, SSL* client, Handshake* out);

/// A client SSL from `context`, prepared for `host`; fails the test when prepare() does.
SSL* client_ssl(const ClientContext& context, const std::string& host);

}  // namespace wirepool::tls::test
