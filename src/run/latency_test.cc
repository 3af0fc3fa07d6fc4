#include "run/latency.h"

#include <gtest/gtest.h>

namespace shardscope::run {
namespace {

TEST(LatencyTest, TtftAndTpotOverAllRanks) {
  LatencyWindows<int64_t> w;
  // Two ranks: prefill 10..100 and 20..120 ns; decode steps 0 and 1.
  w.AddPrefill(10, 100);
  w.AddPrefill(20, 120);
  w.AddDecodeStep(0, 150);
  w.AddDecodeStep(0, 170);
  w.AddDecodeStep(1, 220);
  w.AddDecodeStep(1, 200);
  const Latency l = w.Compute();
  EXPECT_TRUE(l.has_prefill);
  EXPECT_TRUE(l.has_decode);
  EXPECT_DOUBLE_EQ(l.ttft, 110e-9);  // first start 10 to last end 120
  EXPECT_EQ(l.decode_steps, 2);
  EXPECT_DOUBLE_EQ(l.decode_seconds, 100e-9);  // 120 → 220
  EXPECT_DOUBLE_EQ(l.tpot, 50e-9);
  EXPECT_EQ(w.step_ends().at(0), 170);
  EXPECT_EQ(w.step_ends().at(1), 220);
}

TEST(LatencyTest, EpochTimestampsKeepNanosecondPrecision) {
  LatencyWindows<int64_t> w;
  const int64_t epoch = 1'700'000'000'000'000'000;
  w.AddPrefill(epoch + 1, epoch + 1001);
  EXPECT_DOUBLE_EQ(w.Compute().ttft, 1000e-9);
}

TEST(LatencyTest, UnnumberedDecodeDividesByTheGivenSteps) {
  LatencyWindows<double> w;
  w.AddPrefill(0.0, 2.0);
  w.AddDecodeEnd(8.0);
  EXPECT_FALSE(w.Compute().has_decode);  // no step count: no TPOT
  const Latency l = w.Compute(3);
  EXPECT_TRUE(l.has_decode);
  EXPECT_EQ(l.decode_steps, 3);
  EXPECT_DOUBLE_EQ(l.tpot, 2.0);
}

TEST(LatencyTest, NoPrefillNoFigures) {
  LatencyWindows<double> w;
  w.AddDecodeStep(0, 1.0);
  const Latency l = w.Compute();
  EXPECT_FALSE(l.has_prefill);
  EXPECT_FALSE(l.has_decode);
  EXPECT_EQ(l.ttft, 0);
  EXPECT_EQ(l.tpot, 0);
}

TEST(LatencyTest, Throughput) {
  Latency l;
  l.ttft = 0.5;
  l.tpot = 0.01;
  const Throughput t = ComputeThroughput(l, 4, 100, ExtrapolatedRunSeconds(l, 50));
  EXPECT_DOUBLE_EQ(t.prefill_tokens_per_s, 400 / 0.5);
  EXPECT_DOUBLE_EQ(t.decode_tokens_per_s, 4 / 0.01);
  EXPECT_DOUBLE_EQ(t.tps, 400 / (0.5 + 50 * 0.01));
  const Throughput none = ComputeThroughput(Latency{}, 4, 100, 0);
  EXPECT_EQ(none.prefill_tokens_per_s, 0);
  EXPECT_EQ(none.decode_tokens_per_s, 0);
  EXPECT_EQ(none.tps, 0);
}

}  // namespace
}  // namespace shardscope::run
