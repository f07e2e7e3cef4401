// Admission (pending and logged-in connections) and LoginThrottle (failed
// logins per address and per user).
//
// Cases: the per-address pending cap refuses the next connection from that
// address only; the global cap refuses when every pending connection is
// younger than 1 s and otherwise displaces the oldest (its callback runs, its
// ticket then counts nothing); IPv6 addresses count by /64 and IPv4-mapped
// ones as IPv4; promote() honours max_clients and lets admins use the
// reserve; tickets give their place back when destroyed. The waiting room:
// a connection over a cap waits instead of being refused, goes in FIFO within
// its address and in turn across addresses as slots free (a freed slot wakes
// the caller), may take the slot of one pending for 5 s, leaves at its
// deadline; a newcomer never overtakes its address's waiting connections; a
// full room makes way for an address with fewer waiting, else refuses. The
// throttle lets a
// burst through, then spaces attempts by the interval whatever the number of
// callers, decays, applies a user's score only from an address that failed,
// and holds at most max_entries keys (least recently used evicted).

#include <gtest/gtest.h>

#include "session/admission.hpp"
#include "session/login_throttle.hpp"

namespace wirepool::server {
namespace {

namespace ip = boost::asio::ip;
using std::chrono::milliseconds;
using std::chrono::seconds;

/// A connection accepted without a waiting room (Limits::max_waiting 0).
Admission::TicketPtr admit(Admission& a, const ip::address& address, Admission::Refusal* why,
                           Admission::Clock::time_point now = Admission::Clock::now()) {
  auto arrival = a.arrive(address, 1, now);
  if (why) *why = arrival.why;
  return std::move(arrival.ticket);
}

Admission::Limits limits(int64_t clients, int64_t reserved, int64_t pending, int64_t per_address) {
  Admission::Limits l;
  l.max_clients = clients;
  l.admin_reserved = reserved;
  l.max_pending = pending;
  l.max_pending_per_address = per_address;
  return l;
}

TEST(Admission, PerAddressCapRefusesThatAddressOnly) {
  Admission a(limits(100, 0, 10, 2));
  const auto t0 = Admission::Clock::now();
  Admission::Refusal why{};
  auto x1 = admit(a, ip::make_address("10.0.0.1"), &why, t0);
  auto x2 = admit(a, ip::make_address("10.0.0.1"), &why, t0);
  ASSERT_TRUE(x1 && x2);
  EXPECT_EQ(admit(a, ip::make_address("10.0.0.1"), &why, t0), nullptr);
  EXPECT_EQ(why, Admission::Refusal::pending_per_address);
  EXPECT_NE(admit(a, ip::make_address("10.0.0.2"), &why, t0), nullptr);
  EXPECT_EQ(why, Admission::Refusal::none);
  x1.reset();  // gives its place back
  EXPECT_NE(admit(a, ip::make_address("10.0.0.1"), &why, t0), nullptr);
}

TEST(Admission, FullPendingTableDisplacesOnlyConnectionsOlderThanASecond) {
  Admission a(limits(100, 0, 2, 2));
  const auto t0 = Admission::Clock::now();
  Admission::Refusal why{};
  auto old1 = admit(a, ip::make_address("10.0.0.1"), &why, t0);
  auto old2 = admit(a, ip::make_address("10.0.0.2"), &why, t0 + milliseconds(10));
  int displaced = 0;
  old1->on_displaced([&] { ++displaced; });
  EXPECT_EQ(admit(a, ip::make_address("10.0.0.3"), &why, t0 + milliseconds(500)), nullptr);
  EXPECT_EQ(why, Admission::Refusal::pending);
  auto fresh = admit(a, ip::make_address("10.0.0.3"), &why, t0 + milliseconds(1005));
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(displaced, 1);  // the oldest made way
  EXPECT_EQ(a.pending(), 2);
  EXPECT_EQ(a.displaced(), 1u);
  EXPECT_FALSE(old1->promote(false));  // a displaced connection cannot log in
  int late = 0;
  old1->on_displaced([&] { ++late; });  // registered after the fact: runs at once
  EXPECT_EQ(late, 1);
  old1.reset();
  EXPECT_EQ(a.pending(), 2);
}

TEST(Admission, Ipv6CountsBySlash64AndMappedIpv4AsIpv4) {
  EXPECT_EQ(address_key(ip::make_address("2001:db8::1")),
            address_key(ip::make_address("2001:db8::ffff:2")));
  EXPECT_NE(address_key(ip::make_address("2001:db8::1")),
            address_key(ip::make_address("2001:db8:0:1::1")));
  EXPECT_EQ(address_key(ip::make_address("::ffff:10.1.2.3")),
            address_key(ip::make_address("10.1.2.3")));
  EXPECT_EQ(to_string(address_key(ip::make_address("2001:db8::1"))), "2001:db8::/64");
  EXPECT_EQ(to_string(address_key(ip::make_address("::ffff:10.1.2.3"))), "10.1.2.3");
}

TEST(Admission, AdminsMayUseTheReserveBeyondMaxClients) {
  Admission a(limits(1, 1, 10, 10));
  Admission::Refusal why{};
  auto c1 = admit(a, ip::make_address("10.0.0.1"), &why);
  auto c2 = admit(a, ip::make_address("10.0.0.1"), &why);
  auto c3 = admit(a, ip::make_address("10.0.0.1"), &why);
  EXPECT_TRUE(a.has_room(false));
  EXPECT_TRUE(c1->promote(false));
  EXPECT_FALSE(a.has_room(false));
  EXPECT_TRUE(a.has_room(true));
  EXPECT_FALSE(c2->promote(false));
  EXPECT_TRUE(c2->promote(true));
  EXPECT_FALSE(c3->promote(true));
  EXPECT_EQ(a.clients(), 2);
  EXPECT_EQ(a.pending(), 1);
  c1.reset();
  EXPECT_EQ(a.clients(), 1);
  EXPECT_FALSE(a.has_room(false));  // the admin holds the only ordinary slot now
}

AddressKey addr(const char* a) {
  return address_key(ip::make_address(a));
}

Admission::Limits waiting_limits(int64_t pending, int64_t per_address, int64_t waiting) {
  Admission::Limits l = limits(100, 0, pending, per_address);
  l.max_waiting = waiting;
  l.wait_timeout = seconds(30);
  return l;
}

TEST(AdmissionWaitingRoom, OverTheCapWaitsAndGoesInFifoWhenASlotFrees) {
  Admission a(waiting_limits(10, 2, 100));
  int woken = 0;
  a.on_room([&] { ++woken; });
  const auto t0 = Admission::Clock::now();
  const auto ip = ip::make_address("10.0.0.1");
  auto x1 = a.arrive(ip, 1, t0);
  auto x2 = a.arrive(ip, 2, t0);
  ASSERT_TRUE(x1.ticket && x2.ticket);
  for (uint64_t t = 3; t <= 5; ++t) {
    auto w = a.arrive(ip, t, t0);
    EXPECT_FALSE(w.ticket);
    EXPECT_TRUE(w.waiting);
  }
  EXPECT_EQ(a.waiting(), 3);
  EXPECT_TRUE(a.turns(t0 + milliseconds(10)).admitted.empty());  // no slot yet
  x1.ticket.reset();
  EXPECT_EQ(woken, 1);
  // A newcomer of the same address does not overtake the ones waiting.
  EXPECT_TRUE(a.arrive(ip, 6, t0 + milliseconds(20)).waiting);
  auto turns = a.turns(t0 + milliseconds(20));
  ASSERT_EQ(turns.admitted.size(), 1u);
  EXPECT_EQ(turns.admitted[0].first, 3u);
  EXPECT_TRUE(x2.ticket->promote(false));  // logged in: its pending slot frees
  turns = a.turns(t0 + milliseconds(30));
  ASSERT_EQ(turns.admitted.size(), 1u);
  EXPECT_EQ(turns.admitted[0].first, 4u);
  EXPECT_EQ(a.waiting(), 2);
}

TEST(AdmissionWaitingRoom, AddressesTakeTurns) {
  Admission a(waiting_limits(2, 2, 100));
  const auto t0 = Admission::Clock::now();
  const auto x = ip::make_address("10.0.0.1");
  const auto y = ip::make_address("10.0.0.2");
  auto p1 = a.arrive(x, 1, t0);
  auto p2 = a.arrive(x, 2, t0);
  for (uint64_t t = 10; t < 15; ++t)
    EXPECT_TRUE(a.arrive(x, t, t0).waiting);
  EXPECT_TRUE(a.arrive(y, 20, t0).waiting);  // the global cap: y waits too
  p1.ticket.reset();
  p2.ticket.reset();
  auto turns = a.turns(t0 + milliseconds(10));
  ASSERT_EQ(turns.admitted.size(), 2u);
  EXPECT_EQ(turns.admitted[0].first, 10u);
  EXPECT_EQ(turns.admitted[1].first, 20u);  // y's turn comes before x's next
}

TEST(AdmissionWaitingRoom, WaiterTakesTheSlotOfOnePendingForFiveSeconds) {
  Admission a(waiting_limits(10, 1, 100));
  const auto t0 = Admission::Clock::now();
  const auto ip = ip::make_address("10.0.0.1");
  auto stuck = a.arrive(ip, 1, t0);
  int displaced = 0;
  stuck.ticket->on_displaced([&] { ++displaced; });
  EXPECT_TRUE(a.arrive(ip, 2, t0).waiting);
  // An arrival would displace it after 1 s; a waiting one only after 5 s.
  EXPECT_TRUE(a.turns(t0 + milliseconds(4900)).admitted.empty());
  auto turns = a.turns(t0 + milliseconds(5001));
  ASSERT_EQ(turns.admitted.size(), 1u);
  EXPECT_EQ(turns.admitted[0].first, 2u);
  EXPECT_EQ(displaced, 1);
}

TEST(AdmissionWaitingRoom, WaitersLeaveAtTheirDeadline) {
  Admission a(waiting_limits(10, 1, 100));
  const auto t0 = Admission::Clock::now();
  const auto ip = ip::make_address("10.0.0.1");
  Admission::Limits l = waiting_limits(10, 1, 100);
  l.wait_timeout = seconds(2);  // before the 5 s after which it could displace
  Admission b(l);
  auto held = b.arrive(ip, 1, t0);
  ASSERT_TRUE(b.arrive(ip, 2, t0 + milliseconds(100)).waiting);
  EXPECT_TRUE(b.turns(t0 + seconds(2)).expired.empty());
  auto turns = b.turns(t0 + seconds(2) + milliseconds(100));
  EXPECT_EQ(turns.expired, std::vector<uint64_t>{2});
  EXPECT_TRUE(turns.admitted.empty());
  EXPECT_EQ(b.waiting(), 0);
}

TEST(AdmissionWaitingRoom, FullRoomMakesWayForAnAddressWithFewerWaiting) {
  Admission a(waiting_limits(1, 1, 3));
  const auto t0 = Admission::Clock::now();
  const auto x = ip::make_address("10.0.0.1");
  const auto y = ip::make_address("10.0.0.2");
  auto held = a.arrive(x, 1, t0);
  for (uint64_t t = 2; t <= 4; ++t)
    EXPECT_TRUE(a.arrive(x, t, t0).waiting);
  // Full: x's newest makes way for y.
  auto arrival = a.arrive(y, 5, t0);
  EXPECT_TRUE(arrival.waiting);
  EXPECT_EQ(arrival.evicted, 4u);
  // x itself, full room, nobody old enough to displace: refused.
  arrival = a.arrive(x, 6, t0);
  EXPECT_FALSE(arrival.waiting || arrival.ticket);
  EXPECT_EQ(arrival.evicted, 0u);
  EXPECT_EQ(arrival.why, Admission::Refusal::pending_per_address);
  EXPECT_EQ(a.clear_waiting().size(), 3u);
  EXPECT_EQ(a.waiting(), 0);
}

TEST(AdmissionWaitingRoom, NoRoomConfiguredRefusesAsBefore) {
  Admission a(waiting_limits(10, 1, 0));
  const auto t0 = Admission::Clock::now();
  const auto ip = ip::make_address("10.0.0.1");
  auto held = a.arrive(ip, 1, t0);
  auto refused = a.arrive(ip, 2, t0);
  EXPECT_FALSE(refused.waiting || refused.ticket);
  EXPECT_EQ(refused.why, Admission::Refusal::pending_per_address);
  auto displacing = a.arrive(ip, 3, t0 + milliseconds(1001));
  EXPECT_TRUE(displacing.ticket);
}

TEST(LoginThrottle, BurstThenOneAttemptPerInterval) {
  LoginThrottle t({3, seconds(1), 100});
  const auto t0 = LoginThrottle::Clock::now();
  for (int i = 0; i < 2; ++i)
    t.failed(addr("10.0.0.1"), "alice", t0);
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "alice", t0), LoginThrottle::Clock::duration::zero());
  t.failed(addr("10.0.0.1"), "alice", t0);
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "alice", t0), seconds(1));
  // 40 more failures at once (40 parallel connections): the wait grows with them.
  for (int i = 0; i < 40; ++i)
    t.failed(addr("10.0.0.1"), "alice", t0);
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "alice", t0), seconds(41));
  // The score decays by one per interval.
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "alice", t0 + seconds(40)), seconds(1));
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "alice", t0 + seconds(100)),
            LoginThrottle::Clock::duration::zero());
}

