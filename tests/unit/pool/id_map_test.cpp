// pool::IdMap (open addressing over integer ids): lookups, insertions and
// erasures agree with std::unordered_map over long random sequences (ids
// dense and sparse, so that runs collide and erasures move entries back);
// a new id gets a default value, never an erased one's; an erased value lets
// go of what it held at once; a Reset may keep a vector's capacity; erasing an
// absent id changes nothing.

#include "pool/id_map.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

namespace wirepool::pool {
namespace {

TEST(IdMap, AgreesWithUnorderedMapOverRandomSequences) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    // Few distinct ids (many collisions, erasures mid-run) or many (growth).
    const uint64_t span = seed % 2 ? 40 : 5000;
    IdMap<uint64_t> m;
    std::unordered_map<uint64_t, uint64_t> model;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t k = rng() % span * (seed % 3 == 0 ? 1 : 64);  // strided ids too
      switch (rng() % 3) {
        case 0:
          m[k] = step;
          model[k] = step;
          break;
        case 1:
          ASSERT_EQ(m.erase(k), model.erase(k) == 1) << "seed " << seed << " step " << step;
          break;
        default: {
          const uint64_t* v = m.find(k);
          auto it = model.find(k);
          ASSERT_EQ(v != nullptr, it != model.end()) << "seed " << seed << " step " << step;
          if (v) {
            ASSERT_EQ(*v, it->second);
          }
        }
      }
      ASSERT_EQ(m.size(), model.size());
    }
    for (const auto& [k, v] : model) {
      ASSERT_NE(m.find(k), nullptr);
      EXPECT_EQ(*m.find(k), v);
    }
  }
}

TEST(IdMap, ANewIdGetsADefaultValue) {
  IdMap<int> m;
  EXPECT_EQ(m.find(1), nullptr);
  EXPECT_FALSE(m.erase(1));
  m[1] = 10;
  EXPECT_TRUE(m.contains(1));
  EXPECT_TRUE(m.erase(1));
  EXPECT_EQ(m[1], 0);  // not the erased 10
  EXPECT_EQ(m[2], 0);
  EXPECT_EQ(m.size(), 2u);
}

TEST(IdMap, AnErasedValueLetsGoOfWhatItHeld) {
  IdMap<std::shared_ptr<int>> m;
  auto held = std::make_shared<int>(5);
  for (uint64_t k = 0; k < 8; ++k)
    m[k] = held;
  EXPECT_EQ(held.use_count(), 9);
  for (uint64_t k = 0; k < 8; ++k)
    m.erase(k);
  EXPECT_EQ(held.use_count(), 1);
  EXPECT_TRUE(m.empty());
}

struct KeepCapacity {
  void operator()(std::vector<int>& v) const { v.clear(); }
};

TEST(IdMap, AResetMayKeepCapacity) {
  IdMap<std::vector<int>, KeepCapacity> m;
  m[1].assign(100, 1);
  m.erase(1);
  std::vector<int>& v = m[1];
  EXPECT_TRUE(v.empty());
  EXPECT_GE(v.capacity(), 100u);
}

}  // namespace
}  // namespace wirepool::pool
