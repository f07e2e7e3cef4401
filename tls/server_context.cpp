// ServerContext, ServerContextHolder and the server-side SSL helpers.
//
// Session resumption is off (no tickets, no cache): clients of a database proxy connect
// once and stay, so resumption saves little, and a resumed TLS 1.3 session skips the
// certificate verification whose outcome peer_certificate() reports.

#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "tls/openssl_util.hpp"
#include "tls/tls.hpp"

namespace wirepool::tls {
namespace {

/// SSL ex_data: set (non-null) when a client certificate chain failed verification.
int chain_failed_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

void free_alpn(void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
               void* /*argp*/) {
  delete static_cast<std::string*>(ptr);
}

/// SSL_CTX ex_data: the ALPN protocol (a heap std::string freed with the SSL_CTX), so that
/// the select callback stays valid for as long as any SSL object holds the context.
int alpn_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_alpn);
  return index;
}

/// Requests a client certificate and never fails the handshake over it: a failed chain is
/// recorded for peer_certificate(), and pins are the caller's decision.
int verify_client(int preverify_ok, X509_STORE_CTX* store) {
  if (preverify_ok != 1) {
    auto* ssl =
        static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
    if (ssl != nullptr) SSL_set_ex_data(ssl, chain_failed_index(), ssl);
  }
  return 1;
}