TEST(LoginThrottle, UserScoreAppliesOnlyFromAnAddressThatFailed) {
  LoginThrottle t({2, seconds(1), 100});
  const auto t0 = LoginThrottle::Clock::now();
  for (int i = 0; i < 10; ++i)
    t.failed(addr(("10.0.1." + std::to_string(i)).c_str()), "alice", t0);
  EXPECT_EQ(t.delay(addr("10.0.2.1"), "alice", t0), LoginThrottle::Clock::duration::zero());
  EXPECT_EQ(t.delay(addr("10.0.1.1"), "alice", t0), seconds(9));
  EXPECT_EQ(t.delay(addr("10.0.1.1"), "bob", t0), LoginThrottle::Clock::duration::zero());
}

TEST(LoginThrottle, TableIsBoundedAndEvictsTheLeastRecentlyUsed) {
  LoginThrottle t({1, seconds(10), 16});
  const auto t0 = LoginThrottle::Clock::now();
  t.failed(addr("10.0.0.1"), "u", t0);
  for (int i = 0; i < 1000; ++i)
    t.failed(addr(("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250)).c_str()),
             "user" + std::to_string(i), t0);
  EXPECT_LE(t.size(), 16u);
  EXPECT_EQ(t.delay(addr("10.0.0.1"), "u", t0), LoginThrottle::Clock::duration::zero());
  EXPECT_GT(t.delay(addr("10.1.3.249"), "user999", t0), LoginThrottle::Clock::duration::zero());
}

}  // namespace
}  // namespace wirepool::server
