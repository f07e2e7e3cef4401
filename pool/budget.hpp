#pragma once
// The connections of one database's pools (a pool per user) counted against
// one cap, `max_db_connections`: a pure counter with a line of pools waiting to
// open one, in the style of pool.hpp (no I/O, no clock, no threads). The pools'
// owner asks before it opens a connection and says when one is gone; what frees
// a place goes to the oldest request.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "pool/pool.hpp"

namespace wirepool::pool {

class Budget {
 public:
  /// `max` 0: no cap (every request is granted at once).
  explicit Budget(size_t max = 0) : max_(max) {}

  /// Pool `pool` wants to open connection `conn`: true when it may now (it is
  /// counted); false when it waits in line for poll_grant().
  bool request(uint64_t pool, ConnId conn);
  /// A counted connection is gone (closed, or its open failed): its place is
  /// free for the oldest waiting request (poll_grant).
  void release();
  /// A waiting request is not wanted any more (its pool shut down). False when
  /// it was not waiting (granted already, or unknown).
  bool withdraw(uint64_t pool, ConnId conn);
  /// The next waiting request that may open now, counted; nullopt when none
  /// waits or no place is free. Call after release() and resize().
  std::optional<std::pair<uint64_t, ConnId>> poll_grant();
  /// A new cap; a lower one lets nothing open until enough are gone.
  void resize(size_t max) { max_ = max; }

  size_t max() const { return max_; }
  size_t used() const { return used_; }
  size_t waiting() const { return line_.size(); }

 private:
  bool room() const { return max_ == 0 || used_ < max_; }

  size_t max_;
  size_t used_ = 0;
  std::deque<std::pair<uint64_t, ConnId>> line_;
};

}  // namespace wirepool::pool
