// Unit tests of pool::Pipeline, one decision each:
//  - a train opens on a plain batch's turn unless the connection is dirty, the
//    shape is slow, or it had max_train_batches since the grant; opening twice
//    does nothing;
//  - join_order: same pool only, fewest followers first (ties: the order trains
//    opened), nothing while paused, with pipelining off, while a waiter of the
//    pool queues, past join_within, at max_followers, or at the batch limit
//    (busy_train_batches while clients wait in the pool's queue);
//  - a join whose send blocked closes the train;
//  - pull_order: waiters of the train's pool in arrival order, past those the
//    caller left, no more than the train has places for, none while paused;
//  - handle_turn_end: a clean end hands the lease to the first follower and
//    counts a batch (running + followers stay below max_train_batches per
//    grant); an unclean one fails every follower once; an unanswered
//    turn with no follower notes nothing;
//  - slow shapes: enter only when others progressed, stay while the average is
//    above slow_statement, leave below fast_again; a follower of a slow shape
//    closes the train; a slow batch pauses the pool once;
//  - may_cancel only without followers; head_flush's four answers;
//  - handle_released fails the followers and forgets the lease's batch count.

#include <gtest/gtest.h>

#include <chrono>
#include <variant>
#include <vector>

#include "pool/pipeline.hpp"
#include "tests/unit/pool/pipeline_orders.hpp"

namespace wirepool::pool {
namespace {

using namespace std::chrono_literals;

constexpr PoolKey kPool = 7;
constexpr PoolKey kOther = 8;

using test::join_list;
using test::pull_list;

TimePoint at(Duration d) {
  return TimePoint{} + 1h + d;
}

std::vector<Fail> fails(Pipeline& p) {
  std::vector<Fail> out;
  while (auto a = p.poll_action())
    if (auto* f = std::get_if<Fail>(&*a)) out.push_back(*f);
  return out;
}

TurnReport clean_turn(TimePoint started, uint64_t shape = 1) {
  TurnReport r;
  r.clean = true;
  r.answered = true;
  r.plain = true;
  r.shape = shape;
  r.turn_started = started;
  return r;
}

TEST(Pipeline, TrainOpensOnAPlainTurnOnce) {
  Pipeline p;
  EXPECT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  EXPECT_TRUE(p.is_open(1));
  EXPECT_FALSE(p.handle_turn_began(1, kPool, 1, false, at(0s)));  // already open: no second pull
  EXPECT_FALSE(p.handle_turn_began(2, kPool, 1, true, at(0s)));   // dirty
  EXPECT_FALSE(p.is_open(2));
}

TEST(Pipeline, JoinOrderPrefersFewestFollowersThenOpeningOrder) {
  Pipeline p;
  PoolView v;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  ASSERT_TRUE(p.handle_turn_began(2, kPool, 1, false, at(0s)));
  ASSERT_TRUE(p.handle_turn_began(3, kOther, 1, false, at(0s)));
  EXPECT_EQ(join_list(p, kPool, v, at(0s)), (std::vector<TrainId>{1, 2}));
  p.handle_joined(1, 100, 1, true);
  EXPECT_EQ(join_list(p, kPool, v, at(0s)), (std::vector<TrainId>{2, 1}));
  EXPECT_EQ(join_list(p, kOther, v, at(0s)), (std::vector<TrainId>{3}));
}

TEST(Pipeline, NobodyJoinsWhenPausedOffOrOld) {
  Pipeline p;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  PoolView v;
  EXPECT_TRUE(join_list(p, kPool, v, at(1ms)).size() == 1);
  EXPECT_TRUE(join_list(p, kPool, v, at(1ms + 1us)).empty());  // past join_within
  v.paused_until = at(1s);
  EXPECT_TRUE(join_list(p, kPool, v, at(0s)).empty());
  v = PoolView{};
  v.pipeline = false;
  EXPECT_TRUE(join_list(p, kPool, v, at(0s)).empty());
}

TEST(Pipeline, WaitersOfThePoolGoBeforeNewcomers) {
  Pipeline p;
  PoolView v;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_wait_begin(50, kPool);
  EXPECT_TRUE(join_list(p, kPool, v, at(0s)).empty());
  p.handle_wait_begin(51, kOther);
  p.handle_wait_begin(52, kPool);
  EXPECT_EQ(pull_list(p, 1, v, at(0s)), (std::vector<BatchId>{50, 52}));
  v.paused_until = at(1s);
  EXPECT_TRUE(pull_list(p, 1, v, at(0s)).empty());
  p.handle_wait_end(50);
  p.handle_wait_end(52);
  EXPECT_FALSE(p.waiting(50));
  EXPECT_EQ(join_list(p, kPool, PoolView{}, at(0s)), (std::vector<TrainId>{1}));
}

TEST(Pipeline, PullOrderNamesNoMoreThanTheTrainHasPlacesFor) {
  PipelineLimits l;
  Pipeline p(l);
  PoolView v;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  for (BatchId b = 50; b < 60; ++b)
    p.handle_wait_begin(b, b % 2 == 0 ? kPool : kOther);
  ASSERT_EQ(l.max_followers, 3u);
  EXPECT_EQ(pull_list(p, 1, v, at(0s)), (std::vector<BatchId>{50, 52, 54}));
  // The caller left the first two in the queue: the next places go past them.
  EXPECT_EQ(pull_list(p, 1, v, at(0s), 2), (std::vector<BatchId>{54, 56, 58}));
  EXPECT_TRUE(pull_list(p, 1, v, at(0s), 5).empty());
  p.handle_joined(1, 100, 1, true);
  EXPECT_EQ(pull_list(p, 1, v, at(0s)), (std::vector<BatchId>{50, 52}));
  // Clients wait in the pool's queue: busy_train_batches counts the running batch.
  PoolView busy;
  busy.clients_waiting = true;
  EXPECT_EQ(pull_list(p, 1, busy, at(0s)), (std::vector<BatchId>{50, 52}));
  p.handle_joined(1, 101, 1, true);
  EXPECT_EQ(pull_list(p, 1, busy, at(0s)), (std::vector<BatchId>{50}));
  p.handle_joined(1, 102, 1, true);
  EXPECT_TRUE(pull_list(p, 1, v, at(0s)).empty());
}

TEST(Pipeline, FollowerCapAndBatchLimits) {
  PipelineLimits l;
  Pipeline p(l);
  PoolView v;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  for (BatchId b = 0; b < l.max_followers; ++b) {
    ASSERT_TRUE(p.has_room(1, v));
    p.handle_joined(1, 100 + b, 1, true);
  }
  EXPECT_FALSE(p.has_room(1, v));
  // Clients waiting in the pool's queue: busy_train_batches counts the running
  // batch and its followers.
  Pipeline q(l);
  ASSERT_TRUE(q.handle_turn_began(1, kPool, 1, false, at(0s)));
  PoolView busy;
  busy.clients_waiting = true;
  for (uint32_t b = 0; b + 2 < l.busy_train_batches; ++b)
    q.handle_joined(1, 200 + b, 1, true);
  EXPECT_TRUE(q.has_room(1, busy));
  q.handle_joined(1, 300, 1, true);
  EXPECT_FALSE(q.has_room(1, busy));
}

TEST(Pipeline, TrainClosesAfterMaxBatchesSinceTheGrant) {
  PipelineLimits l;
  l.max_followers = 100;
  Pipeline p(l);
  PoolView v;
  TimePoint now = at(0s);
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, now));
  BatchId next = 100;
  p.handle_joined(1, next, 1, true);
  uint32_t handed = 0;
  while (auto b = p.handle_turn_end(1, kPool, clean_turn(now), v, now)) {
    ++handed;
    EXPECT_EQ(*b, next);
    if (p.has_room(1, v)) p.handle_joined(1, ++next, 1, true);
    (void)fails(p);
  }
  // Running + followers never reach max_train_batches.
  EXPECT_EQ(handed, l.max_train_batches - 1);
  // The same lease may open again but takes nobody; a new lease (a new grant)
  // starts the count over.
  (void)p.handle_turn_began(1, kPool, 1, false, now);
  EXPECT_FALSE(p.has_room(1, v));
  EXPECT_TRUE(p.handle_released(1));
  EXPECT_TRUE(p.handle_turn_began(1, kPool, 1, false, now));
  EXPECT_TRUE(p.has_room(1, v));
}

