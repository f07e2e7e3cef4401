// Deterministic unit tests of pool::Pool, one transition or rule per test:
//  - to_string names every RejectReason and CloseReason;
//  - construction opens `min` eagerly (clamped to `max`);
//  - acquire: opens one connection per waiter beyond idle ones, never above max;
//    grants an idle connection at once, the most recently used one (LIFO);
//    try_acquire grants the same one without an action, never ahead of a waiter,
//    closes retired idle connections on the way, and refuses after shutdown;
//    waits for a resetting connection instead of opening;
//  - grants are FIFO; a released connection serves the next waiter;
//  - release: unhealthy -> Close unhealthy; in transaction / failed -> Close not_idle;
//    older than max_lifetime -> Close max_lifetime and a replacement Open for waiters
//    (at once under max, after handle_closed at max); max_lifetime zero = unlimited;
//  - idle connections past max_lifetime are closed by handle_timeout and never granted;
//  - reset_on_release: Reset, idle only after reset_done(ok); reset_done(!ok) -> reset_failed;
//  - timeouts: a waiter is rejected at its deadline, not before; next_deadline is the
//    earliest waiter / idle-close / lifetime deadline, idle ones only above min;
//  - idle_timeout closes idle connections above min, longest idle first; zero = never;
//  - min is restored after closes, including an idle connection found dead;
//  - open failure: rejects all waiters when nothing else can serve them, keeps them
//    otherwise, never reopens within the same call, retries on a later event;
//  - back-off: no Open before retry_at (100 ms, doubled per failed attempt up to
//    backoff_max, failures of one round double it once), then one at a time;
//    waiters with nothing live are answered from the last failure; a success
//    forgets it and opens for every waiter; a 10 s outage with 32 clients
//    asking every 10 ms makes 14 attempts;
//  - cancel drops a waiter silently;
//  - shutdown: rejects waiters, closes idle now and the rest on release / open / reset,
//    rejects later acquires, opens nothing; idempotent;
//  - reconnect: idle closed now, busy on release, opening once opened;
//  - reconfigure: lower max closes surplus idle now and busy on release; higher max
//    opens for waiters; higher min opens eagerly;
//  - stats fill every field (longest_wait from `now`);
//  - events for unknown connections or in the wrong state are ignored.

#include "pool/pool.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/pool/describe.hpp"

namespace wirepool::pool {
namespace {

using namespace std::chrono_literals;
using test::drain;
using Actions = std::vector<std::string>;

const TimePoint t0 = TimePoint{} + 1h;

Config limits(size_t min, size_t max) {
  Config c;
  c.min = min;
  c.max = max;
  return c;
}

class PoolTest : public ::testing::Test {
 protected:
  /// Creates the pool; returns what the constructor queued.
  Actions start(Config c) {
    pool_.emplace(c);
    return drain(*pool_);
  }
  Pool& pool() { return *pool_; }

  /// A pool of at most `max` with reset_on_release, whose c1 served w1 and is
  /// now resetting after its release.
  void start_with_c1_resetting(size_t max) {
    Config c = limits(0, max);
    c.reset_on_release = true;
    start(c);
    acquire(1);
    opened(1);
    EXPECT_EQ(release(1), Actions{"reset c1"});
  }

  Actions acquire(WaiterId w) {
    return act([&] { pool_->handle_acquire(w, now_); });
  }
  Actions acquire_pipelined(WaiterId w) {
    return act([&] { pool_->handle_acquire(w, now_, true); });
  }
  Actions cancel(WaiterId w) {
    return act([&] { pool_->handle_cancel(w, now_); });
  }
  Actions opened(ConnId c) {
    return act([&] { pool_->handle_opened(c, now_); });
  }
  Actions open_failed(ConnId c) {
    return act([&] { pool_->handle_open_failed(c, now_); });
  }
  Actions release(ConnId c, bool healthy = true, TxState tx = TxState::idle) {
    return act([&] { pool_->handle_release(c, healthy, tx, now_); });
  }
  Actions reset_done(ConnId c, bool ok) {
    return act([&] { pool_->handle_reset_done(c, ok, now_); });
  }
  Actions closed(ConnId c) {
    return act([&] { pool_->handle_closed(c, now_); });
  }
  Actions timeout() {
    return act([&] { pool_->handle_timeout(now_); });
  }
  Actions reconfigure(Config c) {
    return act([&] { pool_->reconfigure(c, now_); });
  }
  Actions reconnect() {
    return act([&] { pool_->reconnect(now_); });
  }
  Actions shutdown() {
    return act([&] { pool_->shutdown(now_); });
  }

  /// Brings up connections c1..cn and leaves them idle, cn the most recently used.
  void warm(size_t n) {
    for (size_t i = 1; i <= n; ++i)
      acquire(900 + i);
    for (size_t i = 1; i <= n; ++i)
      opened(i);
    for (size_t i = 1; i <= n; ++i)
      release(i);
    ASSERT_EQ(pool().stats(now_).idle, n);
  }

  template <typename F>
  Actions act(F&& f) {
    f();
    return drain(*pool_);
  }

