// Property tests of pool::Pipeline: a simulated clock and a driver that acts as
// the relay would (300 seeds x 2000 events: leases granted, turns beginning and
// ending clean or not, newcomers joining through join_order, waiters queueing and
// pulled through pull_order, releases, time jumps, pauses, clients waiting in the
// pool) while a model checks after every step that:
//  - a train's followers all belong to its pool; a train never holds more than
//    max_followers and running + followers stay below max_train_batches since
//    the grant (below busy_train_batches when joined while clients waited);
//  - join_order lists only open trains of the pool within join_within, fewest
//    followers first, and nothing while pipelining is off or paused or a waiter
//    of the pool queues; pull_order lists that pool's waiters in arrival order,
//    past those the driver left, as many as the train has places for;
//  - a batch is in at most one place (a train or the waiters' queue); the lease
//    goes to the oldest follower; every joined batch leaves its train exactly
//    once (handed the lease or failed), and after the final releases none is left;
//  - may_cancel is true exactly when no follower is pipelined.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "pool/pipeline.hpp"
#include "tests/unit/pool/pipeline_orders.hpp"

namespace wirepool::pool {
namespace {

using namespace std::chrono_literals;

using test::join_list;
using test::pull_list;

struct MTrain {
  PoolKey pool = 0;
  std::deque<BatchId> followers;
  uint32_t handed = 0;  // lease hand-overs since the grant
};

struct Sim {
  explicit Sim(uint32_t seed) : rng(seed) {}

  std::mt19937 rng;
  PipelineLimits limits;
  Pipeline p{limits};
  TimePoint now = TimePoint{} + 1h;
  std::map<TrainId, MTrain> trains;  // leases held (running a batch)
  std::map<PoolKey, PoolView> views;
  std::deque<std::pair<BatchId, PoolKey>> waiters;
  std::map<BatchId, PoolKey> batch_pool;
  std::map<BatchId, int> joined, left;  // times in a train / times it left one
  TrainId next_train = 1;
  BatchId next_batch = 1;
  uint64_t handovers = 0, failures = 0, joins = 0, pulls = 0;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  bool chance(int pct) { return pick(100) < pct; }
  PoolKey any_pool() { return static_cast<PoolKey>(1 + pick(3)); }

  void drain_actions(TrainId t) {
    while (auto a = p.poll_action()) {
      if (auto* f = std::get_if<Fail>(&*a)) {
        ASSERT_EQ(f->train, t);
        auto& m = trains[t];
        auto it = std::find(m.followers.begin(), m.followers.end(), f->batch);
        ASSERT_NE(it, m.followers.end()) << "failed a batch not in the train";
        m.followers.erase(it);
        ++left[f->batch];
        ++failures;
      } else if (auto* pz = std::get_if<Pause>(&*a)) {
        views[pz->pool].paused_until = pz->until;
      }
    }
  }

  void check_join(TrainId t, BatchId b) {
    auto& m = trains.at(t);
    ASSERT_EQ(batch_pool.at(b), m.pool) << "a train took another pool's batch";
    ASSERT_LT(m.followers.size(), limits.max_followers);
    const uint32_t limit =
        views[m.pool].clients_waiting ? limits.busy_train_batches : limits.max_train_batches;
    ASSERT_LT(m.handed + m.followers.size() + 1, limit);
    ASSERT_EQ(joined[b], left[b]) << "batch already in a train";
    for (const auto& w : waiters)
      ASSERT_NE(w.first, b) << "batch waiting and joined at once";
  }

  void join(TrainId t, BatchId b) {
    check_join(t, b);
    if (testing::Test::HasFatalFailure()) return;
    const bool sent_all = !chance(5);
    p.handle_joined(t, b, static_cast<uint64_t>(pick(4)), sent_all);
    trains[t].followers.push_back(b);
    ++joined[b];
    ++joins;
    if (!sent_all) {
      ASSERT_FALSE(p.is_open(t));
    }
  }

