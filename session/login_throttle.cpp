#include "session/login_throttle.hpp"

#include <algorithm>

namespace wirepool::server {

namespace {

/// User names longer than this share a key with their prefix (names are
/// bounded by the startup packet; the table's memory by its size).
constexpr size_t kMaxUserKey = 256;

std::string address_slot(const AddressKey& a) {
  return std::string(1, 'a') + std::string(reinterpret_cast<const char*>(a.data()), a.size());
}

std::string user_slot(std::string_view user) {
  return "u" + std::string(user.substr(0, kMaxUserKey));
}

}  // namespace

LoginThrottle::Slot* LoginThrottle::find(const std::string& key, Clock::time_point now,
                                         bool create) {
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    if (!create) return nullptr;
    if (slots_.size() >= limits_.max_entries && !lru_.empty()) {
      slots_.erase(lru_.front());
      lru_.pop_front();
    }
    lru_.push_back(key);
    it = slots_.emplace(key, Slot{0, now, std::prev(lru_.end())}).first;
    return &it->second;
  }
  Slot& s = it->second;
  const double decayed = std::chrono::duration<double>(now - s.updated) /
                         std::chrono::duration<double>(limits_.interval);
  if (decayed > 0) {
    s.score = std::max(0.0, s.score - decayed);
    s.updated = now;
  }
  lru_.splice(lru_.end(), lru_, s.lru);
  return &s;
}

LoginThrottle::Clock::duration LoginThrottle::wait_for(double score) const {
  const double over = score + 1 - static_cast<double>(limits_.burst);
  if (over <= 0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(over * limits_.interval);
}

LoginThrottle::Clock::duration LoginThrottle::delay(const AddressKey& address,
                                                    std::string_view user, Clock::time_point now) {
  std::lock_guard lock(mu_);
  const Slot* a = find(address_slot(address), now, false);
  if (!a || a->score <= 0) return Clock::duration::zero();
  auto wait = wait_for(a->score);
  if (const Slot* u = find(user_slot(user), now, false)) wait = std::max(wait, wait_for(u->score));
  return wait;
}

void LoginThrottle::failed(const AddressKey& address, std::string_view user,
                           Clock::time_point now) {
  std::lock_guard lock(mu_);
  find(address_slot(address), now, true)->score += 1;
  find(user_slot(user), now, true)->score += 1;
}

size_t LoginThrottle::size() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

}  // namespace wirepool::server