TEST(Pipeline, BlockedSendClosesTheTrain) {
  Pipeline p;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_joined(1, 100, 1, false);
  EXPECT_FALSE(p.is_open(1));
  EXPECT_EQ(p.followers(1), 1u);
}

TEST(Pipeline, UncleanEndFailsEveryFollowerOnce) {
  Pipeline p;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_joined(1, 100, 1, true);
  p.handle_joined(1, 101, 1, true);
  TurnReport r = clean_turn(at(0s));
  r.clean = false;
  EXPECT_FALSE(p.handle_turn_end(1, kPool, r, PoolView{}, at(1ms)).has_value());
  auto f = fails(p);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].batch, 100u);
  EXPECT_EQ(f[1].batch, 101u);
  EXPECT_FALSE(p.is_open(1));
  EXPECT_TRUE(p.handle_released(1));  // nothing left behind
  EXPECT_TRUE(fails(p).empty());
}

TEST(Pipeline, ReleaseFailsFollowers) {
  Pipeline p;
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_joined(1, 100, 1, true);
  EXPECT_FALSE(p.handle_released(1));
  EXPECT_EQ(fails(p).size(), 1u);
  EXPECT_FALSE(p.knows(1));
  EXPECT_TRUE(join_list(p, kPool, PoolView{}, at(0s)).empty());
}

