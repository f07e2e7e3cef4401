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
//    due time no later than its ban; bans stay within [ban_first, ban_max];
//  - a healthy host (primary or standby) keeps its role after one failed probe and
//    is banned at the second in a row (failures_to_ban); a refused connection bans it
//    at once;
//  - read replicas: a standby takes reads while its lag is within max_lag (unknown
//    lag: none) and, once out, again only within readmit_lag (a lag hovering at the
//    bound gives one reads_off, not a flap), each change is one reads_on/reads_off event;
//    pick_reader spreads by least connections (ties in turn) or round robin and names no banned,
//    lagging or primary host; a standby whose read-only open fails is banned; a host listed as a
//    replica that answers read-write is kept out and fences nobody.

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

ProbeResult probe(K kind, uint32_t tl = 0) {
  ProbeResult r;
  r.kind = kind;
  r.timeline = tl;
  return r;
}
ProbeResult rw(uint32_t tl) {
  return probe(K::read_write, tl);
}
ProbeResult ro() {
  return probe(K::read_only);
}
ProbeResult down() {
  return probe(K::unreachable);
}
ProbeResult standby_lag(std::optional<std::chrono::milliseconds> lag, uint64_t lsn = 0) {
  ProbeResult r = probe(K::read_only);
  r.lag = lag;
  r.lsn = lsn;
  return r;
}

HostsConfig lag_cfg() {
  HostsConfig c = cfg();
  c.max_lag = 1s;
  return c;
}

bool has_event(const std::vector<HostEvent>& ev, HostEvent::Kind k, size_t host) {
  return std::any_of(ev.begin(), ev.end(),
                     [&](const HostEvent& e) { return e.kind == k && e.host == host; });
}

// Takes the first probes due at `now` (every host's) and answers host i with answers[i].
void answer_first_probes(HostSet& s, T now, std::initializer_list<ProbeResult> answers) {
  s.take_due(now);
  size_t host = 0;
  for (const ProbeResult& answer : answers)
    s.handle_probe(host++, answer, now);
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
  answer_first_probes(s, now, {rw(1), ro()});
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
  answer_first_probes(s, now, {rw(1), ro()});
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
  answer_first_probes(s, now, {rw(1)});  // the diverged one answered first
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
  answer_first_probes(s, now, {rw(3), rw(3)});
  EXPECT_EQ(s.primary(), 0u);
  EXPECT_EQ(s.state(1).role, HostRole::diverged);
}

TEST(HostSet, OpenFailureOfAHostThatIsNotThePrimaryChangesNothing) {
  T now{};
  HostSet s(2, cfg(), now);
  answer_first_probes(s, now, {rw(1), ro()});
  s.handle_open_failed(1, now);
  EXPECT_EQ(s.state(1).role, HostRole::standby);
  EXPECT_EQ(s.primary(), 0u);
}

TEST(HostSetProperty, RandomSequencesKeepTheInvariants) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = 1 + rng() % 4;
    HostSet s(n, lag_cfg(), T{});
    T now{};
    std::vector<uint32_t> timeline(n, 1);  // what each server would answer
    std::set<size_t> in_flight;
    uint32_t newest = 0;
    std::vector<bool> was_readable(n, false);
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
          const ProbeResult p = r == 0   ? down()
                                : r == 1 ? standby_lag(std::chrono::milliseconds(rng() % 2000))
                                         : rw(timeline[h]);
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
        if (st.readable) {
          EXPECT_EQ(st.role, HostRole::standby);
          EXPECT_LE(*st.lag, s.config().max_lag);
          if (!was_readable[h]) {
            EXPECT_LE(*st.lag, s.config().max_lag * 4 / 5) << "readmitted above readmit_lag";
          }
        }
        was_readable[h] = st.readable;
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

