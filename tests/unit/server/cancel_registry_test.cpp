// The BackendKeyData keys of PostgreSQL clients (CancelRegistry).
//
// Cases: a key cancels its client, once per request; a wrong secret, a key
// never issued and a removed key cancel nothing; 20,000 keys added, half of
// them removed in random order (the table's deletions shift entries back and
// it shrinks) leave every other key working and every removed one dead; with
// a peer id every pid carries it; live pids never collide; and the table's
// heap per key (glibc's in-use bytes, block headers included) stays at most
// 32 B with 5,000 clients (a hash node and bucket per key took 56 B).

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "server/server.hpp"

namespace wirepool::server {
namespace {

struct Counting : CancelTarget {
  int cancels = 0;
  void cancel_request() override { ++cancels; }
};

TEST(CancelRegistry, TheRightSecretCancelsAWrongOneOrAGoneKeyDoesNot) {
  CancelRegistry reg;
  Counting a, b;
  auto [pa, sa] = reg.add(a);
  auto [pb, sb] = reg.add(b);
  EXPECT_NE(pa, 0);
  EXPECT_NE(pa, pb);
  EXPECT_TRUE(reg.cancel(pa, sa));
  EXPECT_EQ(a.cancels, 1);
  EXPECT_EQ(b.cancels, 0);
  EXPECT_FALSE(reg.cancel(pa, sa + 1));
  EXPECT_FALSE(reg.cancel(pa ^ 1, sa));
  EXPECT_FALSE(reg.cancel(0, 0));
  EXPECT_EQ(a.cancels, 1);
  reg.remove(pa);
  EXPECT_FALSE(reg.cancel(pa, sa));
  EXPECT_EQ(a.cancels, 1);
  EXPECT_TRUE(reg.cancel(pb, sb));
  EXPECT_EQ(b.cancels, 1);
  reg.remove(pa);  // twice: nothing
  EXPECT_EQ(reg.size(), 1u);
}

TEST(CancelRegistry, KeysSurviveOtherKeysComingAndGoing) {
  CancelRegistry reg;
  constexpr int kKeys = 20000;
  std::vector<std::unique_ptr<Counting>> targets;
  std::vector<std::pair<int32_t, int32_t>> keys;
  std::set<int32_t> pids;
  for (int i = 0; i < kKeys; ++i) {
    targets.push_back(std::make_unique<Counting>());
    keys.push_back(reg.add(*targets.back()));
    EXPECT_TRUE(pids.insert(keys.back().first).second) << "pid issued twice";
  }
  EXPECT_EQ(reg.size(), size_t{kKeys});
  std::vector<int> order(kKeys);
  for (int i = 0; i < kKeys; ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  const size_t full = reg.capacity();
  for (int i = 0; i < kKeys / 2; ++i)
    reg.remove(keys[order[i]].first);
  for (int i = 0; i < kKeys / 2; ++i)  // the rest go but 100: the table shrinks
    if (i + 100 < kKeys / 2) reg.remove(keys[order[kKeys / 2 + i]].first);
  EXPECT_LT(reg.capacity(), full / 8);
  for (int i = 0; i < kKeys; ++i) {
    const bool live = i >= kKeys - 100;
    const auto& [pid, secret] = keys[order[i]];
    EXPECT_EQ(reg.cancel(pid, secret), live) << i;
    EXPECT_EQ(targets[order[i]]->cancels, live ? 1 : 0) << i;
  }
  // New keys after the churn: none takes a live pid.
  for (int i = 0; i < 1000; ++i) {
    Counting t;
    auto [pid, secret] = reg.add(t);
    for (int j = kKeys - 100; j < kKeys; ++j)
      ASSERT_NE(pid, keys[order[j]].first);
    reg.remove(pid);
  }
}

TEST(CancelRegistry, APeerIdIsCarriedByEveryPid) {
  CancelRegistry reg;
  reg.set_peer_id(200);
  Counting t;
  for (int i = 0; i < 1000; ++i) {
    auto [pid, secret] = reg.add(t);
    EXPECT_GT(pid, 0);
    EXPECT_EQ(reg.peer_of(pid), 200);
    EXPECT_TRUE(reg.cancel(pid, secret));
  }
}

TEST(CancelRegistry, AKeyCostsAtMost32BytesOfHeap) {
  // 5,000 clients, as bench/run.py's idle workload.
  constexpr int kKeys = 5000;
  CancelRegistry reg;
  std::vector<Counting> targets(kKeys);
  reg.remove(reg.add(targets[0]).first);  // OpenSSL's random generator, made once
  const size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
  for (auto& t : targets)
    reg.add(t);
  const size_t after = mallinfo2().uordblks + mallinfo2().hblkhd;
  const double per_key = double(after - before) / kKeys;
  EXPECT_LE(per_key, 32.0) << (after - before) << " B for " << kKeys << " keys";
}

}  // namespace
}  // namespace wirepool::server