TEST(Pipeline, CancelOnlyWithoutFollowers) {
  Pipeline p;
  EXPECT_TRUE(p.may_cancel(1));
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  EXPECT_TRUE(p.may_cancel(1));
  p.handle_joined(1, 100, 1, true);
  EXPECT_FALSE(p.may_cancel(1));
  ASSERT_EQ(p.handle_turn_end(1, kPool, clean_turn(at(0s)), PoolView{}, at(0s)), 100u);
  EXPECT_TRUE(p.may_cancel(1));
}

TEST(Pipeline, HeadFlush) {
  Pipeline p;
  PoolView alone, queued, off;
  queued.clients_waiting = true;
  off.pipeline = false;
  off.clients_waiting = true;
  // Nobody waits for it yet: patience at a time, asking again (one may queue).
  EXPECT_EQ(p.head_flush(1, alone, false, 0), HeadFlush::watch);
  // Clients in the pool's queue wait for its connection as followers do.
  EXPECT_EQ(p.head_flush(1, queued, false, 0), HeadFlush::with_patience);
  EXPECT_EQ(p.head_flush(1, off, false, 0), HeadFlush::wait);
  EXPECT_EQ(p.head_flush(1, queued, true, p.limits().max_read_ahead), HeadFlush::wait);
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_joined(1, 100, 1, true);
  EXPECT_EQ(p.head_flush(1, alone, false, 10), HeadFlush::with_patience);
  EXPECT_EQ(p.head_flush(1, alone, true, p.limits().max_read_ahead - 1), HeadFlush::wait);
  EXPECT_EQ(p.head_flush(1, alone, true, p.limits().max_read_ahead), HeadFlush::disconnect);
}

TEST(Pipeline, SlowShapeNeedsOthersProgressAndFadesBelowFastAgain) {
  Pipeline p;
  PoolView v;
  TurnReport r = clean_turn(at(0s), 42);
  // Slow while nothing else ran: a stalled machine, not a slow statement.
  r.progress = p.limits().slow_progress - 1;
  (void)p.handle_turn_end(1, kPool, r, v, at(500ms));
  EXPECT_FALSE(p.shape_slow(kPool, 42));
  r.progress = p.limits().slow_progress;
  (void)p.handle_turn_end(1, kPool, r, v, at(500ms));
  EXPECT_TRUE(p.shape_slow(kPool, 42));
  EXPECT_FALSE(p.shape_slow(kOther, 42));
  bool logged = false;
  while (auto a = p.poll_action())
    logged = logged || std::holds_alternative<ShapeSlow>(*a);
  EXPECT_TRUE(logged);
  EXPECT_FALSE(p.handle_turn_began(2, kPool, 42, false, at(0s)));  // no train behind it
  // Fast turns bring the average down until it is forgotten.
  for (int i = 0; i < 200 && p.shape_slow(kPool, 42); ++i)
    (void)p.handle_turn_end(1, kPool, r, v, at(100us));
  EXPECT_FALSE(p.shape_slow(kPool, 42));
}

TEST(Pipeline, FollowerOfASlowShapeClosesTheTrain) {
  Pipeline p;
  PoolView v;
  TurnReport slow = clean_turn(at(0s), 42);
  slow.progress = 1000;
  (void)p.handle_turn_end(9, kPool, slow, v, at(500ms));
  ASSERT_TRUE(p.shape_slow(kPool, 42));
  ASSERT_TRUE(p.handle_turn_began(1, kPool, 1, false, at(0s)));
  p.handle_joined(1, 100, 42, true);
  ASSERT_EQ(p.handle_turn_end(1, kPool, clean_turn(at(0s)), v, at(0s)), 100u);
  EXPECT_FALSE(p.is_open(1));
}

TEST(Pipeline, SlowBatchPausesThePoolOnce) {
  Pipeline p;
  PoolView v;
  TurnReport r = clean_turn(at(0s), 5);
  r.plain = false;  // transaction control: shape not noted, the pause still applies
  r.progress = p.limits().slow_progress;
  (void)p.handle_turn_end(1, kPool, r, v, at(1s + 1ms));
  auto a = p.poll_action();
  ASSERT_TRUE(a.has_value());
  auto* pause = std::get_if<Pause>(&*a);
  ASSERT_NE(pause, nullptr);
  EXPECT_EQ(pause->until, at(1s + 1ms) + p.limits().slow_pause);
  EXPECT_FALSE(p.poll_action().has_value());
  v.paused_until = pause->until;  // already paused: not again
  (void)p.handle_turn_end(1, kPool, r, v, at(1s + 2ms));
  EXPECT_FALSE(p.poll_action().has_value());
}

TEST(Pipeline, UnansweredTurnWithoutFollowerNotesNothing) {
  Pipeline p;
  TurnReport r = clean_turn(at(0s), 5);
  r.answered = false;
  r.clean = false;
  r.progress = 1000;
  (void)p.handle_turn_end(1, kPool, r, PoolView{}, at(5s));
  EXPECT_FALSE(p.poll_action().has_value());
  EXPECT_FALSE(p.shape_slow(kPool, 5));
}

}  // namespace
}  // namespace wirepool::pool
