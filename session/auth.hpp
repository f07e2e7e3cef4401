#pragma once
// The users clients authenticate as, with their SCRAM verifiers. Plaintext
// passwords from the configuration (a development convenience) are turned into
// verifiers once at start-up and never kept.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "protocol/pg/scram.hpp"

namespace wirepool::server {

struct UserRecord {
  std::string name;
  pg::scram::Verifier verifier;
  bool admin = false;
  std::set<std::string> databases;  ///< empty = all
  /// Public-key SHA-256 of accepted client certificates (non-empty = a
  /// certificate is required).
  std::vector<std::string> client_cert_pins;
  bool may_use(std::string_view database) const {
    return databases.empty() || databases.count(std::string(database)) > 0;
  }
};

/// The secret that fake verifiers are derived from, so that an unknown name
/// shows the same salt and iteration count across restarts and reloads, as a
/// real user's does.
using AuthSecret = std::array<uint8_t, 32>;
/// The file in state_dir that keeps it.
inline constexpr std::string_view kAuthSecretFile = "auth.secret";
/// Reads the secret from `path`, or creates the file (mode 0600, 32 random
/// bytes) when it does not exist. Throws std::runtime_error when it cannot.
AuthSecret load_auth_secret(const std::string& path);

class UserStore {
 public:
  /// Throws std::runtime_error for a verifier that does not parse.
  UserStore(const std::vector<config::User>& users, const AuthSecret& secret);
  /// nullptr for an unknown user.
  const UserRecord* find(std::string_view name) const;
  /// The verifier to run the exchange with: the user's, or a fake one for an
  /// unknown name so the exchange looks the same and fails at the proof. A
  /// fake one's salt comes from the secret and the name; its iteration count
  /// is one of the configured users' counts, picked by the same means in
  /// proportion to how many users have it, so that a count of its own does
  /// not single a real user out (docs/security.md).
  pg::scram::Verifier verifier_for(std::string_view name) const;
  /// Whether `password` is `name`'s, checked against verifier_for(name), so an
  /// unknown name takes as long as a real one. PBKDF2 with the verifier's
  /// iteration count (milliseconds to seconds): never on an event loop.
  bool check_password(std::string_view name, std::string_view password) const;

 private:
  std::unordered_map<std::string, UserRecord> users_;
  AuthSecret fake_secret_{};
  std::vector<int> iterations_;  ///< every user's count, sorted
};

}  // namespace wirepool::server