TEST(HostSet, StandbyTakesReadsOnlyWithinTheLagBound) {
  T now{};
  HostSet s(3, lag_cfg(), now);
  // Host 2 is not replicating: its lag is unknown.
  answer_first_probes(s, now, {rw(1), standby_lag(0ms), standby_lag(std::nullopt)});
  EXPECT_FALSE(s.readable(0));
  EXPECT_TRUE(s.readable(1));
  EXPECT_FALSE(s.readable(2));
  auto ev = s.take_events();
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::reads_on, 1));
  EXPECT_FALSE(has_event(ev, HostEvent::Kind::reads_on, 2));
  now += 1s;
  s.take_due(now);
  s.handle_probe(1, standby_lag(1500ms), now);
  EXPECT_FALSE(s.readable(1));
  ev = s.take_events();
  ASSERT_TRUE(has_event(ev, HostEvent::Kind::reads_off, 1));
  EXPECT_EQ(ev.back().lag, std::optional<std::chrono::milliseconds>(1500ms));
  EXPECT_EQ(s.pick_reader(Balance::least_connections), std::nullopt);
  s.handle_probe(1, standby_lag(1500ms), now);  // no change: no event
  EXPECT_TRUE(s.take_events().empty());
  s.handle_probe(1, standby_lag(800ms), now);  // within readmit_lag (4/5 of the bound): in
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::reads_on, 1));
  s.handle_probe(1, standby_lag(1000ms), now);  // at the bound: still in
  EXPECT_TRUE(s.readable(1));
}

TEST(HostSet, LagHoveringAtTheBoundDoesNotFlapReads) {
  T now{};
  HostSet s(2, lag_cfg(), now);  // max_lag 1 s, readmit_lag 800 ms
  answer_first_probes(s, now, {rw(1), standby_lag(500ms)});
  ASSERT_TRUE(s.readable(1));
  s.take_events();
  // The lag oscillates around the bound: one reads_off, then no reads_on
  // until it comes down to readmit_lag.
  size_t changes = 0;
  for (auto lag : {1100ms, 950ms, 1050ms, 990ms, 1001ms, 900ms, 810ms}) {
    now += 1s;
    s.handle_probe(1, standby_lag(lag), now);
    for (const auto& e : s.take_events())
      changes += e.kind == HostEvent::Kind::reads_on || e.kind == HostEvent::Kind::reads_off;
  }
  EXPECT_EQ(changes, 1u);
  EXPECT_FALSE(s.readable(1));
  s.handle_probe(1, standby_lag(800ms), now);
  EXPECT_TRUE(s.readable(1));
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::reads_on, 1));
  // An explicit readmit_lag is used as given.
  HostsConfig c = lag_cfg();
  c.readmit_lag = 300ms;
  HostSet t(1, c, now);
  t.take_due(now);
  t.handle_probe(0, standby_lag(2s), now);
  t.handle_probe(0, standby_lag(400ms), now);
  EXPECT_FALSE(t.readable(0));
  t.handle_probe(0, standby_lag(300ms), now);
  EXPECT_TRUE(t.readable(0));
}

TEST(HostSet, HealthyHostIsBannedOnlyAfterTwoFailedProbesInARow) {
  T now{};
  HostSet s(2, lag_cfg(), now);
  answer_first_probes(s, now, {rw(1), standby_lag(0ms)});
  s.take_events();
  // One slow probe of each: both keep their role and are asked again within
  // failover_interval.
  now += 1s;
  ASSERT_EQ(s.take_due(now), (std::vector<size_t>{0, 1}));
  s.handle_probe(0, down(), now);
  s.handle_probe(1, down(), now);
  EXPECT_EQ(s.primary(), std::optional<size_t>(0));
  EXPECT_EQ(s.state(0).role, HostRole::primary);
  EXPECT_TRUE(s.readable(1));
  auto ev = s.take_events();
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::probe_missed, 0));
  EXPECT_FALSE(has_event(ev, HostEvent::Kind::banned, 0));
  EXPECT_FALSE(has_event(ev, HostEvent::Kind::banned, 1));
  EXPECT_EQ(s.next_deadline(), now + 200ms);
  // An answer forgets the miss: the next failure is again only a miss.
  now += 200ms;
  s.take_due(now);
  s.handle_probe(1, standby_lag(0ms), now);
  s.handle_probe(0, down(), now);  // the primary's second in a row: banned
  EXPECT_EQ(s.state(0).role, HostRole::banned);
  EXPECT_FALSE(s.primary());
  now += 1s;
  for (size_t h : s.take_due(now))
    s.handle_probe(h, h == 0 ? rw(1) : down(), now);
  EXPECT_EQ(s.state(1).role, HostRole::standby) << "a miss after an answer bans nobody";
  // A refused connection bans a healthy host at once.
  s.take_events();
  now += 1s;
  s.take_due(now);
  ProbeResult refused = down();
  refused.refused = true;
  s.handle_probe(1, refused, now);
  EXPECT_EQ(s.state(1).role, HostRole::banned);
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::banned, 1));
  // failures_to_ban 1: the old behaviour, one failed probe bans.
  HostsConfig c = cfg();
  c.failures_to_ban = 1;
  HostSet t(1, c, now);
  answer_first_probes(t, now, {rw(1)});
  t.take_due(now + 1s);
  t.handle_probe(0, down(), now + 1s);
  EXPECT_EQ(t.state(0).role, HostRole::banned);
}