/// Selects the listener's protocol when the client offers it; a client that offers ALPN
/// without it gets no_application_protocol. Not called when the client offers no ALPN.
int select_alpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                const unsigned char* in, unsigned int inlen, void* arg) {
  const auto* wanted = static_cast<const std::string*>(arg);
  unsigned int i = 0;
  while (i < inlen) {
    const unsigned int len = in[i];
    if (len == 0 || len > inlen - i - 1) break;  // malformed: refuse
    if (len == wanted->size() &&
        wanted->compare(0, len, reinterpret_cast<const char*>(in + i + 1), len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/// "<field> <path>: <errno text>" when the file cannot be opened for reading.
bool readable(const char* field, const std::string& path, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    *error = std::string(field) + " " + path + ": " + detail::errno_text();
    return false;
  }
  std::fclose(f);
  return true;
}

/// Splits a colon-separated list, keeping empty items (an error for the caller).
std::vector<std::string> split_colons(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t colon = list.find(':', start);
    out.push_back(list.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

/// SSL_CTX_set_ciphersuites ignores names it does not know, so each configured name is
/// checked against what it actually enabled.
bool set_ciphersuites(SSL_CTX* ctx, const std::string& list, std::string* error) {
  const std::string field = "tls.ciphersuites \"" + list + "\": ";
  if (list.empty()) {
    *error = field + "empty: name at least one TLS 1.3 ciphersuite";
    return false;
  }
  static constexpr std::string_view kKnown =
      " (TLS 1.3 ciphersuites: TLS_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256, "
      "TLS_CHACHA20_POLY1305_SHA256, TLS_AES_128_CCM_SHA256, TLS_AES_128_CCM_8_SHA256)";
  if (SSL_CTX_set_ciphersuites(ctx, list.c_str()) != 1) {
    *error = field + last_error() + std::string(kKnown);
    return false;
  }
  STACK_OF(SSL_CIPHER)* enabled = SSL_CTX_get_ciphers(ctx);
  for (const std::string& name : split_colons(list)) {
    bool found = false;
    for (int i = 0; !found && i < sk_SSL_CIPHER_num(enabled); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(enabled, i);
      found = std::string_view(SSL_CIPHER_get_version(c)) == "TLSv1.3" &&
              SSL_CIPHER_get_name(c) == name;
    }
    if (!found) {
      *error = field + "\"" + name + "\" is not a TLS 1.3 ciphersuite" + std::string(kKnown);
      return false;
    }
  }
  return true;
}

}  // namespace

ServerContextPtr ServerContext::create(const config::Tls& tls, std::string_view alpn,
                                       std::string* error) {
  ERR_clear_error();
  if (tls.certificate.empty() || tls.key.empty()) {
    *error = "tls.certificate and tls.key are not set: a TLS listener needs both";
    return nullptr;
  }
  if (alpn.empty() || alpn.size() > 255) {
    *error = "ALPN protocol must be 1 to 255 bytes";
    return nullptr;
  }
  std::shared_ptr<ServerContext> out(new ServerContext());
  out->ctx_ = SSL_CTX_new(TLS_server_method());
  SSL_CTX* ctx = out->ctx_;
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + last_error();
    return nullptr;
  }
  out->alpn_ = std::string(alpn);
  auto* alpn_copy = new std::string(alpn);
  if (SSL_CTX_set_ex_data(ctx, alpn_index(), alpn_copy) != 1) {
    delete alpn_copy;
    *error = "cannot create a TLS context: " + last_error();
    return nullptr;
  }
  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, alpn_copy);

  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
    *error = "cannot restrict TLS to version 1.3: " + last_error();
    return nullptr;
  }
  if (!set_ciphersuites(ctx, tls.ciphersuites, error)) return nullptr;
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  static constexpr unsigned char kSessionContext[] = "wirepool";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);

  if (!readable("tls.certificate", tls.certificate, error)) return nullptr;
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.certificate.c_str()) != 1) {
    *error = "tls.certificate " + tls.certificate + ": " + last_error();
    return nullptr;
  }
  if (!readable("tls.key", tls.key, error)) return nullptr;
  // OpenSSL keeps a key per algorithm slot: a key of another type is accepted here and only
  // SSL_CTX_check_private_key notices that the certificate has no matching key.
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    const std::string reason = last_error();
    *error = "tls.key " + tls.key + ": " + reason;
    if (reason.find("values mismatch") != std::string::npos) {
      *error = "tls.key " + tls.key + " does not match tls.certificate " + tls.certificate + " (" +
               reason + ")";
    }
    return nullptr;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    *error = "tls.key " + tls.key + " does not match tls.certificate " + tls.certificate + " (" +
             last_error() + ")";
    return nullptr;
  }

  // A CertificateRequest only when a certificate could be checked (a client CA
  // or a user's pins): otherwise clients would offer certificates for nothing.
  if (!tls.client_ca.empty() || tls.client_pins) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE, verify_client);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!tls.client_ca.empty()) {
    if (!readable("tls.client_ca", tls.client_ca, error)) return nullptr;
    if (SSL_CTX_load_verify_file(ctx, tls.client_ca.c_str()) != 1) {
      *error = "tls.client_ca " + tls.client_ca + ": " + last_error();
      return nullptr;
    }
  }

  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) {
    *error = "tls.certificate " + tls.certificate + ": no certificate loaded";
    return nullptr;
  }
  out->fingerprints_ = tls::fingerprints(leaf);
  out->channel_binding_ = tls_server_end_point(leaf);
  return out;
}

ServerContext::~ServerContext() {
  SSL_CTX_free(ctx_);
}

