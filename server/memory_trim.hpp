#pragma once
// When to hand freed heap back to the kernel. glibc keeps the memory of many
// small blocks freed in the middle of its heaps (clients that left) and RSS
// stays at its peak; malloc_trim releases those pages, but it walks every
// arena under its lock, so it runs only after a large drop in connections.

#include <algorithm>
#include <cstdint>

namespace wirepool::server {

/// Fed the connection count once a second (Server's trim timer); answers when
/// a malloc_trim is due. No clock, no I/O: tests/unit/server/memory_trim_test.cpp.
class TrimPolicy {
 public:
  /// A trim is due when connections have fallen at least this far below their
  /// peak since the last trim, and by at least a quarter of that peak...
  static constexpr int64_t kMinDrop = 256;

  /// ...and have stopped falling (no fewer than a second ago): clients that
  /// leave together are all gone, their memory freed, before one trim. True
  /// when a trim is due now; the peak then starts again from `connections`.
  bool observe(int64_t connections) {
    peak_ = std::max(peak_, connections);
    const bool settled = connections >= last_;
    last_ = connections;
    const int64_t drop = peak_ - connections;
    if (!settled || drop < kMinDrop || drop * 4 < peak_) return false;
    peak_ = connections;
    return true;
  }

 private:
  int64_t peak_ = 0;
  int64_t last_ = 0;
};

}  // namespace wirepool::server
