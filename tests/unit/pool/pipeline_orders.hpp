#pragma once
// Test helpers: the pipeline's join and pull orders as returned vectors. Each
// starts the output non-empty, so a test also sees that the call clears it.

#include <vector>

#include "pool/pipeline.hpp"

namespace wirepool::pool::test {

/// Pipeline::join_order's answer for `pool`.
inline std::vector<TrainId> join_list(const Pipeline& p, PoolKey pool, const PoolView& v,
                                      TimePoint now) {
  std::vector<TrainId> out{99};  // not empty: join_order clears it
  p.join_order(pool, v, now, out);
  return out;
}

/// Pipeline::pull_order's answer for train `t`, past the first `skip` waiters.
inline std::vector<BatchId> pull_list(const Pipeline& p, TrainId t, const PoolView& v,
                                      TimePoint now, size_t skip = 0) {
  std::vector<BatchId> out{99};
  p.pull_order(t, v, now, skip, out);
  return out;
}

}  // namespace wirepool::pool::test
