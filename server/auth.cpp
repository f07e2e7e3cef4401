#include "server/auth.hpp"

#include <openssl/rand.h>

#include <stdexcept>

namespace wirepool::server {

UserStore::UserStore(const std::vector<config::User>& users) {
  if (RAND_bytes(fake_secret_.data(), static_cast<int>(fake_secret_.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  for (const auto& u : users) {
    UserRecord r;
    r.name = u.name;
    r.admin = u.admin;
    r.databases.insert(u.databases.begin(), u.databases.end());
    r.client_cert_pins = u.client_cert_pins;
    if (!u.scram.empty()) {
      auto v = pg::scram::parse_verifier(u.scram);
      if (!v) throw std::runtime_error("user \"" + u.name + "\": malformed scram verifier");
      r.verifier = std::move(*v);
    } else {
      r.verifier = pg::scram::make_verifier(u.password);
    }
    users_.emplace(u.name, std::move(r));
  }
}

const UserRecord* UserStore::find(std::string_view name) const {
  auto it = users_.find(std::string(name));
  return it == users_.end() ? nullptr : &it->second;
}

pg::scram::Verifier UserStore::verifier_for(std::string_view name) const {
  if (const auto* u = find(name)) return u->verifier;
  return pg::scram::fake_verifier(name, fake_secret_);
}

}  // namespace wirepool::server
