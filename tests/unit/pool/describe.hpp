#pragma once
// Test helpers: pool actions as short strings ("grant w1 c2", "close c3 unhealthy"),
// so expectations read like the transition table and failures print readably.

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "pool/pool.hpp"

namespace wirepool::pool::test {

inline std::string describe(const Action& action) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, Open>) {
          return "open c" + std::to_string(a.conn);
        } else if constexpr (std::is_same_v<T, Grant>) {
          return "grant w" + std::to_string(a.waiter) + " c" + std::to_string(a.conn);
        } else if constexpr (std::is_same_v<T, Reject>) {
          return "reject w" + std::to_string(a.waiter) + " " + std::string(to_string(a.reason));
        } else if constexpr (std::is_same_v<T, Close>) {
          return "close c" + std::to_string(a.conn) + " " + std::string(to_string(a.reason));
        } else {
          static_assert(std::is_same_v<T, Reset>);
          return "reset c" + std::to_string(a.conn);
        }
      },
      action);
}

/// Every queued action, described, in order.
inline std::vector<std::string> drain(Pool& pool) {
  std::vector<std::string> out;
  while (auto a = pool.poll_action())
    out.push_back(describe(*a));
  return out;
}

}  // namespace wirepool::pool::test
