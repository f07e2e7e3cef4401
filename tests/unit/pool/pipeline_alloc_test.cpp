// The pipeline's cost per lease: once it has run a while at its peak number
// of trains, a lease whose train opens, takes a follower, hands the lease over
// and is released allocates nothing (this binary counts the global operator
// new). The relay runs this for most transactions through a busy pool.

// The replacements below pair malloc with free; GCC cannot see that through
// std::allocator's inlined calls.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "pool/pipeline.hpp"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void (*volatile g_release)(void*) = std::free;  // opaque to the mismatch warning

}  // namespace

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// std::stable_sort's buffer comes from here: replaced too, so that every block
// freed below was taken from malloc (AddressSanitizer checks the pairing).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) ++g_allocations;
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept {
  g_release(p);
}
void operator delete(void* p, size_t) noexcept {
  g_release(p);
}

namespace wirepool::pool {
namespace {

constexpr PoolKey kPool = 7;

TEST(PipelineAllocations, ALeaseAllocatesNothingInTheSteadyState) {
  Pipeline p;
  PoolView view;
  const TimePoint now{};
  std::vector<TrainId> trains;
  std::vector<BatchId> batches;
  TurnReport clean;
  clean.clean = true;
  clean.answered = true;
  clean.plain = true;
  clean.turn_started = now;
  // One lease as the relay drives it: the head's turn opens the train, a
  // newcomer joins, the head's end hands it the lease, its own end closes the
  // train, and the session gives the connection back.
  auto lease = [&](TrainId t, BatchId follower) {
    ASSERT_TRUE(p.handle_turn_began(t, kPool, 1, false, now));
    p.pull_order(t, view, now, 0, batches);
    p.join_order(kPool, view, now, trains);
    ASSERT_EQ(trains.size(), 1u);
    ASSERT_EQ(trains[0], t);
    p.handle_joined(t, follower, 1, true);
    ASSERT_EQ(p.handle_turn_end(t, kPool, clean, view, now), follower);
    p.handle_turn_began(t, kPool, 1, false, now);
    ASSERT_EQ(p.handle_turn_end(t, kPool, clean, view, now), std::nullopt);
    ASSERT_TRUE(p.handle_released(t));
  };
  // The peak (one train with one follower), held by enough leases for each
  // place a train may take in the pipeline's tables to have been used.
  for (uint64_t i = 1; i < 200; ++i)
    lease(i, i);
  g_allocations = 0;
  g_counting = true;
  for (uint64_t i = 200; i < 1200; ++i)
    lease(i, i);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0) << "allocations in 1,000 leases";
  EXPECT_FALSE(p.has_actions());
}

}  // namespace
}  // namespace wirepool::pool