SSL* new_server_ssl(const ServerContext& context, int fd) {
  SSL* ssl = SSL_new(context.native());
  if (ssl == nullptr) return nullptr;
  // Until login (a TDS LOGIN7 carries the password): read plaintext is wiped.
  SSL_set_options(ssl, SSL_OP_CLEANSE_PLAINTEXT);
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

SSL* new_server_ssl_memory(const ServerContext& context) {
  SSL* ssl = SSL_new(context.native());
  if (ssl == nullptr) return nullptr;
  // Until login (a TDS LOGIN7 carries the password): read plaintext is wiped.
  SSL_set_options(ssl, SSL_OP_CLEANSE_PLAINTEXT);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (in == nullptr || out == nullptr) {
    BIO_free(in);
    BIO_free(out);
    SSL_free(ssl);
    return nullptr;
  }
  BIO_set_mem_eof_return(in, -1);  // empty = "retry", not EOF
  BIO_set_mem_eof_return(out, -1);
  SSL_set_bio(ssl, in, out);
  SSL_set_accept_state(ssl);
  return ssl;
}

namespace {

// A socket BIO that first returns bytes already read from the socket.
struct PrefixedSocket {
  int fd;
  std::string prefix;
  size_t pos = 0;
};

int prefixed_read(BIO* bio, char* data, int size) {
  auto* p = static_cast<PrefixedSocket*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (p->pos < p->prefix.size()) {
    size_t n = std::min(p->prefix.size() - p->pos, static_cast<size_t>(size));
    std::memcpy(data, p->prefix.data() + p->pos, n);
    p->pos += n;
    if (p->pos == p->prefix.size()) std::string().swap(p->prefix), p->pos = 0;
    return static_cast<int>(n);
  }
  ssize_t n = ::recv(p->fd, data, static_cast<size_t>(size), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(bio);
    return -1;
  }
  return static_cast<int>(n);
}

int prefixed_write(BIO* bio, const char* data, int size) {
  auto* p = static_cast<PrefixedSocket*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  ssize_t n = ::send(p->fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
    return -1;
  }
  return static_cast<int>(n);
}

long prefixed_ctrl(BIO* bio, int cmd, long, void*) {
  auto* p = static_cast<PrefixedSocket*>(BIO_get_data(bio));
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return p ? static_cast<long>(p->prefix.size() - p->pos) : 0;
    default:
      return 0;
  }
}

int prefixed_destroy(BIO* bio) {
  delete static_cast<PrefixedSocket*>(BIO_get_data(bio));
  BIO_set_data(bio, nullptr);
  return 1;
}

BIO_METHOD* prefixed_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "prefixed socket");
    BIO_meth_set_read(m, prefixed_read);
    BIO_meth_set_write(m, prefixed_write);
    BIO_meth_set_ctrl(m, prefixed_ctrl);
    BIO_meth_set_destroy(m, prefixed_destroy);
    return m;
  }();
  return method;
}

}  // namespace

bool attach_socket(SSL* ssl, int fd, std::string prefix) {
  BIO* bio = BIO_new(prefixed_method());
  if (bio == nullptr) return false;
  BIO_set_data(bio, new PrefixedSocket{fd, std::move(prefix)});
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);  // one BIO both ways: SSL_set_bio takes one reference
  return true;
}

bool alpn_negotiated(SSL* ssl) {
  return !selected_alpn(ssl).empty();
}

std::string_view selected_alpn(SSL* ssl) {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &data, &len);
  if (data == nullptr) return {};
  return {reinterpret_cast<const char*>(data), len};
}

PeerCertificate peer_certificate(SSL* ssl) {
  PeerCertificate out;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return out;
  out.present = true;
  out.public_key_sha256 = public_key_sha256(cert);
  out.chain_verified = SSL_get_ex_data(ssl, chain_failed_index()) == nullptr &&
                       SSL_get_verify_result(ssl) == X509_V_OK;
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at >= 0) {
    unsigned char* utf8 = nullptr;
    const int len =
        ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
    if (len >= 0) out.common_name.assign(reinterpret_cast<const char*>(utf8), len);
    OPENSSL_free(utf8);
  }
  return out;
}

ServerContextHolder::ServerContextHolder(ServerContextPtr initial) : current_(std::move(initial)) {}

ServerContextPtr ServerContextHolder::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

bool ServerContextHolder::reload(const config::Tls& tls, std::string* error) {
  const std::string alpn = current()->alpn();
  ServerContextPtr fresh = ServerContext::create(tls, alpn, error);
  if (!fresh) return false;
  std::lock_guard lock(mutex_);
  current_.swap(fresh);
  // `fresh` now holds the old context; declared before the lock, it is released after it.
  return true;
}

}  // namespace wirepool::tls
