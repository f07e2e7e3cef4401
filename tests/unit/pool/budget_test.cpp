// The database-wide connection cap shared by a database's pools (pool/budget.hpp).
//
// Cases: no cap grants everything; under the cap requests are counted at once;
// at the cap they wait and a release grants the oldest first, one per freed
// place; a newcomer never overtakes the line even when a place is free; a
// withdrawn request is skipped; a lower cap grants nothing until enough are
// released, a higher one grants the waiting at once; a random sequence never
// counts more than the cap and grants every request exactly once or withdraws it.

#include "pool/budget.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace wirepool::pool {
namespace {

TEST(Budget, NoCapGrantsEverything) {
  Budget b;
  for (ConnId c = 1; c <= 100; ++c)
    EXPECT_TRUE(b.request(c % 3, c));
  EXPECT_EQ(b.used(), 100u);
  EXPECT_FALSE(b.poll_grant());
}

TEST(Budget, AtTheCapRequestsWaitAndReleasesGrantTheOldestFirst) {
  Budget b(2);
  EXPECT_TRUE(b.request(1, 1));
  EXPECT_TRUE(b.request(2, 2));
  EXPECT_FALSE(b.request(3, 3));
  EXPECT_FALSE(b.request(1, 4));
  EXPECT_EQ(b.waiting(), 2u);
  EXPECT_FALSE(b.poll_grant());  // nothing freed yet
  b.release();
  EXPECT_EQ(b.poll_grant(), std::make_pair(uint64_t{3}, ConnId{3}));
  EXPECT_FALSE(b.poll_grant());  // one place, one grant
  b.release();
  EXPECT_EQ(b.poll_grant(), std::make_pair(uint64_t{1}, ConnId{4}));
  EXPECT_EQ(b.used(), 2u);
}

TEST(Budget, ANewcomerWaitsBehindTheLine) {
  Budget b(1);
  EXPECT_TRUE(b.request(1, 1));
  EXPECT_FALSE(b.request(2, 2));
  b.release();  // a place is free, but pool 2 asked first
  EXPECT_FALSE(b.request(3, 3));
  EXPECT_EQ(b.poll_grant(), std::make_pair(uint64_t{2}, ConnId{2}));
  EXPECT_FALSE(b.poll_grant());
}

TEST(Budget, WithdrawnRequestsAreSkipped) {
  Budget b(1);
  EXPECT_TRUE(b.request(1, 1));
  EXPECT_FALSE(b.request(2, 2));
  EXPECT_FALSE(b.request(3, 3));
  EXPECT_TRUE(b.withdraw(2, 2));
  EXPECT_FALSE(b.withdraw(2, 2));
  b.release();
  EXPECT_EQ(b.poll_grant(), std::make_pair(uint64_t{3}, ConnId{3}));
}

TEST(Budget, ResizingMovesTheCap) {
  Budget b(3);
  for (ConnId c = 1; c <= 3; ++c)
    EXPECT_TRUE(b.request(1, c));
  b.resize(1);
  EXPECT_FALSE(b.request(2, 4));
  b.release();
  EXPECT_FALSE(b.poll_grant());  // 2 counted, cap 1
  b.release();
  b.release();
  EXPECT_TRUE(b.poll_grant());
  b.resize(5);
  EXPECT_TRUE(b.request(2, 5));
}

TEST(Budget, RandomSequencesKeepTheCapAndAnswerEveryRequestOnce) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const size_t cap = 1 + rng() % 5;
    Budget b(cap);
    std::set<ConnId> counted, waiting;
    ConnId next = 1;
    for (int step = 0; step < 2000; ++step) {
      switch (rng() % 3) {
        case 0: {
          ConnId c = next++;
          if (b.request(c % 4, c)) {
            counted.insert(c);
          } else {
            waiting.insert(c);
          }
          break;
        }
        case 1:
          if (!counted.empty()) {
            counted.erase(counted.begin());
            b.release();
          }
          break;
        default:
          if (!waiting.empty() && rng() % 4 == 0) {
            ConnId c = *waiting.rbegin();
            ASSERT_TRUE(b.withdraw(c % 4, c));
            waiting.erase(c);
          }
          break;
      }
      while (auto g = b.poll_grant()) {
        ASSERT_EQ(waiting.erase(g->second), 1u) << "seed " << seed;
        counted.insert(g->second);
      }
      ASSERT_LE(counted.size(), cap) << "seed " << seed;
      ASSERT_EQ(b.used(), counted.size()) << "seed " << seed;
      ASSERT_EQ(b.waiting(), waiting.size()) << "seed " << seed;
      // Nothing waits while a place is free.
      ASSERT_TRUE(waiting.empty() || counted.size() == cap) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace wirepool::pool