  void pull(TrainId t) {
    const PoolKey pool = trains.at(t).pool;
    // As the relay pulls: a chunk at a time, past the waiters it left in the queue.
    size_t left = 0;
    for (;;) {
      auto order = pull_list(p, t, views[pool], now, left);
      std::vector<BatchId> expect;
      if (now >= views[pool].paused_until)
        for (const auto& w : waiters)
          if (w.second == pool) expect.push_back(w.first);
      if (expect.size() > left)
        expect.erase(expect.begin(), expect.begin() + static_cast<std::ptrdiff_t>(left));
      else
        expect.clear();
      if (!p.has_room(t, views[pool])) expect.clear();
      ASSERT_LE(order.size(), p.limits().max_followers - trains.at(t).followers.size());
      ASSERT_EQ(order.empty(), expect.empty()) << "pull_order names nobody while a waiter could go";
      expect.resize(std::min(expect.size(), order.size()));
      ASSERT_EQ(order, expect) << "pull_order is not the pool's waiters in arrival order";
      if (order.empty()) return;
      for (BatchId b : order) {
        if (!p.has_room(t, views[pool])) return;
        if (chance(20)) {  // settings differ, statements unknown on the backend
          ++left;
          continue;
        }
        p.handle_wait_end(b);
        waiters.erase(std::find(waiters.begin(), waiters.end(), std::make_pair(b, pool)));
        join(t, b);
        ++pulls;
        if (testing::Test::HasFatalFailure()) return;
      }
    }
  }

  void newcomer() {
    const BatchId b = next_batch++;
    const PoolKey pool = any_pool();
    batch_pool[b] = pool;
    const PoolView& v = views[pool];
    auto order = join_list(p, pool, v, now);
    const bool pool_waits = std::any_of(waiters.begin(), waiters.end(),
                                        [pool](const auto& w) { return w.second == pool; });
    if (!v.pipeline || now < v.paused_until || pool_waits) {
      ASSERT_TRUE(order.empty());
    }
    size_t last = 0;
    for (TrainId t : order) {
      ASSERT_TRUE(trains.count(t));
      ASSERT_EQ(trains[t].pool, pool);
      ASSERT_TRUE(p.is_open(t));
      ASSERT_GE(trains[t].followers.size(), last) << "join_order not fewest followers first";
      last = trains[t].followers.size();
    }
    if (!order.empty() && !chance(10)) {
      join(order.front(), b);
      return;
    }
    if (chance(60)) {
      p.handle_wait_begin(b, pool);
      waiters.emplace_back(b, pool);
    }
  }