  std::optional<Pool> pool_;
  TimePoint now_ = t0;
};

TEST(PoolToString, NamesEveryReason) {
  EXPECT_EQ(to_string(RejectReason::timeout), "timeout");
  EXPECT_EQ(to_string(RejectReason::open_failed), "open_failed");
  EXPECT_EQ(to_string(RejectReason::shutdown), "shutdown");
  EXPECT_EQ(to_string(RejectReason::paused), "paused");
  EXPECT_EQ(to_string(CloseReason::unhealthy), "unhealthy");
  EXPECT_EQ(to_string(CloseReason::not_idle), "not_idle");
  EXPECT_EQ(to_string(CloseReason::max_lifetime), "max_lifetime");
  EXPECT_EQ(to_string(CloseReason::idle_timeout), "idle_timeout");
  EXPECT_EQ(to_string(CloseReason::reset_failed), "reset_failed");
  EXPECT_EQ(to_string(CloseReason::shutdown), "shutdown");
  EXPECT_EQ(to_string(CloseReason::reconnect), "reconnect");
  EXPECT_EQ(to_string(CloseReason::surplus), "surplus");
}

// ---- construction and acquire --------------------------------------------------

TEST_F(PoolTest, ConstructionOpensMinConnectionsEagerly) {
  EXPECT_EQ(start(limits(2, 4)), (Actions{"open c1", "open c2"}));
  EXPECT_EQ(pool().stats(now_).opening, 2u);
}

TEST_F(PoolTest, MinAboveMaxIsClampedToMax) {
  EXPECT_EQ(start(limits(5, 2)), (Actions{"open c1", "open c2"}));
}

TEST_F(PoolTest, AcquireOnEmptyPoolOpensOneConnectionAndGrantsItOnceOpened) {
  EXPECT_EQ(start(limits(0, 4)), Actions{});
  EXPECT_EQ(acquire(1), Actions{"open c1"});
  EXPECT_EQ(opened(1), Actions{"grant w1 c1"});
}

TEST_F(PoolTest, AcquireWithIdleConnectionGrantsAtOnceWithoutOpening) {
  start(limits(0, 4));
  warm(1);
  EXPECT_EQ(acquire(1), Actions{"grant w1 c1"});
}

TEST_F(PoolTest, AcquireGrantsMostRecentlyUsedIdleConnection) {
  start(limits(0, 4));
  warm(3);
  EXPECT_EQ(acquire(1), Actions{"grant w1 c3"});
  EXPECT_EQ(acquire(2), Actions{"grant w2 c2"});
  EXPECT_EQ(release(3), Actions{});
  EXPECT_EQ(acquire(3), Actions{"grant w3 c3"});
}

TEST_F(PoolTest, AcquireOpensOneConnectionPerWaiterBeyondIdleOnes) {
  start(limits(0, 10));
  warm(1);
  EXPECT_EQ(acquire(1), Actions{"grant w1 c1"});
  EXPECT_EQ(acquire(2), Actions{"open c2"});
  EXPECT_EQ(acquire(3), Actions{"open c3"});
  EXPECT_EQ(opened(2), Actions{"grant w2 c2"});
  EXPECT_EQ(opened(3), Actions{"grant w3 c3"});
  EXPECT_EQ(pool().stats(now_).opening, 0u);
}

TEST_F(PoolTest, AcquireNeverOpensAboveMax) {
  start(limits(0, 2));
  EXPECT_EQ(acquire(1), Actions{"open c1"});
  EXPECT_EQ(acquire(2), Actions{"open c2"});
  EXPECT_EQ(acquire(3), Actions{});
  EXPECT_EQ(acquire(4), Actions{});
  EXPECT_EQ(pool().stats(now_).waiting, 4u);
}

TEST_F(PoolTest, AcquireWaitsForResettingConnectionInsteadOfOpening) {
  start_with_c1_resetting(4);
  EXPECT_EQ(acquire(2), Actions{});
  EXPECT_EQ(reset_done(1, true), Actions{"grant w2 c1"});
}

TEST_F(PoolTest, GrantsAreFifoAndReleasedConnectionServesNextWaiter) {
  start(limits(0, 1));
  EXPECT_EQ(acquire(1), Actions{"open c1"});
  EXPECT_EQ(acquire(2), Actions{});
  EXPECT_EQ(acquire(3), Actions{});
  EXPECT_EQ(opened(1), Actions{"grant w1 c1"});
  EXPECT_EQ(release(1), Actions{"grant w2 c1"});
  EXPECT_EQ(release(1), Actions{"grant w3 c1"});
  EXPECT_EQ(release(1), Actions{});
  EXPECT_EQ(pool().stats(now_).idle, 1u);
}

TEST_F(PoolTest, TryAcquireGrantsMostRecentlyUsedIdleConnectionWithoutAnAction) {
  start(limits(0, 4));
  warm(2);
  EXPECT_EQ(pool().try_acquire(now_), std::optional<ConnId>(2));
  EXPECT_FALSE(pool().has_actions());
  EXPECT_EQ(pool().try_acquire(now_), std::optional<ConnId>(1));
  EXPECT_EQ(pool().try_acquire(now_), std::nullopt);  // nothing idle: acquire waits
  EXPECT_EQ(pool().stats(now_).in_use, 2u);
  EXPECT_EQ(pool().stats(now_).granted_total, 4u);  // warm(2)'s two and these two
  EXPECT_EQ(release(2), Actions{});
  EXPECT_EQ(pool().try_acquire(now_), std::optional<ConnId>(2));
}

TEST_F(PoolTest, TryAcquireNeverJumpsTheQueue) {
  start(limits(0, 1));
  EXPECT_EQ(acquire(1), Actions{"open c1"});
  EXPECT_EQ(acquire(2), Actions{});
  EXPECT_EQ(opened(1), Actions{"grant w1 c1"});
  // w2 waits: the connection w1 gives back is w2's, not an immediate grant's.
  EXPECT_EQ(pool().try_acquire(now_), std::nullopt);
  EXPECT_EQ(release(1), Actions{"grant w2 c1"});
}

TEST_F(PoolTest, TryAcquireClosesRetiredIdleConnectionsAndRefusesAfterShutdown) {
  Config c = limits(0, 2);
  c.max_lifetime = 1h;
  c.idle_timeout = Duration::zero();
  start(c);
  warm(1);
  now_ += 2h;
  EXPECT_EQ(pool().try_acquire(now_), std::nullopt);
  EXPECT_EQ(drain(pool()), Actions{"close c1 max_lifetime"});
  start(limits(0, 2));
  warm(1);
  EXPECT_EQ(act([&] { pool().shutdown(now_); }), Actions{"close c1 shutdown"});
  EXPECT_EQ(pool().try_acquire(now_), std::nullopt);
}

// ---- release -------------------------------------------------------------------

TEST_F(PoolTest, ReleaseUnhealthyClosesAndOpensReplacementForWaiterUnderMax) {
  start(limits(0, 2));
  warm(1);
  acquire(1);
  EXPECT_EQ(acquire(2), Actions{"open c2"});
  EXPECT_EQ(acquire(3), Actions{});
  EXPECT_EQ(release(1, false), (Actions{"close c1 unhealthy"}));  // at max: c1 closing, c2 opening
  EXPECT_EQ(closed(1), Actions{"open c3"});
}

TEST_F(PoolTest, ReleaseInTransactionOrFailedTransactionClosesNotIdle) {
  start(limits(0, 4));
  warm(2);
  acquire(1);
  acquire(2);
  EXPECT_EQ(release(2, true, TxState::in_transaction), Actions{"close c2 not_idle"});
  EXPECT_EQ(release(1, true, TxState::failed), Actions{"close c1 not_idle"});
}

TEST_F(PoolTest, ReleaseOlderThanMaxLifetimeClosesAndAtMaxOpensReplacementAfterClose) {
  Config c = limits(0, 2);
  c.max_lifetime = 1h;
  start(c);
  acquire(1);
  opened(1);
  acquire(2);  // opens c2
  now_ += 59min;
  EXPECT_EQ(release(1), Actions{"grant w2 c1"});  // young enough
  acquire(3);
  now_ += 1min;
  opened(2);  // granted to w3
  EXPECT_EQ(acquire(4), Actions{});
  EXPECT_EQ(release(1), (Actions{"close c1 max_lifetime"}));  // at max: wait for the close
  EXPECT_EQ(closed(1), Actions{"open c3"});
}

TEST_F(PoolTest, ReleaseOlderThanMaxLifetimeOpensReplacementAtOnceWhenUnderMax) {
  Config c = limits(0, 3);
  c.max_lifetime = 1h;
  start(c);
  acquire(1);
  opened(1);
  acquire(2);
  acquire(3);
  EXPECT_EQ(pool().stats(now_).opening, 2u);
  open_failed(2);
  open_failed(3);  // c1 in use: w2, w3 keep waiting
  now_ += 1h;
  // The opens failed: one attempt at a time until one succeeds.
  EXPECT_EQ(release(1), (Actions{"close c1 max_lifetime", "open c4"}));
  EXPECT_EQ(opened(4), (Actions{"grant w2 c4", "open c5"}));
}

TEST_F(PoolTest, MaxLifetimeZeroMeansUnlimited) {
  Config c = limits(0, 1);
  c.max_lifetime = Duration::zero();
  start(c);
  acquire(1);
  opened(1);
  acquire(2);
  now_ += 10000h;
  EXPECT_EQ(release(1), Actions{"grant w2 c1"});
}

TEST_F(PoolTest, IdleConnectionPastMaxLifetimeIsClosedByTimeoutAndMinRestored) {
  Config c = limits(1, 2);
  c.max_lifetime = 1h;
  start(c);
  opened(1);
  EXPECT_EQ(pool().next_deadline(), t0 + 1h);  // at min: no idle deadline, only the lifetime
  now_ += 1h;
  EXPECT_EQ(timeout(), (Actions{"close c1 max_lifetime", "open c2"}));
}

TEST_F(PoolTest, IdleConnectionPastMaxLifetimeIsNeverGranted) {
  Config c = limits(0, 2);
  c.max_lifetime = 1h;
  c.idle_timeout = Duration::zero();
  start(c);
  warm(1);
  now_ += 2h;  // handle_timeout not called yet
  EXPECT_EQ(acquire(1), (Actions{"close c1 max_lifetime", "open c2"}));
}

// ---- reset on release ----------------------------------------------------------

TEST_F(PoolTest, ResetOnReleaseMakesConnectionIdleOnlyAfterResetSucceeds) {
  start_with_c1_resetting(4);
  EXPECT_EQ(pool().stats(now_).resetting, 1u);
  EXPECT_EQ(pool().stats(now_).idle, 0u);
  EXPECT_EQ(reset_done(1, true), Actions{});
  EXPECT_EQ(pool().stats(now_).idle, 1u);
  EXPECT_EQ(acquire(2), Actions{"grant w2 c1"});
}

TEST_F(PoolTest, ResetFailureClosesResetFailedAndOpensForWaiter) {
  start_with_c1_resetting(2);
  EXPECT_EQ(acquire(2), Actions{});
  EXPECT_EQ(reset_done(1, false), (Actions{"close c1 reset_failed", "open c2"}));
}

// ---- deadlines -----------------------------------------------------------------

TEST_F(PoolTest, WaiterIsRejectedAtItsDeadlineNotBefore) {
  Config c = limits(0, 1);
  c.acquire_timeout = 5s;
  start(c);
  acquire(1);
  opened(1);
  now_ += 1s;
  acquire(2);
  EXPECT_EQ(pool().next_deadline(), t0 + 6s);
  now_ = t0 + 6s - 1ns;
  EXPECT_EQ(timeout(), Actions{});
  now_ = t0 + 6s;
  EXPECT_EQ(timeout(), Actions{"reject w2 timeout"});
  EXPECT_EQ(pool().stats(now_).rejected_timeout_total, 1u);
}

TEST_F(PoolTest, NextDeadlineIsNulloptWhenNothingIsDue) {
  Config c = limits(0, 2);
  c.max_lifetime = Duration::zero();
  start(c);
  EXPECT_EQ(pool().next_deadline(), std::nullopt);
  acquire(1);
  EXPECT_EQ(pool().next_deadline(), t0 + c.acquire_timeout);
  opened(1);
  EXPECT_EQ(pool().next_deadline(), std::nullopt);  // in use: nothing due
}

TEST_F(PoolTest, IdleTimeoutClosesIdleAboveMinLongestIdleFirst) {
  Config c = limits(0, 4);
  c.idle_timeout = 10min;
  c.max_lifetime = Duration::zero();
  start(c);
  for (WaiterId w = 1; w <= 3; ++w)
    acquire(w);
  for (ConnId id = 1; id <= 3; ++id)
    opened(id);
  release(1);
  now_ += 1min;
  release(2);
  now_ += 1min;
  release(3);
  EXPECT_EQ(pool().next_deadline(), t0 + 10min);
  now_ = t0 + 10min - 1ns;
  EXPECT_EQ(timeout(), Actions{});
  now_ = t0 + 11min;
  EXPECT_EQ(timeout(), (Actions{"close c1 idle_timeout", "close c2 idle_timeout"}));
  EXPECT_EQ(pool().next_deadline(), t0 + 12min);
}

TEST_F(PoolTest, IdleTimeoutKeepsMinConnections) {
  Config c = limits(1, 4);
  c.idle_timeout = 10min;
  c.max_lifetime = Duration::zero();
  start(c);
  acquire(1);  // c1 is the min connection, already opening
  acquire(2);
  opened(1);
  opened(2);
  release(1);
  release(2);
  now_ += 10min;
  EXPECT_EQ(timeout(), Actions{"close c1 idle_timeout"});
  EXPECT_EQ(pool().stats(now_).idle, 1u);
  EXPECT_EQ(pool().next_deadline(), std::nullopt);  // at min: c2 stays
  now_ += 1h;
  EXPECT_EQ(timeout(), Actions{});
}

TEST_F(PoolTest, IdleTimeoutZeroNeverCloses) {
  Config c = limits(0, 4);
  c.idle_timeout = Duration::zero();
  c.max_lifetime = Duration::zero();
  start(c);
  warm(2);
  EXPECT_EQ(pool().next_deadline(), std::nullopt);
  now_ += 1000h;
  EXPECT_EQ(timeout(), Actions{});
}

TEST_F(PoolTest, MinIsRestoredAfterClose) {
  start(limits(2, 4));
  opened(1);
  opened(2);
  EXPECT_EQ(acquire(1), Actions{"grant w1 c2"});
  EXPECT_EQ(release(2, false), (Actions{"close c2 unhealthy", "open c3"}));
}

TEST_F(PoolTest, IdleConnectionFoundDeadIsForgottenAndMinRestored) {
  start(limits(1, 1));
  opened(1);
  EXPECT_EQ(closed(1), Actions{"open c2"});
  EXPECT_EQ(pool().stats(now_).closed_total, 1u);
}

// ---- open failure ------------------------------------------------------------------

TEST_F(PoolTest, OpenFailureWithNothingElseToWaitForRejectsAllWaiters) {
  start(limits(0, 4));
  acquire(1);
  acquire(2);
  EXPECT_EQ(open_failed(1), Actions{});  // c2 still opening
  EXPECT_EQ(open_failed(2), (Actions{"reject w1 open_failed", "reject w2 open_failed"}));
  Stats s = pool().stats(now_);
  EXPECT_EQ(s.open_failed_total, 2u);
  EXPECT_EQ(s.rejected_other_total, 2u);
  EXPECT_EQ(s.waiting, 0u);
}

TEST_F(PoolTest, OpenFailureWhileConnectionInUseKeepsWaitersAndRetriesOnLaterEvent) {
  start(limits(0, 2));
  acquire(1);
  opened(1);
  EXPECT_EQ(acquire(2), Actions{"open c2"});
  EXPECT_EQ(open_failed(2), Actions{});  // no reopen within the same call
  now_ += 1s;
  EXPECT_EQ(timeout(), Actions{"open c3"});
  EXPECT_EQ(release(1), Actions{"grant w2 c1"});
}

TEST_F(PoolTest, OpenFailureNeverReopensForMinInTheSameCall) {
  start(limits(2, 2));
  EXPECT_EQ(open_failed(1), Actions{});
  EXPECT_EQ(open_failed(2), Actions{});
  // Backing off: answered from the last failure, no attempt of its own.
  EXPECT_EQ(acquire(1), Actions{"reject w1 open_failed"});
  EXPECT_EQ(pool().next_deadline(), now_ + 100ms);
  now_ += 100ms;
  EXPECT_EQ(timeout(), Actions{"open c3"});  // one attempt (for min)
  EXPECT_EQ(opened(3), Actions{"open c4"});  // success: min in full
}

TEST_F(PoolTest, BackoffDoublesPerFailedAttemptUpToItsMaximum) {
  Config c = limits(0, 4);
  c.backoff_max = 500ms;
  start(c);
  acquire(1);
  EXPECT_EQ(open_failed(1), Actions{"reject w1 open_failed"});
  const std::vector<Duration> waits = {100ms, 200ms, 400ms, 500ms, 500ms};
  ConnId next = 2;
  for (Duration wait : waits) {
    EXPECT_EQ(pool().retry_at(), now_ + wait);
    now_ += wait - 1ms;
    EXPECT_EQ(acquire(next), Actions{"reject w" + std::to_string(next) + " open_failed"});
    now_ += 1ms;
    EXPECT_EQ(acquire(next + 100), Actions{"open c" + std::to_string(next)});
    EXPECT_EQ(open_failed(next), Actions{"reject w" + std::to_string(next + 100) + " open_failed"});
    ++next;
  }
  now_ += 500ms;
  acquire(50);
  EXPECT_EQ(opened(next), Actions{"grant w50 c" + std::to_string(next)});
  EXPECT_EQ(pool().retry_at(), std::nullopt);  // forgotten: the next failure waits 100 ms
}

TEST_F(PoolTest, FailuresOfOneRoundDoubleTheWaitOnce) {
  start(limits(0, 4));
  acquire(1);
  acquire(2);
  acquire(3);  // c1..c3 opening
  open_failed(1);
  now_ += 50ms;
  open_failed(2);
  EXPECT_EQ(open_failed(3),
            (Actions{"reject w1 open_failed", "reject w2 open_failed", "reject w3 open_failed"}));
  EXPECT_EQ(pool().retry_at(), t0 + 100ms);  // set by the first, kept by the others
}

TEST_F(PoolTest, WaitersDuringBackoffWaitForABusyConnectionAndASuccessOpensForAll) {
  start(limits(0, 4));
  acquire(1);
  opened(1);  // w1 holds c1
  acquire(2);
  EXPECT_EQ(open_failed(2), Actions{});  // c1 in use: w2 keeps waiting
  EXPECT_EQ(acquire(3), Actions{});      // backing off: no attempt
  now_ += 100ms;
  EXPECT_EQ(timeout(), Actions{"open c3"});  // one attempt for both
  EXPECT_EQ(acquire(4), Actions{});
  EXPECT_EQ(opened(3), (Actions{"grant w2 c3", "open c4", "open c5"}));
}

TEST_F(PoolTest, TenSecondOutageWith32ClientsMakesFewAttempts) {
  Config c = limits(0, 8);
  c.acquire_timeout = 5s;
  start(c);
  size_t opens = 0, rejects = 0;
  std::vector<ConnId> opening;
  WaiterId w = 1;
  const TimePoint end = now_ + 10s;
  while (now_ < end) {
    for (int i = 0; i < 32; ++i) {
      for (const std::string& a : acquire(w++)) {
        if (a.starts_with("open c")) opening.push_back(std::stoull(a.substr(6)));
        if (a.starts_with("open")) ++opens;
        if (a.starts_with("reject")) ++rejects;
      }
    }
    now_ += 5ms;  // every attempt fails 5 ms after it starts
    for (ConnId id : opening)
      for (const std::string& a : open_failed(id))
        rejects += a.starts_with("reject") ? 1 : 0;
    opening.clear();
    for (const std::string& a : timeout()) {
      if (a.starts_with("open c")) opening.push_back(std::stoull(a.substr(6)));
      if (a.starts_with("open")) ++opens;
    }
    now_ += 5ms;
  }
  // Up to max (8) at first, before anything failed; then one after each
  // wait of 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s and then 5 s: 14 in 10 s (without
  // back-off: one per acquire beyond those opening, thousands).
  EXPECT_EQ(opens, 14u);
  EXPECT_EQ(rejects, static_cast<size_t>(w - 1));  // every client answered, none left waiting
}

// ---- cancel --------------------------------------------------------------------

TEST_F(PoolTest, CancelDropsWaiterSilently) {
  start(limits(0, 1));
  acquire(1);
  opened(1);
  acquire(2);
  acquire(3);
  EXPECT_EQ(cancel(2), Actions{});
  EXPECT_EQ(cancel(42), Actions{});  // unknown: no-op
  EXPECT_EQ(release(1), Actions{"grant w3 c1"});
}

TEST_F(PoolTest, CancelledWaiterLeavesItsOpeningConnectionIdle) {
  start(limits(0, 1));
  acquire(1);
  EXPECT_EQ(cancel(1), Actions{});
  EXPECT_EQ(opened(1), Actions{});
  EXPECT_EQ(pool().stats(now_).idle, 1u);
}

// ---- shutdown --------------------------------------------------------------------

TEST_F(PoolTest, ShutdownRejectsWaitersAndClosesIdleNowAndBusyOnRelease) {
  start(limits(0, 2));
  warm(2);
  acquire(1);  // c2
  EXPECT_EQ(shutdown(), Actions{"close c1 shutdown"});
  EXPECT_TRUE(pool().is_shut_down());
  EXPECT_EQ(release(2), Actions{"close c2 shutdown"});
  EXPECT_EQ(closed(1), Actions{});
  EXPECT_EQ(closed(2), Actions{});
}

TEST_F(PoolTest, ShutdownRejectsWaitersClosesOpeningOnesOnceOpenedAndOpensNothing) {
  start(limits(1, 1));
  acquire(1);
  acquire(2);
  EXPECT_EQ(shutdown(), (Actions{"reject w1 shutdown", "reject w2 shutdown"}));
  EXPECT_EQ(shutdown(), Actions{});  // idempotent
  EXPECT_EQ(opened(1), Actions{"close c1 shutdown"});
  EXPECT_EQ(closed(1), Actions{});  // min is not restored
  EXPECT_EQ(acquire(3), Actions{"reject w3 shutdown"});
  EXPECT_EQ(pool().stats(now_).rejected_other_total, 3u);
}

TEST_F(PoolTest, ShutdownClosesResettingConnectionWhenResetEnds) {
  start_with_c1_resetting(1);
  EXPECT_EQ(shutdown(), Actions{});
  EXPECT_EQ(reset_done(1, true), Actions{"close c1 shutdown"});
}

// ---- reconnect -------------------------------------------------------------------

TEST_F(PoolTest, ReconnectClosesIdleNowAndBusyOnRelease) {
  start(limits(0, 4));
  warm(2);
  acquire(1);  // c2
  EXPECT_EQ(reconnect(), Actions{"close c1 reconnect"});
  EXPECT_EQ(release(2), Actions{"close c2 reconnect"});
  EXPECT_EQ(acquire(2), Actions{"open c3"});
  EXPECT_EQ(opened(3), Actions{"grant w2 c3"});
  EXPECT_EQ(release(3), Actions{});  // opened after reconnect: kept
  EXPECT_EQ(pool().stats(now_).idle, 1u);
}

TEST_F(PoolTest, ReconnectClosesOpeningConnectionOnceOpened) {
  start(limits(0, 2));
  acquire(1);
  EXPECT_EQ(reconnect(), Actions{});
  EXPECT_EQ(opened(1), (Actions{"close c1 reconnect", "open c2"}));
}

// ---- reconfigure -------------------------------------------------------------------

TEST_F(PoolTest, LoweringMaxClosesSurplusIdleLeastRecentlyUsedFirst) {
  start(limits(0, 3));
  warm(3);
  EXPECT_EQ(reconfigure(limits(0, 1)), (Actions{"close c1 reconnect", "close c2 reconnect"}));
  EXPECT_EQ(acquire(1), Actions{"grant w1 c3"});
}

TEST_F(PoolTest, LoweringMaxClosesBusyConnectionsOnReleaseWhileAboveMax) {
  start(limits(0, 3));
  warm(3);
  acquire(1);
  acquire(2);
  acquire(3);
  acquire(4);  // waits: at max
  EXPECT_EQ(reconfigure(limits(0, 1)), Actions{});
  EXPECT_EQ(release(3), Actions{"close c3 reconnect"});
  EXPECT_EQ(release(2), Actions{"close c2 reconnect"});
  EXPECT_EQ(release(1), Actions{"grant w4 c1"});
  EXPECT_EQ(closed(3), Actions{});
  EXPECT_EQ(closed(2), Actions{});
  EXPECT_EQ(acquire(5), Actions{});  // one connection, in use: wait
}

TEST_F(PoolTest, RaisingMaxOpensForWaiters) {
  start(limits(0, 1));
  acquire(1);
  opened(1);
  acquire(2);
  acquire(3);
  EXPECT_EQ(reconfigure(limits(0, 3)), (Actions{"open c2", "open c3"}));
}

TEST_F(PoolTest, RaisingMinOpensEagerly) {
  start(limits(0, 4));
  EXPECT_EQ(reconfigure(limits(2, 4)), (Actions{"open c1", "open c2"}));
}

// ---- stats and robustness ----------------------------------------------------------

TEST_F(PoolTest, StatsFillEveryField) {
  Config c = limits(0, 10);
  c.reset_on_release = true;
  c.acquire_timeout = 30s;
  start(c);
  for (WaiterId w = 1; w <= 3; ++w)
    acquire(w);
  for (ConnId id = 1; id <= 3; ++id)
    opened(id);
  release(1);           // resetting
  release(2, false);    // closing ...
  closed(2);            // ... gone
  release(3);           // resetting ...
  reset_done(3, true);  // ... idle
  acquire(4);           // granted c3
  now_ = t0 + 1s;
  EXPECT_EQ(acquire(5), Actions{});  // c1 resetting will serve it
  now_ = t0 + 2s;
  EXPECT_EQ(acquire(6), Actions{"open c4"});
  now_ = t0 + 3s;
  EXPECT_EQ(acquire(7), Actions{"open c5"});
  EXPECT_EQ(open_failed(5), Actions{});  // c4 still opening
  now_ = t0 + 31s;
  EXPECT_EQ(timeout(), Actions{"reject w5 timeout"});

  Stats s = pool().stats(t0 + 40s);
  EXPECT_EQ(s.opening, 1u);
  EXPECT_EQ(s.idle, 0u);
  EXPECT_EQ(s.in_use, 1u);
  EXPECT_EQ(s.resetting, 1u);
  EXPECT_EQ(s.closing, 0u);
  EXPECT_EQ(s.waiting, 2u);
  EXPECT_EQ(s.granted_total, 4u);
  EXPECT_EQ(s.rejected_timeout_total, 1u);
  EXPECT_EQ(s.rejected_other_total, 0u);
  EXPECT_EQ(s.opened_total, 3u);
  EXPECT_EQ(s.open_failed_total, 1u);
  EXPECT_EQ(s.closed_total, 1u);
  EXPECT_EQ(s.longest_wait, 38s);  // w6, waiting since t0 + 2s

  EXPECT_EQ(release(3, true, TxState::in_transaction), Actions{"close c3 not_idle"});
  s = pool().stats(t0 + 40s);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.closing, 1u);
}

TEST_F(PoolTest, EventsForUnknownConnectionsOrInWrongStateAreIgnored) {
  start(limits(0, 4));
  warm(1);
  acquire(1);  // c1 in use
  acquire(2);  // c2 opening
  const Stats before = pool().stats(now_);
  EXPECT_EQ(release(99), Actions{});
  EXPECT_EQ(release(2), Actions{});
  EXPECT_EQ(opened(1), Actions{});
  EXPECT_EQ(open_failed(1), Actions{});
  EXPECT_EQ(reset_done(1, true), Actions{});
  EXPECT_EQ(closed(1), Actions{});
  EXPECT_EQ(closed(2), Actions{});
  const Stats after = pool().stats(now_);
  EXPECT_EQ(after.opening, before.opening);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.closed_total, before.closed_total);
  EXPECT_EQ(after.opened_total, before.opened_total);
}

