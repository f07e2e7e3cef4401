// TrimPolicy: when the server hands freed heap back (malloc_trim).
// Covers: no trim while connections grow or fall a little; one trim after a
// drop of kMinDrop that is also a quarter of the peak, once the count has
// stopped falling; a small server's drop below kMinDrop never trims; after a
// trim the peak starts again.

#include <gtest/gtest.h>

#include "server/memory_trim.hpp"

namespace wirepool::server {
namespace {

TEST(TrimPolicy, GrowingOrSmallDropsDoNotTrim) {
  TrimPolicy p;
  for (int64_t n = 0; n <= 10000; n += 500)
    EXPECT_FALSE(p.observe(n));
  EXPECT_FALSE(p.observe(10000 - TrimPolicy::kMinDrop + 1));
  EXPECT_FALSE(p.observe(8000));  // 2,000 below the peak: less than a quarter
}

TEST(TrimPolicy, ALargeDropTrimsOnceSettledThenThePeakRestarts) {
  TrimPolicy p;
  EXPECT_FALSE(p.observe(10000));
  EXPECT_FALSE(p.observe(7500));  // still falling
  EXPECT_FALSE(p.observe(2000));
  EXPECT_TRUE(p.observe(2000));  // settled: 8,000 below the peak
  EXPECT_FALSE(p.observe(2000));
  EXPECT_FALSE(p.observe(2100));
  EXPECT_FALSE(p.observe(0));
  EXPECT_TRUE(p.observe(0));  // 2,100 since the last trim
  EXPECT_FALSE(p.observe(0));
}

TEST(TrimPolicy, SmallServersNeverTrim) {
  TrimPolicy p;
  EXPECT_FALSE(p.observe(TrimPolicy::kMinDrop - 1));
  EXPECT_FALSE(p.observe(0));
}

}  // namespace
}  // namespace wirepool::server
