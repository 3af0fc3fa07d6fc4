#include "program/sp_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardscope {
namespace {

const SpVariant kVariants[] = {SpVariant::kZigzag, SpVariant::kRing, SpVariant::kStripe};

TEST(SpLayoutTest, PairsMatchBruteForceAndSumToTheCausalCount) {
  for (SpVariant v : kVariants) {
    for (int64_t sp : {1, 2, 3, 4, 8}) {
      const int64_t s = 48;
      auto layout = SpLayout::Create(v, s, sp);
      ASSERT_TRUE(layout.ok()) << layout.status().ToString();
      std::vector<std::vector<int64_t>> brute(sp, std::vector<int64_t>(sp, 0));
      std::vector<int64_t> held(sp, 0);
      for (int64_t i = 0; i < s; ++i) {
        ++held[layout->OwnerOf(i)];
        for (int64_t j = 0; j <= i; ++j) ++brute[layout->OwnerOf(i)][layout->OwnerOf(j)];
      }
      int64_t total = 0;
      for (int64_t q = 0; q < sp; ++q) {
        EXPECT_EQ(held[q], layout->LocalTokens());
        for (int64_t k = 0; k < sp; ++k) {
          EXPECT_EQ(layout->CausalPairs(q, k), brute[q][k])
              << SpVariantName(v) << " sp " << sp << " q " << q << " k " << k;
          total += layout->CausalPairs(q, k);
        }
      }
      EXPECT_EQ(total, s * (s + 1) / 2);
    }
  }
}

TEST(SpLayoutTest, ZigzagBalancesWorkRingDoesNot) {
  auto zigzag = SpLayout::Create(SpVariant::kZigzag, 64, 4);
  auto ring = SpLayout::Create(SpVariant::kRing, 64, 4);
  ASSERT_TRUE(zigzag.ok() && ring.ok());
  std::vector<int64_t> z(4, 0), r(4, 0);
  for (int64_t q = 0; q < 4; ++q) {
    for (int64_t k = 0; k < 4; ++k) {
      z[q] += zigzag->CausalPairs(q, k);
      r[q] += ring->CausalPairs(q, k);
    }
  }
  for (int64_t q = 1; q < 4; ++q) EXPECT_EQ(z[q], z[0]);
  EXPECT_GT(r[3], 3 * r[0]);
  // Ring: keys of later ranks are fully masked.
  EXPECT_EQ(ring->CausalPairs(0, 1), 0);
}

TEST(SpLayoutTest, OwnersOfTheLastToken) {
  EXPECT_EQ(SpLayout::Create(SpVariant::kZigzag, 64, 4)->OwnerOf(63), 0);
  EXPECT_EQ(SpLayout::Create(SpVariant::kRing, 64, 4)->OwnerOf(63), 3);
  EXPECT_EQ(SpLayout::Create(SpVariant::kStripe, 64, 4)->OwnerOf(62), 2);
}

TEST(SpLayoutTest, RejectsUnevenPrompts) {
  EXPECT_FALSE(SpLayout::Create(SpVariant::kZigzag, 12, 4).ok());  // needs 8 chunks
  EXPECT_TRUE(SpLayout::Create(SpVariant::kRing, 12, 4).ok());
  EXPECT_FALSE(SpLayout::Create(SpVariant::kStripe, 10, 4).ok());
}

}  // namespace
}  // namespace shardscope