// ---- pipeline_max -----------------------------------------------------------------

Config pipelined_limits(size_t max, size_t pipeline_max) {
  Config c = limits(0, max);
  c.pipeline_max = pipeline_max;
  return c;
}

TEST_F(PoolTest, PipelinedWaitersOpenOnlyUpToPipelineMax) {
  start(pipelined_limits(10, 2));
  EXPECT_EQ(acquire_pipelined(1), Actions{"open c1"});
  EXPECT_EQ(acquire_pipelined(2), Actions{"open c2"});
  EXPECT_EQ(acquire_pipelined(3), Actions{});  // a train or a connection given back serves it
  EXPECT_EQ(opened(1), Actions{"grant w1 c1"});
  EXPECT_EQ(opened(2), Actions{"grant w2 c2"});
  EXPECT_EQ(release(1), Actions{"grant w3 c1"});
  EXPECT_EQ(pool().stats(now_).opened_total, 2u);
}

TEST_F(PoolTest, OtherWaitersStillOpenUpToMaxPastPipelineMax) {
  start(pipelined_limits(10, 1));
  EXPECT_EQ(acquire_pipelined(1), Actions{"open c1"});
  EXPECT_EQ(acquire_pipelined(2), Actions{});
  // A transaction to begin: not pipelined, so connections open until one comes
  // for it (FIFO still: they go to the waiters in order, w2's first).
  EXPECT_EQ(acquire(3), (Actions{"open c2", "open c3"}));
  EXPECT_EQ(opened(1), Actions{"grant w1 c1"});
  EXPECT_EQ(opened(2), Actions{"grant w2 c2"});
  EXPECT_EQ(opened(3), Actions{"grant w3 c3"});
}

