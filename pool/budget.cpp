#include "pool/budget.hpp"

#include <algorithm>

namespace wirepool::pool {

bool Budget::request(uint64_t pool, ConnId conn) {
  // Those in line first: a free place goes to the oldest request.
  if (line_.empty() && room()) {
    ++used_;
    return true;
  }
  line_.emplace_back(pool, conn);
  return false;
}

void Budget::release() {
  if (used_ > 0) --used_;
}

bool Budget::withdraw(uint64_t pool, ConnId conn) {
  auto it = std::find(line_.begin(), line_.end(), std::make_pair(pool, conn));
  if (it == line_.end()) return false;
  line_.erase(it);
  return true;
}

std::optional<std::pair<uint64_t, ConnId>> Budget::poll_grant() {
  if (line_.empty() || !room()) return std::nullopt;
  auto next = line_.front();
  line_.pop_front();
  ++used_;
  return next;
}

}  // namespace wirepool::pool
