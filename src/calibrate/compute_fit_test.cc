#include "calibrate/compute_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace shardscope::calibrate {
namespace {

const DeviceRoofs kRoofs{1e11, 2e10};  // 100 GFLOP/s, 20 GB/s

// Shapes of a GEMM over k = n = 1024 (4-byte elements) for m rows: small m
// memory-bound, large m FLOP-bound, timed by the model with `truth`.
std::vector<ShapeSample> GemmShapes(const sim::Efficiency& truth, double launch) {
  std::vector<ShapeSample> out;
  for (double m : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0}) {
    ShapeSample s;
    s.flops = 2 * m * 1024 * 1024;
    s.bytes = 4 * (m * 1024 + 1024 * 1024 + m * 1024);
    s.rows = m;
    s.count = 3;
    s.seconds = ModelSeconds(truth, kRoofs, launch, s);
    out.push_back(s);
  }
  return out;
}

TEST(ComputeFitTest, RecoversKnownEfficienciesAndRamp) {
  const sim::Efficiency truth{0.6, 0.4, 4};
  const double launch = 2e-6;
  const EfficiencyFit fit =
      FitEfficiency(GemmShapes(truth, launch), kRoofs, launch, sim::Efficiency{0.5, 0.7, 8});
  EXPECT_NEAR(fit.efficiency.flops, 0.6, 0.6 * 0.01);
  EXPECT_NEAR(fit.efficiency.memory, 0.4, 0.4 * 0.01);
  EXPECT_NEAR(fit.efficiency.half_rows, 4, 4 * 0.05);
  EXPECT_TRUE(fit.fit_half_rows);
  EXPECT_GT(fit.flops_bound, 0);
  EXPECT_GT(fit.memory_bound, 0);
  const Residual r = ComputeResidual(GemmShapes(truth, launch), kRoofs, launch, fit.efficiency);
  EXPECT_LT(r.rms_relative, 0.02);
}

TEST(ComputeFitTest, ModelTimeByHand) {
  // 1e9 FLOPs at 100 GFLOP/s × 0.5 × 8/(8+8) = 40 ms; 1e8 bytes at 20 GB/s × 0.5 = 10 ms.
  ShapeSample s{1e9, 1e8, 8, 0, 1};
  EXPECT_NEAR(ModelSeconds({0.5, 0.5, 8}, kRoofs, 1e-3, s), 0.041, 1e-12);
}

TEST(ComputeFitTest, TermThatDecidesNothingKeepsThePriorRaisedWhereNeeded) {
  // Memory-bound ops only (at most 1 FLOP per 2 bytes): e_f is not measured.
  std::vector<ShapeSample> samples;
  const sim::Efficiency truth{1.0, 0.5, 0};
  for (double intensity : {0.5, 0.25, 0.125}) {
    const double bytes = 1e6 / intensity;
    ShapeSample s{bytes * intensity, bytes, 0, 0, 2};
    s.seconds = ModelSeconds(truth, kRoofs, 0, s);
    samples.push_back(s);
  }
  EfficiencyFit fit = FitEfficiency(samples, kRoofs, 0, sim::Efficiency{0.7, 0.9, 0});
  EXPECT_EQ(fit.flops_bound, 0);
  EXPECT_NEAR(fit.efficiency.memory, 0.5, 0.005);
  EXPECT_DOUBLE_EQ(fit.efficiency.flops, 0.7);  // the prior: FLOP time stays below
  // A prior so low that the FLOP term would decide: raised to where it stops.
  // FLOP time = bytes/2 / (1e11 e_f) ≤ bytes / (2e10 × 0.5) needs e_f ≥ 0.05.
  fit = FitEfficiency(samples, kRoofs, 0, sim::Efficiency{0.01, 0.9, 0});
  EXPECT_NEAR(fit.efficiency.flops, 0.05, 0.05 * 0.01);
}

TEST(ComputeFitTest, FitsLaunchDominatedOpsExactly) {
  // Tiny ops: the time is the launch overhead plus a little memory time.
  std::vector<ShapeSample> samples;
  const sim::Efficiency truth{0.5, 0.25, 0};
  for (double bytes : {1e3, 1e4, 1e5, 1e6}) {
    ShapeSample s{0, bytes, 0, 0, 1};
    s.seconds = ModelSeconds(truth, kRoofs, 5e-6, s);
    samples.push_back(s);
  }
  const EfficiencyFit fit = FitEfficiency(samples, kRoofs, 5e-6, sim::Efficiency{0.5, 0.7, 0});
  EXPECT_NEAR(fit.efficiency.memory, 0.25, 0.25 * 0.01);
  EXPECT_DOUBLE_EQ(fit.efficiency.flops, 0.5);  // no FLOPs: the prior
}

// A resident sample reads at the cache bandwidth with no row ramp, when one is
// given; a sample's own weight replaces count × seconds in the loss.
TEST(ComputeFitTest, ResidentSamplesAndWeights) {
  const sim::Efficiency e{0.5, 0.25, 8};
  ShapeSample s;
  s.flops = 2 * 2 * 1024 * 1024;  // m = 2
  s.bytes = 4 * (2 * 1024 + 1024 * 1024 + 2 * 1024);
  s.rows = 2;
  s.seconds = 1e-4;
  // From memory: max(F / (1e11 · 0.5 · 2/10), B / (2e10 · 0.25)) + 1 µs.
  EXPECT_NEAR(ModelSeconds(e, kRoofs, 1e-6, s), std::max(s.flops / 1e10, s.bytes / 5e9) + 1e-6,
              1e-15);
  s.resident = true;
  EXPECT_NEAR(ModelSeconds(e, kRoofs, 1e-6, s), std::max(s.flops / 1e10, s.bytes / 5e9) + 1e-6,
              1e-15);  // no cache bandwidth: from memory
  DeviceRoofs cached = kRoofs;
  cached.cache_bandwidth = 5e10;
  // From cache: max(F / (1e11 · 0.5), B / 5e10) + 1 µs, no ramp.
  EXPECT_NEAR(ModelSeconds(e, cached, 1e-6, s), std::max(s.flops / 5e10, s.bytes / 5e10) + 1e-6,
              1e-15);
  const double d = std::log(ModelSeconds(e, cached, 1e-6, s) / s.seconds);
  s.count = 3;
  EXPECT_NEAR(FitLoss({s}, cached, 1e-6, e), 3 * 1e-4 * d * d, 1e-18);
  s.weight = 0.25;
  EXPECT_NEAR(FitLoss({s}, cached, 1e-6, e), 0.25 * d * d, 1e-15);
  // The class's own cache rate overrides the common one.
  sim::Efficiency own = e;
  own.cache = 1e11;
  EXPECT_NEAR(ModelSeconds(own, cached, 1e-6, s), std::max(s.flops / 5e10, s.bytes / 1e11) + 1e-6,
              1e-15);
  // Huber: quadratic up to the threshold, linear beyond.
  ASSERT_GT(std::abs(d), 0.1);
  EXPECT_NEAR(FitLoss({s}, cached, 1e-6, e, 0.1), 0.25 * 0.1 * (2 * std::abs(d) - 0.1), 1e-15);
  EXPECT_NEAR(FitLoss({s}, cached, 1e-6, e, 10), 0.25 * d * d, 1e-15);
}

}  // namespace
}  // namespace shardscope::calibrate
