// pool::HostSet, the choice of the primary among several hosts, on a simulated clock:
//  - the first read-write host is the primary; read-only hosts are standbys;
//  - an unreachable host is banned for ban_first, doubled per failure in a row up to
//    ban_max, not probed before its ban ends, and unbanned at its next answer;
//  - a failed open bans the primary and makes every other host due within
//    failover_interval; a standby promoted (read-write on a newer timeline) becomes
//    the primary at its next probe;
//  - a server read-write on an older timeline than one seen (a diverged old
//    primary) is never the primary, whether it comes back before or after the
//    new one is seen; a primary passed by a newer timeline is fenced at once;
//  - a second read-write host on the primary's own timeline does not take over;
//  - property (200 seeds x 2000 random probe answers, open failures and clock
//    steps): at most one primary, only on the newest timeline; no host is
//    handed out while in flight or before its due time; every idle host has a
//    due time no later than its ban; bans stay within [ban_first, ban_max].

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "pool/hosts.hpp"

namespace wirepool::pool {
namespace {

using namespace std::chrono_literals;
using K = ProbeResult::Kind;
using T = HostSet::TimePoint;

HostsConfig cfg() {
  HostsConfig c;
  c.check_interval = 1s;
  c.failover_interval = 200ms;
  c.ban_first = 1s;
  c.ban_max = 8s;
  return c;
}

ProbeResult rw(uint32_t tl) {
  return {K::read_write, tl};
}
ProbeResult ro() {
  return {K::read_only, 0};
}
ProbeResult down() {
  return {K::unreachable, 0};
}

bool has_event(const std::vector<HostEvent>& ev, HostEvent::Kind k, size_t host) {
  return std::any_of(ev.begin(), ev.end(),
                     [&](const HostEvent& e) { return e.kind == k && e.host == host; });
}

TEST(HostSet, FirstReadWriteHostIsThePrimaryAndReadOnlyOnesAreStandbys) {
  T now{};
  HostSet s(2, cfg(), now);
  EXPECT_EQ(s.take_due(now), (std::vector<size_t>{0, 1}));
  s.handle_probe(0, ro(), now);
  EXPECT_FALSE(s.primary());
  s.handle_probe(1, rw(1), now);
  EXPECT_EQ(s.primary(), 1u);
  EXPECT_EQ(s.state(0).role, HostRole::standby);
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::primary_changed, 1));
  EXPECT_TRUE(s.take_due(now).empty());
  // Host 0 answered while no primary was known: failover_interval; host 1 check_interval.
  EXPECT_EQ(s.next_deadline(), now + 200ms);
  now += 200ms;
  ASSERT_EQ(s.take_due(now), (std::vector<size_t>{0}));
  s.handle_probe(0, ro(), now);
  EXPECT_EQ(s.state(0).due, now + 1s);
}

TEST(HostSet, UnreachableHostIsBannedWithDoublingCappedBackoffAndUnbannedOnAnswer) {
  T now{};
  HostSet s(1, cfg(), now);
  std::vector<std::chrono::steady_clock::duration> bans;
  for (int i = 0; i < 6; ++i) {
    auto due = s.take_due(now);
    ASSERT_EQ(due.size(), 1u);
    s.handle_probe(0, down(), now);
    bans.push_back(s.state(0).ban);
    EXPECT_EQ(s.state(0).role, HostRole::banned);
    EXPECT_TRUE(s.take_due(now + s.state(0).ban - 1ms).empty()) << "probed during its ban";
    now += s.state(0).ban;
  }
  EXPECT_EQ(bans, (std::vector<std::chrono::steady_clock::duration>{1s, 2s, 4s, 8s, 8s, 8s}));
  ASSERT_EQ(s.take_due(now).size(), 1u);
  s.take_events();
  s.handle_probe(0, rw(1), now);
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::unbanned, 0));
  EXPECT_EQ(s.state(0).failures, 0u);
  EXPECT_EQ(s.primary(), 0u);
}

TEST(HostSet, PromotedStandbyBecomesPrimaryAfterThePrimaryFails) {
  T now{};
  HostSet s(2, cfg(), now);
  s.take_due(now);
  s.handle_probe(0, rw(1), now);
  s.handle_probe(1, ro(), now);
  ASSERT_EQ(s.primary(), 0u);
  now += 300ms;
  s.handle_open_failed(0, now);  // killed
  EXPECT_FALSE(s.primary());
  EXPECT_EQ(s.state(0).role, HostRole::banned);
  // The standby is re-probed within failover_interval, not check_interval.
  EXPECT_EQ(s.next_deadline(), now + 200ms);
  now += 200ms;
  EXPECT_EQ(s.take_due(now), (std::vector<size_t>{1}));
  s.handle_probe(1, ro(), now);  // not promoted yet
  now += 200ms;
  EXPECT_EQ(s.take_due(now), (std::vector<size_t>{1}));
  s.handle_probe(1, rw(2), now);  // promoted
  EXPECT_EQ(s.primary(), 1u);
  EXPECT_EQ(s.max_timeline(), 2u);
}

