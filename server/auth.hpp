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

class UserStore {
 public:
  /// Throws std::runtime_error for a verifier that does not parse.
  explicit UserStore(const std::vector<config::User>& users);
  /// nullptr for an unknown user.
  const UserRecord* find(std::string_view name) const;
  /// The verifier to run the exchange with: the user's, or a fake one for an
  /// unknown name so the exchange looks the same and fails at the proof.
  pg::scram::Verifier verifier_for(std::string_view name) const;

 private:
  std::unordered_map<std::string, UserRecord> users_;
  std::array<uint8_t, 32> fake_secret_{};
};

}  // namespace wirepool::server