TEST_F(PoolTest, CancelledPipelinedWaiterCountsAsProgressAndStuckQueueOpensOneAtATime) {
  start(pipelined_limits(10, 1));
  acquire_pipelined(1);
  opened(1);  // w1 holds c1, say in a long statement
  EXPECT_EQ(acquire_pipelined(2), Actions{});
  EXPECT_EQ(acquire_pipelined(3), Actions{});
  EXPECT_EQ(acquire_pipelined(4), Actions{});
  // A train took w2 (its owner cancels the pool's wait): progress.
  now_ += kPipelinePatience - 1ms;
  EXPECT_EQ(cancel(2), Actions{});
  EXPECT_EQ(pool().next_deadline(), now_ + kPipelinePatience);
  now_ += kPipelinePatience;
  // No progress for the patience: one connection opens past pipeline_max.
  EXPECT_EQ(timeout(), Actions{"open c2"});
  EXPECT_EQ(timeout(), Actions{});  // one at a time
  EXPECT_EQ(opened(2), Actions{"grant w3 c2"});
  EXPECT_EQ(timeout(), Actions{});  // the grant was progress
  now_ += kPipelinePatience;
  EXPECT_EQ(timeout(), Actions{"open c3"});
}

TEST_F(PoolTest, OpensPastPipelineMaxAreCountedAndNoOthers) {
  start(pipelined_limits(10, 1));
  acquire_pipelined(1);
  opened(1);
  acquire(2);  // a transaction: opens past pipeline_max, not for patience
  opened(2);
  EXPECT_EQ(pool().stats(now_).patience_opens_total, 0u);
  acquire_pipelined(3);
  now_ += kPipelinePatience;
  EXPECT_EQ(timeout(), Actions{"open c3"});
  EXPECT_EQ(pool().stats(now_).patience_opens_total, 1u);
  EXPECT_EQ(open_failed(3), Actions{});  // counted as the pool decided it, open or not
  EXPECT_EQ(pool().stats(now_).patience_opens_total, 1u);
  EXPECT_EQ(pool().stats(now_).opened_total, 2u);
}

