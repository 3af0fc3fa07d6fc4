#include "sim/sim_setup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "cluster/cluster_yaml.h"
#include "sim/collectives.h"
#include "testing/scratch_dir.h"

namespace shardscope::sim {
namespace {

ClusterSpec Zoo(const std::string& name) {
  auto c = LoadZooCluster(name, DefaultHardwareDir());
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

TEST(SimSetupTest, MeasuredExchangeTermsReplaceTheHardwareFiles) {
  const ClusterSpec cluster = Zoo("h800");
  Calibration cal = DefaultCalibration(cluster.device);
  cal.exchange_normal.scale_up_efficiency = 0.5;
  cal.exchange_low_latency.latency = 100e-6;
  const ClusterSpec n = NetworkCluster(cluster, cal);
  EXPECT_EQ(n.collectives.normal.scale_up_efficiency, 0.5);
  EXPECT_EQ(n.collectives.normal.latency, cluster.collectives.normal.latency);
  EXPECT_EQ(n.collectives.normal.scale_out_efficiency,
            cluster.collectives.normal.scale_out_efficiency);
  EXPECT_EQ(n.collectives.low_latency.latency, 100e-6);
  EXPECT_EQ(n.collectives.low_latency.scale_up_efficiency,
            cluster.collectives.low_latency.scale_up_efficiency);
}

// Seconds of an all-reduce of `bytes` over the 8 GPUs of one H100 node.
double AllReduceSeconds(const ClusterSpec& cluster, const MeasuredCollectives& measured,
                        int64_t bytes) {
  const Topology topo(cluster, measured);
  CollectiveCall call;
  call.collective = Collective::kAllReduce;
  call.devices.resize(8);
  std::iota(call.devices.begin(), call.devices.end(), 0);
  call.bytes = bytes;
  auto plan = Decompose(topo, call);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return UncontendedSeconds(topo, *plan);
}

// Each phase's SM share is that of the kernels it runs: the normal ones' in
// prefill (auto: hierarchical), none for decode's low-latency kernels or NCCL.
TEST(SimSetupTest, SmShareFollowsThePhasesAllToAllKind) {
  Experiment e;
  e.cluster = Zoo("h100-sxm");
  ASSERT_GT(e.cluster.collectives.normal.sm_share, 0);
  EngineOptions o = CommunicationOptions(e);
  EXPECT_EQ(o.prefill_all_to_all, AllToAllKind::kHierarchical);
  EXPECT_DOUBLE_EQ(o.prefill_sm_share, e.cluster.collectives.normal.sm_share);
  EXPECT_EQ(o.decode_all_to_all, AllToAllKind::kLowLatency);
  EXPECT_DOUBLE_EQ(o.decode_sm_share, 0);
  e.cluster.collectives.low_latency.sm_share = 0.2;
  EXPECT_DOUBLE_EQ(CommunicationOptions(e).decode_sm_share, 0.2);
  e.communication.prefill_all_to_all = AllToAllKind::kNccl;
  EXPECT_DOUBLE_EQ(CommunicationOptions(e).prefill_sm_share, 0);
  e.communication.prefill_all_to_all = AllToAllKind::kLowLatency;
  EXPECT_DOUBLE_EQ(CommunicationOptions(e).prefill_sm_share, 0.2);
}

TEST(SimSetupTest, AnNcclTestsLineIsTheCollectivesTimeBothWays) {
  const ClusterSpec cluster = Zoo("h100-sxm");
  const int64_t bytes = int64_t{64} << 20;
  const double model = AllReduceSeconds(cluster, {}, bytes);
  // A line faster than the model: from traces it only slows (so here does
  // nothing); from nccl-tests it is the time.
  MeasuredCollective fast{1e-6, 10 * bytes / model, 0, false};
  EXPECT_NEAR(AllReduceSeconds(cluster, {{{Collective::kAllReduce, 8}, fast}}, bytes), model,
              model * 1e-9);
  fast.exact = true;
  EXPECT_NEAR(AllReduceSeconds(cluster, {{{Collective::kAllReduce, 8}, fast}}, bytes),
              1e-6 + bytes / fast.algbw, 1e-9);
  // A slower one: both take it.
  for (bool exact : {false, true}) {
    const MeasuredCollective slow{500e-6, 0.5 * bytes / model, 0, exact};
    EXPECT_NEAR(AllReduceSeconds(cluster, {{{Collective::kAllReduce, 8}, slow}}, bytes),
                500e-6 + bytes / slow.algbw, 1e-9);
  }
  // Other sizes of group keep the model.
  fast.exact = true;
  EXPECT_NEAR(AllReduceSeconds(cluster, {{{Collective::kAllReduce, 16}, fast}}, bytes), model,
              model * 1e-9);
}

// A calibration file with `text`, loaded over the H800's defaults.
StatusOr<Calibration> Load(const std::string& name, const std::string& text) {
  testing::ScratchDir scratch("sim_setup_test");
  const std::string path = scratch.File(name + ".yaml");
  std::ofstream(path) << text;
  return LoadCalibration(path, DefaultCalibration(Zoo("h800").device));
}

TEST(SimSetupTest, CalibrationFileReadsExchangeAndSource) {
  auto ok = Load("ok", R"(exchange:
  normal: {scale_out_efficiency: 0.85}
  low_latency: {latency_us: 41, scale_up_efficiency: 0.75}
collectives:
  - {collective: all_gather, group_size: 8, latency_us: 20, algbw_gb_s: 150, source: nccl-tests}
  - {collective: all_reduce, group_size: 8, latency_us: 20, algbw_gb_s: 150}
)");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok->exchange_normal.scale_out_efficiency, 0.85);
  EXPECT_FALSE(ok->exchange_normal.latency.has_value());
  EXPECT_NEAR(*ok->exchange_low_latency.latency, 41e-6, 1e-12);
  EXPECT_TRUE(ok->terms.collectives.at({Collective::kAllGather, 8}).exact);
  EXPECT_FALSE(ok->terms.collectives.at({Collective::kAllReduce, 8}).exact);
  auto eff = Load("eff", "exchange:\n  normal: {scale_up_efficiency: 1.5}\n");
  ASSERT_FALSE(eff.ok());
  EXPECT_NE(eff.status().message().find("scale_up_efficiency"), std::string::npos)
      << eff.status().message();
  auto kernel = Load("kernel", "exchange:\n  fast: {latency_us: 1}\n");
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("fast"), std::string::npos);
  auto source = Load("source", R"(collectives:
  - {collective: all_reduce, group_size: 8, latency_us: 20, algbw_gb_s: 150, source: guess}
)");
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("expected traces or nccl-tests"), std::string::npos)
      << source.status().message();
}

}  // namespace
}  // namespace shardscope::sim
