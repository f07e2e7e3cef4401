#pragma once
// Failed-login throttling across connections, per source address and per user
// (docs/security.md, "Before authentication"). Each key has a failure score
// that decays by one every `interval`; an attempt whose score has reached
// `burst` waits (score + 1 - burst) x interval before its credentials are
// checked. Parallel connections all see the same score and each of their
// failures adds to it, so their waits grow together: over time a key gets at
// most one guess per interval beyond its burst, whatever the number of
// connections. The user's score applies only to attempts from an address that
// has failed itself (a user under attack is not delayed from a clean address).
// The table holds at most `max_entries` keys; the least recently used go first.

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "session/admission.hpp"

namespace wirepool::server {

class LoginThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    int64_t burst = 10;
    Clock::duration interval = std::chrono::seconds(1);
    size_t max_entries = 65536;
  };

  explicit LoginThrottle(Limits limits) : limits_(limits) {}

  /// How long an attempt from `address` as `user` waits before it is checked.
  Clock::duration delay(const AddressKey& address, std::string_view user,
                        Clock::time_point now = Clock::now());
  /// The attempt failed: one more for the address and the user.
  void failed(const AddressKey& address, std::string_view user,
              Clock::time_point now = Clock::now());
  /// Keys held (at most max_entries).
  size_t size() const;

 private:
  struct Slot {
    double score = 0;
    Clock::time_point updated{};
    std::list<std::string>::iterator lru;
  };
  /// The key's slot with its score decayed to `now` (created when `create`).
  Slot* find(const std::string& key, Clock::time_point now, bool create);
  Clock::duration wait_for(double score) const;

  const Limits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  std::list<std::string> lru_;  ///< least recently used first
};

}  // namespace wirepool::server