TEST_F(PoolTest, SurplusConnectionGivenBackWhileOnlyPipelinedWaitersWaitIsClosed) {
  start(pipelined_limits(10, 1));
  acquire(1);
  acquire(2);
  opened(1);
  opened(2);  // two connections for transactions
  now_ += kPipelineSurplusQuiet;
  EXPECT_EQ(acquire_pipelined(3), Actions{});
  EXPECT_EQ(release(2), Actions{"close c2 surplus"});
  EXPECT_EQ(closed(2), Actions{});
  EXPECT_EQ(release(1), Actions{"grant w3 c1"});
}

TEST_F(PoolTest, SurplusClosesDownToPipelineMaxNotBelow) {
  start(pipelined_limits(10, 1));
  acquire(1);
  acquire(2);
  acquire(3);
  opened(1);
  opened(2);
  opened(3);
  now_ += kPipelineSurplusQuiet;
  acquire_pipelined(4);
  EXPECT_EQ(release(3), Actions{"close c3 surplus"});
  EXPECT_EQ(release(2), Actions{"close c2 surplus"});  // c3, closing, no longer counts
  EXPECT_EQ(release(1), Actions{"grant w4 c1"});
}

TEST_F(PoolTest, SurplusIsKeptWhileOtherWaitersCameRecentlyOrNobodyWaits) {
  start(pipelined_limits(10, 1));
  acquire(1);
  acquire(2);
  opened(1);
  opened(2);
  EXPECT_EQ(release(2), Actions{});  // nobody waits: idle, as ever
  EXPECT_EQ(acquire(3), Actions{"grant w3 c2"});
  EXPECT_EQ(acquire_pipelined(4), Actions{});
  // A transaction began less than kPipelineSurplusQuiet ago: more may follow.
  EXPECT_EQ(release(2), Actions{"grant w4 c2"});
}

TEST_F(PoolTest, NoPipelineMaxMeansPipelinedWaitersOpenUpToMax) {
  start(limits(0, 2));
  EXPECT_EQ(acquire_pipelined(1), Actions{"open c1"});
  EXPECT_EQ(acquire_pipelined(2), Actions{"open c2"});
  EXPECT_EQ(acquire_pipelined(3), Actions{});
  EXPECT_EQ(pool().next_deadline(), now_ + 5s);  // only the acquire timeout
}

}  // namespace
}  // namespace wirepool::pool