  void grant() {
    // A waiter (or a newcomer) gets a lease of its own from the pool.
    BatchId b;
    PoolKey pool;
    if (!waiters.empty() && chance(70)) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(waiters.size())));
      b = waiters[i].first;
      pool = waiters[i].second;
      waiters.erase(waiters.begin() + static_cast<std::ptrdiff_t>(i));
      p.handle_wait_end(b);
    } else {
      b = next_batch++;
      pool = any_pool();
      batch_pool[b] = pool;
    }
    const TrainId t = next_train++;
    trains[t] = MTrain{pool, {}, 0};
    begin_turn(t);
  }

  void begin_turn(TrainId t) {
    auto& m = trains.at(t);
    if (!views[m.pool].pipeline) return;
    if (p.handle_turn_began(t, m.pool, static_cast<uint64_t>(pick(4)), chance(3), now)) pull(t);
  }

  void end_turn(TrainId t) {
    auto& m = trains.at(t);
    TurnReport r;
    r.clean = !chance(8);
    r.answered = r.clean || chance(50);
    r.plain = chance(90);
    r.shape = static_cast<uint64_t>(pick(4));
    r.turn_started = now - std::chrono::microseconds(pick(3) == 0 ? pick(2'000'000) : pick(300));
    r.progress = static_cast<uint64_t>(pick(100));
    const auto expect_next = r.clean && !m.followers.empty()
                                 ? std::optional<BatchId>(m.followers.front())
                                 : std::nullopt;
    auto next = p.handle_turn_end(t, m.pool, r, views[m.pool], now);
    ASSERT_EQ(next, expect_next) << "the lease must go to the oldest follower of a clean end";
    if (next) {
      m.followers.pop_front();
      ++m.handed;
      ++left[*next];
      ++handovers;
    }
    drain_actions(t);
    ASSERT_TRUE(trains[t].followers.empty() || next) << "followers left behind an unclean end";
    if (next) {
      if (p.is_open(t)) pull(t);
      return;
    }
    if (chance(70)) release(t);  // transaction mode: idle, back to the pool
  }

  void release(TrainId t) {
    const bool had = !trains[t].followers.empty();
    ASSERT_EQ(p.handle_released(t), !had);
    drain_actions(t);
    ASSERT_TRUE(trains[t].followers.empty());
    ASSERT_FALSE(p.knows(t));
    trains.erase(t);
  }

  void check() {
    for (const auto& [t, m] : trains) {
      ASSERT_EQ(p.followers(t), m.followers.size());
      ASSERT_EQ(p.may_cancel(t), m.followers.empty());
      ASSERT_LE(m.followers.size(), limits.max_followers);
      ASSERT_LT(m.handed + m.followers.size(), limits.max_train_batches);
      for (BatchId b : m.followers)
        ASSERT_EQ(batch_pool.at(b), m.pool);
    }
    for (const auto& w : waiters)
      ASSERT_TRUE(p.waiting(w.first));
  }

  void step() {
    const int e = pick(100);
    if (e < 25) {
      newcomer();
    } else if (e < 40) {
      grant();
    } else if (e < 75) {
      if (trains.empty()) return;
      auto it = trains.begin();
      std::advance(it, pick(static_cast<int>(trains.size())));
      end_turn(it->first);
    } else if (e < 80) {
      if (trains.empty()) return;
      auto it = trains.begin();
      std::advance(it, pick(static_cast<int>(trains.size())));
      release(it->first);
    } else if (e < 85) {
      if (waiters.empty()) return;
      auto w = waiters.front();  // a waiter gone (its client left)
      waiters.pop_front();
      p.handle_wait_end(w.first);
    } else if (e < 93) {
      now += pick(4) == 0 ? std::chrono::microseconds(pick(1'500'000))
                          : std::chrono::microseconds(pick(1500));
    } else if (e < 97) {
      auto& v = views[any_pool()];
      v.clients_waiting = !v.clients_waiting;
    } else {
      auto& v = views[any_pool()];
      v.pipeline = !chance(20);
    }
  }
};

TEST(PipelineProperty, RandomEventsKeepTheInvariants) {
  uint64_t handovers = 0, failures = 0, joins = 0, pulls = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    Sim run(seed);
    for (int i = 0; i < 2000; ++i) {
      run.step();
      if (HasFatalFailure()) FAIL() << "seed " << seed << " step " << i;
      run.check();
      if (HasFatalFailure()) FAIL() << "seed " << seed << " step " << i;
    }
    // Everyone still queued in a train is answered or failed once its lease ends.
    while (!run.trains.empty()) {
      run.release(run.trains.begin()->first);
      if (HasFatalFailure()) FAIL() << "seed " << seed << " final release";
    }
    for (const auto& [b, n] : run.joined)
      ASSERT_EQ(run.left[b], n) << "seed " << seed << ": batch " << b << " joined " << n
                                << " times but left " << run.left[b];
    handovers += run.handovers;
    failures += run.failures;
    joins += run.joins;
    pulls += run.pulls;
  }
  // The driver reaches every path, not just the easy ones.
  EXPECT_GT(handovers, 10'000u);
  EXPECT_GT(failures, 1'000u);
  EXPECT_GT(pulls, 1'000u);
  EXPECT_GT(joins, handovers);
}

}  // namespace
}  // namespace wirepool::pool
