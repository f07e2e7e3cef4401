// last_error() and tls_version().

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <cstring>
#include <string>

#include "tls/tls.hpp"

namespace wirepool::tls {

std::string last_error(const SSL* ssl) {
  std::string out;
  const char* data = nullptr;
  int flags = 0;
  bool verify_failed = false;
  while (const unsigned long e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    if (!out.empty()) out += "; ";
    const char* reason = ERR_reason_error_string(e);
    if (ERR_SYSTEM_ERROR(e)) {
      out += std::strerror(ERR_GET_REASON(e));  // errno, from a failed system call
    } else if (reason != nullptr) {
      out += reason;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out += buf;
    }
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      out += " (";
      out += data;
      out += ")";
    }
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
      verify_failed = true;
    }
  }
  if (ssl != nullptr) {
    const long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK && (verify_failed || out.empty())) {
      out += out.empty() ? "certificate verify failed: " : ": ";
      out += X509_verify_cert_error_string(v);
    }
  }
  return out.empty() ? "unknown TLS error" : out;
}

std::string_view tls_version(const SSL* ssl) {
  // Before the handshake completes SSL_get_version answers the highest enabled version.
  if (ssl == nullptr || SSL_is_init_finished(ssl) != 1) return "unknown";
  return SSL_get_version(ssl);
}

}  // namespace wirepool::tls
