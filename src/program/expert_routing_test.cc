#include "program/expert_routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shardscope {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

// max / mean over experts.
double Imbalance(const std::vector<int64_t>& v) {
  return static_cast<double>(*std::max_element(v.begin(), v.end())) * v.size() / Sum(v);
}

TEST(ExpertRoutingTest, CountsConserveAssignmentsAndAreDeterministic) {
  RoutingSpec spec;
  auto r = ExpertRouting::Create(spec, 64, 42);
  ASSERT_TRUE(r.ok());
  for (int64_t n : {0, 1, 7, 1000, 123457}) {
    auto c = r->Counts(3, n, 11);
    EXPECT_EQ(static_cast<int64_t>(c.size()), 64);
    EXPECT_EQ(Sum(c), n);
    EXPECT_EQ(c, r->Counts(3, n, 11));
  }
  EXPECT_NE(r->Counts(3, 100000, 11), r->Counts(3, 100000, 12));
  EXPECT_NE(r->Counts(3, 100000, 11), r->Counts(4, 100000, 11));
  auto other_seed = ExpertRouting::Create(spec, 64, 43);
  EXPECT_NE(r->Counts(3, 100000, 11), other_seed->Counts(3, 100000, 11));
}

TEST(ExpertRoutingTest, UniformIsNearlyBalancedZipfIsSkewed) {
  RoutingSpec uniform;
  RoutingSpec zipf;
  zipf.kind = RoutingKind::kZipf;
  zipf.zipf_s = 1.2;
  auto u = ExpertRouting::Create(uniform, 256, 1);
  auto z = ExpertRouting::Create(zipf, 256, 1);
  const int64_t n = 4096 * 8;
  auto cu = u->Counts(0, n, 5);
  auto cz = z->Counts(0, n, 5);
  EXPECT_EQ(Sum(cz), n);
  EXPECT_LT(Imbalance(cu), 1.4);  // mean 128 per expert: a few standard deviations
  EXPECT_GT(Imbalance(cz), 20.0);
  // The hottest expert is a seed-fixed random one, different per layer.
  auto p0 = z->Probabilities(0);
  auto p1 = z->Probabilities(1);
  EXPECT_NE(std::max_element(p0.begin(), p0.end()) - p0.begin(),
            std::max_element(p1.begin(), p1.end()) - p1.begin());
  EXPECT_NEAR(std::accumulate(p0.begin(), p0.end(), 0.0), 1.0, 1e-12);
}

TEST(ExpertRoutingTest, LargeCountsFollowTheProbabilities) {
  RoutingSpec zipf;
  zipf.kind = RoutingKind::kZipf;
  zipf.zipf_s = 1.0;
  auto z = ExpertRouting::Create(zipf, 32, 3);
  const int64_t n = 10'000'000;
  auto c = z->Counts(2, n, 1);
  auto p = z->Probabilities(2);
  for (size_t i = 0; i < c.size(); ++i) {
    const double mean = p[i] * n;
    EXPECT_NEAR(static_cast<double>(c[i]), mean, 6 * std::sqrt(mean) + 1) << i;
  }
}

TEST(ExpertRoutingTest, SmallCountsHaveBinomialMeanAndVariance) {
  RoutingSpec zipf;
  zipf.kind = RoutingKind::kZipf;
  zipf.zipf_s = 0.8;
  auto z = ExpertRouting::Create(zipf, 16, 9);
  const auto p = z->Probabilities(0);
  for (int64_t n : {10, 200}) {  // one draw per assignment; sequential binomials
    const int draws = 4000;
    std::vector<double> sum(16, 0), sum_sq(16, 0);
    for (int d = 0; d < draws; ++d) {
      auto c = z->Counts(0, n, d);
      for (size_t i = 0; i < c.size(); ++i) sum[i] += c[i], sum_sq[i] += 1.0 * c[i] * c[i];
    }
    for (size_t i = 0; i < 16; ++i) {
      const double mean = sum[i] / draws, var = sum_sq[i] / draws - mean * mean;
      const double want = n * p[i], want_var = n * p[i] * (1 - p[i]);
      EXPECT_NEAR(mean, want, 5 * std::sqrt(want_var / draws)) << n << " " << i;
      EXPECT_NEAR(var, want_var, 0.15 * want_var) << n << " " << i;
    }
  }
}

TEST(ExpertRoutingTest, FixedWeightsSplitExactly) {
  RoutingSpec fixed;
  fixed.kind = RoutingKind::kFixed;
  fixed.fixed_weights = {3, 1, 0, 4};
  auto f = ExpertRouting::Create(fixed, 4, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->Counts(0, 80, 1), (std::vector<int64_t>{30, 10, 0, 40}));
  EXPECT_EQ(Sum(f->Counts(0, 7, 1)), 7);
  fixed.fixed_weights = {1, 2};
  EXPECT_FALSE(ExpertRouting::Create(fixed, 4, 0).ok());
  fixed.fixed_weights = {1, -1, 0, 0};
  EXPECT_FALSE(ExpertRouting::Create(fixed, 4, 0).ok());
}

// A decode step's few assignments follow the weights on average over steps
// (streams), each expert the floor or the ceiling of its share: a 60/40 split
// of 4 assignments over two groups of experts is 2 or 3 to the first, not 4.
TEST(ExpertRoutingTest, FixedWeightsOfFewAssignmentsAreTheirShareOnAverage) {
  RoutingSpec fixed;
  fixed.kind = RoutingKind::kFixed;
  fixed.fixed_weights = {3, 3, 3, 3, 2, 2, 2, 2};  // the first four: 60 %
  auto f = ExpertRouting::Create(fixed, 8, 0);
  ASSERT_TRUE(f.ok());
  constexpr int kSteps = 4000;
  std::vector<double> mean(8);
  for (uint64_t step = 0; step < kSteps; ++step) {
    const std::vector<int64_t> c = f->Counts(1, 4, step);
    ASSERT_EQ(Sum(c), 4);
    const int64_t first = c[0] + c[1] + c[2] + c[3];
    EXPECT_TRUE(first == 2 || first == 3) << first << " of 4 at step " << step;
    for (size_t x = 0; x < 8; ++x) {
      EXPECT_LE(c[x], 1);  // shares 0.6 and 0.4: floor 0, ceiling 1
      mean[x] += static_cast<double>(c[x]) / kSteps;
    }
  }
  for (size_t x = 0; x < 8; ++x) EXPECT_NEAR(mean[x], x < 4 ? 0.6 : 0.4, 0.03) << x;
}

// Per-layer weights (a measured run's split) replace fixed_weights in their
// layer; layers without any are uniform when fixed_weights is empty.
TEST(ExpertRoutingTest, LayerWeightsSplitTheirLayerOnly) {
  RoutingSpec fixed;
  fixed.kind = RoutingKind::kFixed;
  fixed.layer_weights[2] = {1, 0, 0, 3};
  auto f = ExpertRouting::Create(fixed, 4, 0);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->Counts(2, 40, 1), (std::vector<int64_t>{10, 0, 0, 30}));
  EXPECT_EQ(f->Counts(1, 40, 1), (std::vector<int64_t>{10, 10, 10, 10}));
  fixed.fixed_weights = {1, 1, 2, 0};
  auto g = ExpertRouting::Create(fixed, 4, 0);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->Counts(1, 40, 1), (std::vector<int64_t>{10, 10, 20, 0}));
  EXPECT_EQ(g->Counts(2, 40, 1), (std::vector<int64_t>{10, 0, 0, 30}));
  fixed.layer_weights[3] = {1, 1};
  auto bad = ExpertRouting::Create(fixed, 4, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("of layer 3"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
