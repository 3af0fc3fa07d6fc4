#include "serve/request_source.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shardscope::serve {
namespace {

ServingSpec Open(ArrivalProcess process, double rate, double cv, int64_t requests) {
  ServingSpec s;
  s.arrivals.process = process;
  s.arrivals.rate = rate;
  s.arrivals.cv = cv;
  s.requests = requests;
  s.prompt_tokens = {LengthDist::Kind::kLognormal, 0, 1000, 500, 1, 1 << 30};
  s.output_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 10, 20};
  return s;
}

// Mean and coefficient of variation of the inter-arrival times.
std::pair<double, double> Gaps(const std::vector<RequestSpec>& r) {
  double sum = 0, sq = 0;
  double previous = 0;
  for (const RequestSpec& x : r) {
    const double g = x.arrival - previous;
    previous = x.arrival;
    sum += g;
    sq += g * g;
  }
  const double n = static_cast<double>(r.size());
  const double mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean) / mean};
}

TEST(RequestSourceTest, PoissonAndGammaHaveTheirRateAndVariation) {
  const auto poisson = MakeRequests(Open(ArrivalProcess::kPoisson, 4, 1, 20000), 1);
  ASSERT_EQ(poisson.size(), 20000u);
  auto [mean, cv] = Gaps(poisson);
  EXPECT_NEAR(mean, 0.25, 0.01);
  EXPECT_NEAR(cv, 1.0, 0.05);
  const auto bursty = MakeRequests(Open(ArrivalProcess::kGamma, 4, 3, 20000), 1);
  std::tie(mean, cv) = Gaps(bursty);
  EXPECT_NEAR(mean, 0.25, 0.02);
  EXPECT_NEAR(cv, 3.0, 0.3);
}

TEST(RequestSourceTest, LengthsFollowTheirDistributions) {
  const auto r = MakeRequests(Open(ArrivalProcess::kPoisson, 4, 1, 20000), 2);
  double prompt = 0;
  for (const RequestSpec& x : r) {
    prompt += static_cast<double>(x.prompt_tokens);
    EXPECT_GE(x.output_tokens, 10);
    EXPECT_LE(x.output_tokens, 20);
  }
  EXPECT_NEAR(prompt / static_cast<double>(r.size()), 1000, 30);
  LengthDist clamped{LengthDist::Kind::kNormal, 0, 100, 1000, 50, 150};
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = DrawLength(clamped, rng);
    EXPECT_GE(v, 50);
    EXPECT_LE(v, 150);
  }
}

TEST(RequestSourceTest, DurationCutsArrivalsAndTheSeedDecides) {
  ServingSpec s = Open(ArrivalProcess::kPoisson, 10, 1, 0);
  s.duration = 30;
  const auto r = MakeRequests(s, 7);
  EXPECT_NEAR(static_cast<double>(r.size()), 300, 60);
  EXPECT_LE(r.back().arrival, 30);
  const auto again = MakeRequests(s, 7);
  ASSERT_EQ(again.size(), r.size());
  EXPECT_EQ(again.back().arrival, r.back().arrival);
  EXPECT_NE(MakeRequests(s, 8).front().arrival, r.front().arrival);
}

TEST(RequestSourceTest, ClosedLoopAndFileRequests) {
  ServingSpec loop = Open(ArrivalProcess::kClosedLoop, 0, 1, 5);
  EXPECT_EQ(MakeRequests(loop, 0).size(), 5u);
  ServingSpec file;
  file.arrivals.process = ArrivalProcess::kFile;
  file.arrivals.file_requests = {{0, 5, 1}, {1, 6, 2}, {2, 7, 3}};
  file.requests = 2;
  const auto r = MakeRequests(file, 0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].prompt_tokens, 6);
}

}  // namespace
}  // namespace shardscope::serve
