#include "sim/rank_spread.h"

#include <gtest/gtest.h>

#include <numeric>

namespace shardscope::sim {
namespace {

TEST(RankSpreadTest, OrderScoresAreBlomsQuantiles) {
  EXPECT_EQ(NormalOrderScore(1, 1), 0);
  // Φ⁻¹(1.625 / 2.25) = Φ⁻¹(0.7222…) = 0.5894 (tables); the pair is symmetric.
  EXPECT_NEAR(NormalOrderScore(2, 2), 0.5894, 1e-4);
  EXPECT_NEAR(NormalOrderScore(1, 2), -0.5894, 1e-4);
  // The middle of an odd count is the median; the largest of 8 is Φ⁻¹(7.625/8.25) = 1.4342.
  EXPECT_NEAR(NormalOrderScore(2, 3), 0, 1e-12);
  EXPECT_NEAR(NormalOrderScore(8, 8), 1.4342, 1e-4);
}

TEST(RankSpreadTest, ScalesKeepTheMeanAndPutTheSlowestLast) {
  EXPECT_TRUE(RankTimeScales(0, 8).empty());
  EXPECT_TRUE(RankTimeScales(0.05, 1).empty());
  const std::vector<double> s = RankTimeScales(0.05, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_NEAR(std::accumulate(s.begin(), s.end(), 0.0) / 4, 1.0, 1e-12);
  for (size_t r = 1; r < s.size(); ++r) EXPECT_GT(s[r], s[r - 1]);
  EXPECT_NEAR(s[3], 1 + 0.05 * NormalOrderScore(4, 4), 1e-12);
}

}  // namespace
}  // namespace shardscope::sim