TEST(HostSet, NoLagBoundLetsEveryStandbyRead) {
  T now{};
  HostSet s(2, cfg(), now);
  answer_first_probes(s, now, {standby_lag(std::nullopt), standby_lag(60000ms)});
  EXPECT_TRUE(s.readable(0));
  EXPECT_TRUE(s.readable(1));
}

TEST(HostSet, LeastConnectionsPicksTheEmptiestReplica) {
  T now{};
  HostSet s(3, lag_cfg(), now);
  answer_first_probes(s, now, {rw(1), standby_lag(0ms), standby_lag(0ms)});
  std::vector<size_t> picks;
  for (int i = 0; i < 6; ++i) {
    auto h = s.pick_reader(Balance::least_connections);
    ASSERT_TRUE(h);
    s.connection_opened(*h);
    picks.push_back(*h);
  }
  EXPECT_EQ(picks, (std::vector<size_t>{1, 2, 1, 2, 1, 2}));
  // Host 1's connections close: the next opens fill it up first.
  for (int i = 0; i < 3; ++i)
    s.connection_closed(1);
  EXPECT_EQ(s.state(1).connections, 0u);
  picks.clear();
  for (int i = 0; i < 3; ++i) {
    auto h = s.pick_reader(Balance::least_connections);
    s.connection_opened(*h);
    picks.push_back(*h);
  }
  EXPECT_EQ(picks, (std::vector<size_t>{1, 1, 1}));
}

TEST(HostSet, RoundRobinTakesTheReplicasInTurnWhateverTheirConnections) {
  T now{};
  HostSet s(3, lag_cfg(), now);
  answer_first_probes(s, now, {standby_lag(0ms), rw(1), standby_lag(0ms)});
  for (int i = 0; i < 5; ++i)
    s.connection_opened(0);
  std::vector<size_t> picks;
  for (int i = 0; i < 4; ++i)
    picks.push_back(*s.pick_reader(Balance::round_robin));
  EXPECT_EQ(picks, (std::vector<size_t>{0, 2, 0, 2}));
}

TEST(HostSet, FailedReadOpenBansTheStandbyAndTakesItOutOfReads) {
  T now{};
  HostSet s(2, lag_cfg(), now);
  answer_first_probes(s, now, {rw(1), standby_lag(0ms)});
  s.take_events();
  s.handle_open_failed(1, now);  // a read-write open's failure leaves a standby alone
  EXPECT_EQ(s.state(1).role, HostRole::standby);
  s.handle_open_failed(1, now, true);
  EXPECT_EQ(s.state(1).role, HostRole::banned);
  auto ev = s.take_events();
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::banned, 1));
  EXPECT_TRUE(has_event(ev, HostEvent::Kind::reads_off, 1));
  EXPECT_EQ(s.pick_reader(Balance::round_robin), std::nullopt);
  EXPECT_EQ(s.primary(), std::optional<size_t>(0));
}

TEST(HostSet, WritableReplicaIsKeptOutAndFencesNobody) {
  T now{};
  HostSet s(2, lag_cfg(), now);
  s.set_replica_only(1);
  answer_first_probes(s, now, {rw(1), rw(2)});  // host 1: a replica promoted on its own
  EXPECT_EQ(s.primary(), std::optional<size_t>(0));
  EXPECT_EQ(s.max_timeline(), 1u);
  EXPECT_EQ(s.state(1).role, HostRole::diverged);
  EXPECT_TRUE(has_event(s.take_events(), HostEvent::Kind::writable_replica, 1));
  EXPECT_EQ(s.pick_reader(Balance::least_connections), std::nullopt);
}

TEST(HostSet, LagBytesAreThePrimarysPositionMinusTheReplayedOne) {
  T now{};
  HostSet s(2, lag_cfg(), now);
  s.take_due(now);
  ProbeResult p = rw(1);
  p.lsn = 5000;
  s.handle_probe(0, p, now);
  s.handle_probe(1, standby_lag(0ms, 4200), now);
  EXPECT_EQ(s.lag_bytes(1), std::optional<uint64_t>(800));
  EXPECT_EQ(s.lag_bytes(0), std::nullopt);
}

}  // namespace
}  // namespace wirepool::pool
