#include "analysis/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// Summarize against a full sort and Percentile, exactly, for vectors of few
// distinct values (the counting path) and of many (selection), with zeros,
// negatives and a negative zero.
TEST(StatsTest, SummaryEqualsTheSortedReferenceExactly) {
  uint32_t seed = 17;
  auto next = [&seed] {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) & 0x7fff;
  };
  for (int round = 0; round < 400; ++round) {
    const size_t n = 1 + next() % (round % 2 == 0 ? 12 : 3000);  // small n: p90 and p99 share ranks
    const uint32_t distinct = 1 + round % 80;                    // 64 and 65 included
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t k = next() % distinct;
      double x = (static_cast<double>(k) - 5.0) * 1.25e-6;  // negatives and 0
      if (round % 50 == 7 && i == n / 2) x = -0.0;
      if (round % 3 == 0 && i > 0 && next() % 2 == 0) x = v.back();  // runs
      v.push_back(x);
    }
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double x : v) sum += x;
    std::vector<double> work = v;
    Summary s = Summarize(&work);
    ASSERT_EQ(s.count, static_cast<int64_t>(n));
    EXPECT_EQ(s.mean, sum / static_cast<double>(n)) << round;
    EXPECT_EQ(s.min, sorted.front()) << round;
    EXPECT_EQ(s.max, sorted.back()) << round;
    EXPECT_EQ(s.p50, Percentile(sorted, 50)) << round;
    EXPECT_EQ(s.p90, Percentile(sorted, 90)) << round;
    EXPECT_EQ(s.p99, Percentile(sorted, 99)) << round;
  }
}

}  // namespace
}  // namespace shardscope::analysis
