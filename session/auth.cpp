#include "session/auth.hpp"

#include <fcntl.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace wirepool::server {

AuthSecret load_auth_secret(const std::string& path) {
  AuthSecret secret{};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (RAND_bytes(secret.data(), static_cast<int>(secret.size())) != 1) {
      throw std::runtime_error("RAND_bytes failed");
    }
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const bool ok =
          ::write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size()) &&
          ::fsync(fd) == 0;
      const int err = errno;
      ::close(fd);
      if (!ok) {
        ::unlink(path.c_str());
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
      }
      return secret;
    }
    if (errno != EEXIST) {
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // another process made it first
  }
  if (fd < 0) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  const ssize_t n = ::read(fd, secret.data(), secret.size());
  char more = 0;
  const bool extra = ::read(fd, &more, 1) > 0;
  ::close(fd);
  if (n != static_cast<ssize_t>(secret.size()) || extra) {
    throw std::runtime_error(path +
                             " is not a 32-byte secret; remove it and wirepool creates "
                             "a new one (unknown user names then show new salts)");
  }
  return secret;
}

UserStore::UserStore(const std::vector<config::User>& users, const AuthSecret& secret)
    : fake_secret_(secret) {
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
    iterations_.push_back(r.verifier.iterations);
    users_.emplace(u.name, std::move(r));
  }
  std::sort(iterations_.begin(), iterations_.end());
}

const UserRecord* UserStore::find(std::string_view name) const {
  auto it = users_.find(std::string(name));
  return it == users_.end() ? nullptr : &it->second;
}

pg::scram::Verifier UserStore::verifier_for(std::string_view name) const {
  if (const auto* u = find(name)) return u->verifier;
  auto v = pg::scram::fake_verifier(name, fake_secret_);
  if (!iterations_.empty()) {
    // One of the users' counts, chosen by a keyed hash of the name: stable
    // per name, and as frequent among unknown names as among users.
    const std::string label = "iterations:" + std::string(name);
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), fake_secret_.data(), static_cast<int>(fake_secret_.size()),
         reinterpret_cast<const unsigned char*>(label.data()), label.size(), mac, &len);
    uint64_t pick = 0;
    std::memcpy(&pick, mac, sizeof pick);
    v.iterations = iterations_[pick % iterations_.size()];
  }
  return v;
}

bool UserStore::check_password(std::string_view name, std::string_view password) const {
  return pg::scram::verify_password(verifier_for(name), password);
}

}  // namespace wirepool::server
