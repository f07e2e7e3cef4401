#pragma once
// Internals of tls/: owning handles for OpenSSL objects and small helpers.

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

namespace wirepool::tls::detail {

/// unique_ptr deleter calling an OpenSSL free function.
template <auto Free>
struct Deleter {
  template <class T>
  void operator()(T* p) const {
    Free(p);
  }
};

using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;

/// Lower-case hex of bytes.
std::string hex(std::string_view bytes);
/// Raw digest of `data` with `md`; empty on failure.
std::string digest(const EVP_MD* md, std::string_view data);
/// The DER encoding of a certificate; empty on failure.
std::string certificate_der(X509* cert);
/// The first certificate of a PEM file; null and `*error` ("<path>: reason") on failure.
X509Ptr read_certificate(const std::string& path, std::string* error);
/// strerror(errno) as a string, read at the call.
std::string errno_text();

}  // namespace wirepool::tls::detail
