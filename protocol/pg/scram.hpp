#pragma once
// SCRAM-SHA-256 (RFC 5802, RFC 7677) for the server side of PostgreSQL's SASL
// authentication, with OpenSSL primitives. The stored form is PostgreSQL's:
//   SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>
// An unknown user gets a fake verifier derived from the name and a server
// secret, so the exchange looks the same and fails only at the proof.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace wirepool::pg::scram {

inline constexpr std::string_view kMechanism = "SCRAM-SHA-256";
inline constexpr std::string_view kMechanismPlus = "SCRAM-SHA-256-PLUS";
inline constexpr int kDefaultIterations = 4096;

struct Verifier {
  int iterations = kDefaultIterations;
  std::string salt;  ///< raw bytes
  std::array<uint8_t, 32> stored_key{};
  std::array<uint8_t, 32> server_key{};
};

std::optional<Verifier> parse_verifier(std::string_view text);
std::string format_verifier(const Verifier& v);
/// PBKDF2-HMAC-SHA-256 over the SASLprep'd password (protocol/pg/saslprep.hpp:
/// the raw bytes when SASLprep refuses it, as PostgreSQL).
Verifier make_verifier(std::string_view password, std::string_view salt,
                       int iterations = kDefaultIterations);
/// A random 16-byte salt.
Verifier make_verifier(std::string_view password);
/// Deterministic per user and secret: repeated attempts for an unknown user see
/// the same salt, as they would for a real one.
Verifier fake_verifier(std::string_view user, std::span<const uint8_t> secret);
/// True if `password` matches (used by protocols that carry the password itself, TDS).
bool verify_password(const Verifier& v, std::string_view password);

/// HMAC-SHA-256 (RFC 2104; RFC 4231's vectors) of `data` under `key`, any key
/// length: SCRAM's keys and signatures, and fake_verifier's derivations.
std::array<uint8_t, 32> hmac_sha256(std::span<const uint8_t> key, std::string_view data);

std::string base64_encode(std::span<const uint8_t> data);
std::string base64_encode(std::string_view data);
std::optional<std::string> base64_decode(std::string_view text);

/// One server-side exchange: client-first -> server-first, client-final -> server-final.
class ServerExchange {
 public:
  /// `channel_binding`: the tls-server-end-point data when the connection is TLS
  /// (enables SCRAM-SHA-256-PLUS), empty otherwise. `nonce` overrides the random
  /// server nonce part (tests only).
  ServerExchange(Verifier verifier, std::string channel_binding = {},
                 std::string nonce_for_test = {});

  enum class Outcome : uint8_t { next, success, failure };
  struct Answer {
    Outcome outcome;
    std::string message;  ///< server-first / server-final to send, or why it failed (for the log)
  };

  /// `mechanism` as chosen in SASLInitialResponse.
  Answer client_first(std::string_view mechanism, std::string_view message);
  /// On success `message` is the server-final ("v=..."). On a wrong proof the
  /// outcome is failure: send 28P01, never the server-final.
  Answer client_final(std::string_view message);

 private:
  Verifier verifier_;
  std::string channel_binding_;
  std::string nonce_override_;
  std::string mechanism_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;  ///< client nonce + server nonce
  bool first_done_ = false;
};

}  // namespace wirepool::pg::scram