TEST(HostSet, DivergedOldPrimaryComingBackReadWriteIsNeverThePrimary) {
  T now{};
  HostSet s(2, cfg(), now);
  s.take_due(now);
  s.handle_probe(0, rw(1), now);
  s.handle_probe(1, ro(), now);
  s.handle_open_failed(0, now);
  now += 200ms;
  s.take_due(now);
  s.handle_probe(1, rw(2), now);
  ASSERT_EQ(s.primary(), 1u);
  s.take_events();
  // The old primary restarts on its old timeline, read-write.
  for (int i = 0; i < 5; ++i) {
    now += 10s;
    for (size_t h : s.take_due(now))
      s.handle_probe(h, h == 0 ? rw(1) : rw(2), now);
    EXPECT_EQ(s.primary(), 1u);
    EXPECT_EQ(s.state(0).role, HostRole::diverged);
  }
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::diverged, 0));
}

TEST(HostSet, DivergedServerSeenFirstIsFencedOnceTheNewerTimelineAnswers) {
  T now{};
  HostSet s(2, cfg(), now);
  s.take_due(now);
  s.handle_probe(0, rw(1), now);  // the diverged one answered first
  ASSERT_EQ(s.primary(), 0u);
  s.handle_probe(1, rw(2), now);
  EXPECT_EQ(s.primary(), 1u);
  EXPECT_EQ(s.state(0).role, HostRole::diverged);
  auto ev = s.take_events();
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::primary_lost, 0));
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::diverged, 0));
}

TEST(HostSet, SecondReadWriteHostOnThePrimarysTimelineDoesNotTakeOver) {
  T now{};
  HostSet s(2, cfg(), now);
  s.take_due(now);
  s.handle_probe(0, rw(3), now);
  s.handle_probe(1, rw(3), now);
  EXPECT_EQ(s.primary(), 0u);
  EXPECT_EQ(s.state(1).role, HostRole::diverged);
}

TEST(HostSet, OpenFailureOfAHostThatIsNotThePrimaryChangesNothing) {
  T now{};
  HostSet s(2, cfg(), now);
  s.take_due(now);
  s.handle_probe(0, rw(1), now);
  s.handle_probe(1, ro(), now);
  s.handle_open_failed(1, now);
  EXPECT_EQ(s.state(1).role, HostRole::standby);
  EXPECT_EQ(s.primary(), 0u);
}

TEST(HostSetProperty, RandomSequencesKeepTheInvariants) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = 1 + rng() % 4;
    HostSet s(n, cfg(), T{});
    T now{};
    std::vector<uint32_t> timeline(n, 1);  // what each server would answer
    std::set<size_t> in_flight;
    uint32_t newest = 0;
    for (int step = 0; step < 2000; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
      switch (rng() % 5) {
        case 0: {  // time passes
          now += std::chrono::milliseconds(rng() % 3000);
          for (size_t h : s.take_due(now)) {
            ASSERT_FALSE(in_flight.count(h)) << "host handed out twice";
            in_flight.insert(h);
          }
          break;
        }
        case 1:
        case 2: {  // a probe answers
          if (in_flight.empty()) break;
          auto it = in_flight.begin();
          std::advance(it, rng() % in_flight.size());
          const size_t h = *it;
          in_flight.erase(it);
          const uint32_t r = rng() % 3;
          const ProbeResult p = r == 0 ? down() : r == 1 ? ro() : rw(timeline[h]);
          if (p.kind == K::read_write) newest = std::max(newest, p.timeline);
          s.handle_probe(h, p, now);
          break;
        }
        case 3:  // a session open fails somewhere
          s.handle_open_failed(rng() % n, now);
          break;
        case 4:  // a promotion: some server moves to a newer timeline
          timeline[rng() % n] = *std::max_element(timeline.begin(), timeline.end()) + 1;
          break;
      }
      s.take_events();
      size_t primaries = 0;
      for (size_t h = 0; h < n; ++h) {
        const auto& st = s.state(h);
        EXPECT_EQ(st.in_flight, in_flight.count(h) == 1);
        if (st.role == HostRole::primary) {
          ++primaries;
          EXPECT_EQ(s.primary(), h);
          EXPECT_TRUE(st.timeline == s.max_timeline()) << "primary on an old timeline";
        }
        if (st.role == HostRole::banned || st.role == HostRole::diverged) {
          EXPECT_GE(st.ban, cfg().ban_first);
          EXPECT_LE(st.ban, cfg().ban_max);
        }
        if (!st.in_flight) {
          EXPECT_LE(st.due, now + cfg().ban_max);
        }
      }
      EXPECT_LE(primaries, 1u);
      EXPECT_EQ(s.max_timeline(), newest);
      if (s.primary()) {
        EXPECT_EQ(s.state(*s.primary()).role, HostRole::primary);
      }
    }
  }
}

}  // namespace
}  // namespace wirepool::pool
