#include "calibrate/exchange_fit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cluster/cluster_yaml.h"
#include "sim/moe_exchange.h"

namespace shardscope::calibrate {
namespace {

ClusterSpec H800() {
  auto c = LoadZooCluster("h800", DefaultHardwareDir());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

DeepEpFigure Figure(bool dispatch, bool fp8, double nvl_gb_s, double rdma_gb_s, double us) {
  DeepEpFigure f;
  f.dispatch = dispatch;
  f.fp8 = fp8;
  f.nvl_bandwidth = nvl_gb_s * 1e9;
  f.rdma_bandwidth = rdma_gb_s * 1e9;
  f.seconds = us * 1e-6;
  return f;
}

TEST(ExchangeFitTest, NormalIntranodeGivesTheNvlinkEfficiency) {
  const ClusterSpec c = H800();
  DeepEpLog log;
  log.file = "intra.log";
  log.figures = {Figure(true, true, 150, 0, 300), Figure(true, false, 155, 0, 560),
                 Figure(false, false, 140, 0, 600)};
  auto fit = FitDeepEp({log}, c, 8);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ExchangeFit& n = fit->normal;
  ASSERT_TRUE(n.fitted) << n.why_not;
  // The FP8 dispatch and the combine: wire = GB/s × t × 7/8 over (t − latency) × 200 GB/s.
  const double l = c.collectives.normal.latency;
  const double b = c.scale_up.bandwidth_per_device;
  const double e1 = 150e9 * 300e-6 * 7 / 8 / ((300e-6 - l) * b);
  const double e2 = 140e9 * 600e-6 * 7 / 8 / ((600e-6 - l) * b);
  ASSERT_TRUE(n.result.scale_up_efficiency.has_value());
  EXPECT_NEAR(*n.result.scale_up_efficiency, (e1 + e2) / 2, 1e-9);
  EXPECT_FALSE(n.result.scale_out_efficiency.has_value());
  EXPECT_FALSE(n.result.latency.has_value());
  ASSERT_EQ(n.points.size(), 2u);  // the BF16 dispatch is not the model's
  EXPECT_FALSE(fit->low_latency.fitted);
}

TEST(ExchangeFitTest, NormalInternodeWithoutTimesUsesTheRoutingsBytes) {
  const ClusterSpec c = H800();
  DeepEpLog log;
  log.file = "inter.log";
  log.tokens = 4096;
  log.hidden = 7168;
  log.topk = 8;
  log.figures = {Figure(true, true, 130, 40, 0), Figure(false, false, 134, 41, 0)};
  // Without --deepep-ranks the EP size is unknown.
  auto unknown = FitDeepEp({log}, c, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("inter.log: DeepEP's normal-kernel tests do not print"),
            std::string::npos);
  auto fit = FitDeepEp({log}, c, 16);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // EP16 = 2 nodes; a token reaches E nodes of 2 (256 experts, top-8); DeepEP
  // counts tokens × E × bytes per token; half of it crosses the NIC.
  const double nodes = sim::ExpectedBinsReached(256, 2, 8, 0, 0);
  const double l = c.collectives.normal.latency;
  const double nic = c.scale_out.nic_bandwidth_per_device;
  auto eff = [&](double bytes_per_token, double gb_s) {
    const double counted = 4096 * nodes * bytes_per_token;
    const double t = counted / (gb_s * 1e9);
    return counted / 2 / ((t - l) * nic);
  };
  const double want = (eff(7168 * (1 + 4.0 / 128), 40) + eff(2 * 7168, 41)) / 2;
  ASSERT_TRUE(fit->normal.result.scale_out_efficiency.has_value());
  EXPECT_NEAR(*fit->normal.result.scale_out_efficiency, want, 1e-9);
  EXPECT_TRUE(fit->normal.points[0].time_estimated);
  EXPECT_TRUE(fit->normal.points[0].rdma);
}

// The low-latency test's per-rank line, as DeepEP prints it.
std::string LowLatencyLog(int ranks, double dispatch_us, double dispatch_bytes, double combine_us,
                          double combine_bytes) {
  std::string out;
  for (int r = 0; r < ranks; ++r) {
    out += fmt::format(
        "[rank {}] Dispatch bandwidth: {:.2f} GB/s, avg_t={:.2f} us | Combine bandwidth: {:.2f} "
        "GB/s, avg_t={:.2f} us\n",
        r, dispatch_bytes / 1e9 / (dispatch_us * 1e-6), dispatch_us,
        combine_bytes / 1e9 / (combine_us * 1e-6), combine_us);
  }
  return out;
}

TEST(ExchangeFitTest, LowLatencyRecoversLatencyAndEfficiencies) {
  const ClusterSpec c = H800();
  const double nic = c.scale_out.nic_bandwidth_per_device;
  const double nvl = c.scale_up.bandwidth_per_device;
  // Truth: 40 us per call, 0.8 of the NIC, 0.7 of NVLink; the bytes DeepEP
  // counts per rank for 128 tokens × top-8 (FP8 dispatch, BF16 combine).
  const double latency = 40e-6, e_out = 0.8, e_up = 0.7;
  const double dispatch = 128 * 8 * (7168 + 7168 / 128 * 4 + 16);
  const double combine = 128 * 8 * 2 * 7168;
  std::vector<DeepEpLog> logs;
  for (int n : {8, 16, 32}) {
    auto time_us = [&](double counted) {
      if (n == 8) return 1e6 * (latency + counted * 7 / 8 / (e_up * nvl));
      return 1e6 * (latency + counted * (n - 8) / n / (e_out * nic));
    };
    auto parsed =
        ParseDeepEpLog(LowLatencyLog(n, time_us(dispatch), dispatch, time_us(combine), combine),
                       fmt::format("ll{}.log", n));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    logs.push_back((*parsed)[0]);
  }
  auto fit = FitDeepEp(logs, c, 0);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ExchangeFit& f = fit->low_latency;
  ASSERT_TRUE(f.fitted) << f.why_not;
  ASSERT_TRUE(f.result.latency && f.result.scale_out_efficiency && f.result.scale_up_efficiency);
  EXPECT_NEAR(*f.result.latency, latency, 0.01 * latency);
  EXPECT_NEAR(*f.result.scale_out_efficiency, e_out, 0.005);
  EXPECT_NEAR(*f.result.scale_up_efficiency, e_up, 0.005);
  ASSERT_EQ(f.points.size(), 6u);
  for (const ExchangePoint& p : f.points) EXPECT_NEAR(p.model_seconds / p.seconds, 1, 0.005);
}

TEST(ExchangeFitTest, OneRanksLowLatencyLinesNeedTheEpSize) {
  const ClusterSpec c = H800();
  auto parsed = ParseDeepEpLog(LowLatencyLog(1, 150, 7e6, 300, 1.4e7), "rank0.log");
  ASSERT_TRUE(parsed.ok());
  auto unknown = FitDeepEp(*parsed, c, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("rank0.log: only rank 0's lines"), std::string::npos)
      << unknown.status().message();
  auto given = FitDeepEp(*parsed, c, 16);
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_EQ(given->low_latency.points[0].ranks, 16);
  EXPECT_TRUE(given->low_latency.points[0].rdma);
}

TEST(ExchangeFitTest, MoreRanksThanTheClusterIsAnError) {
  ClusterSpec c = H800();
  c.num_nodes = 1;
  auto parsed = ParseDeepEpLog(LowLatencyLog(16, 150, 7e6, 300, 1.4e7), "big.log");
  ASSERT_TRUE(parsed.ok());
  auto fit = FitDeepEp(*parsed, c, 0);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("big.log: the test ran on 16 ranks"), std::string::npos)
      << fit.status().message();
}

}  // namespace
}  // namespace shardscope::calibrate
