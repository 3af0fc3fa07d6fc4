#include "analysis/stats.h"

#include <gtest/gtest.h>

namespace shardscope::analysis {
namespace {

TEST(StatsTest, MergeAndIntersect) {
  std::vector<Interval> a = {{5, 7}, {0, 3}, {2, 4}, {7, 9}, {10, 10}};
  MergeIntervals(&a);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].begin, 0);
  EXPECT_EQ(a[0].end, 4);
  EXPECT_EQ(a[1].begin, 5);
  EXPECT_EQ(a[1].end, 9);
  EXPECT_EQ(TotalLength(a), 8);
  std::vector<Interval> b = {{3, 6}, {8, 20}};
  EXPECT_EQ(IntersectionLength(a, b), 1 + 1 + 1);
}

TEST(StatsTest, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2};
  Summary s = Summarize(&v);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);  // numpy.percentile([1,2,3,4], 90)
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  std::vector<double> empty;
  EXPECT_EQ(Summarize(&empty).count, 0);
}

}  // namespace
}  // namespace shardscope::analysis
