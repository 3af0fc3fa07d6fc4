#include "sim/moe_exchange.h"

#include <gtest/gtest.h>

#include "cluster/cluster_yaml.h"

namespace shardscope::sim {
namespace {

ClusterSpec H800(int64_t nodes) {
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/h800.yaml");
  EXPECT_TRUE(c.ok());
  ClusterSpec cluster = *c;
  cluster.num_nodes = nodes;
  return cluster;
}

TEST(MoeExchangeTest, ExpectedBinsWithoutAGroupLimit) {
  // 2 of 8 experts, 2 bins of 4: a bin is missed with C(4,2)/C(8,2) = 6/28.
  EXPECT_NEAR(ExpectedBinsReached(8, 2, 2, 0, 0), 2 * (1 - 6.0 / 28), 1e-12);
  // One expert reaches one bin.
  EXPECT_NEAR(ExpectedBinsReached(256, 32, 1, 0, 0), 1.0, 1e-12);
}

TEST(MoeExchangeTest, ExpectedBinsUnderTheGroupLimit) {
  // 8 experts in 4 groups of 2; a token uses 1 group and takes both its experts.
  EXPECT_NEAR(ExpectedBinsReached(8, 2, 2, 4, 1), 1.0, 1e-12);  // bins hold whole groups
  EXPECT_NEAR(ExpectedBinsReached(8, 4, 2, 4, 1), 1.0, 1e-12);
  EXPECT_NEAR(ExpectedBinsReached(8, 8, 2, 4, 1), 2.0, 1e-12);  // a group spans 2 bins
  // DeepSeek-V3 at EP64: 8 nodes, a group per node, 4 groups per token: at most 4 nodes.
  const double nodes = ExpectedBinsReached(256, 8, 8, 8, 4);
  EXPECT_GT(nodes, 3.5);
  EXPECT_LE(nodes, 4.0);
  EXPECT_LT(nodes, ExpectedBinsReached(256, 8, 8, 0, 0));
}

TEST(MoeExchangeTest, LowLatencyDispatchHandComputed) {
  const ClusterSpec c = H800(2);
  ExchangeOptions o;
  o.kernel = ExchangeKernel::kLowLatency;
  o.tokens = 128;
  auto r = SimulateExchange(c, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double token = 7168 + 7168.0 / 128 * 4;  // FP8 and its scales
  const double selections = 128 * 8;
  const ExchangeKernelCost& k = c.collectives.low_latency;
  // Half the selections leave the node; 7 of 16 stay on it but leave the GPU.
  const double rdma = selections * 0.5 * token;
  const double nvlink = selections * 7.0 / 16 * token;
  EXPECT_DOUBLE_EQ(r->rdma_bytes, rdma);
  EXPECT_DOUBLE_EQ(r->nvlink_bytes, nvlink);
  const double t =
      k.latency + std::max(rdma / (c.scale_out.nic_bandwidth_per_device * k.scale_out_efficiency),
                           nvlink / (c.scale_up.bandwidth_per_device * k.scale_up_efficiency));
  EXPECT_DOUBLE_EQ(r->seconds, t);
  EXPECT_TRUE(r->rdma_bound);
  EXPECT_DOUBLE_EQ(r->rdma_bandwidth, selections * token / t);  // DeepEP counts every selection
}

TEST(MoeExchangeTest, NormalDispatchSendsEachTokenOncePerRemoteNode) {
  const ClusterSpec c = H800(4);
  ExchangeOptions o;  // DeepSeek-V3 prefill: 4096 tokens, top-8 of 256
  auto r = SimulateExchange(c, o);
  ASSERT_TRUE(r.ok());
  const double token = 7168 + 7168.0 / 128 * 4;
  EXPECT_NEAR(r->rdma_bytes, 4096 * r->nodes_per_token * 3.0 / 4 * token, 1e-3);
  // Deduplicated: fewer bytes on the NIC than one copy per (token, expert) off the node.
  EXPECT_LT(r->rdma_bytes, 4096 * 8 * 24.0 / 32 * token);
  // A combine moves BF16: twice the dispatch's bytes per token, near enough.
  o.dispatch = false;
  auto combine = SimulateExchange(c, o);
  ASSERT_TRUE(combine.ok());
  EXPECT_NEAR(combine->rdma_bytes / r->rdma_bytes, 2 * 7168 / token, 1e-12);
}

TEST(MoeExchangeTest, RefusesExpertsThatDoNotSpreadEvenly) {
  ExchangeOptions o;
  o.ranks = 12;
  o.experts = 256;
  EXPECT_NE(SimulateExchange(H800(2), o).status().message().find("--experts"), std::string::npos);
  o.ranks = 8;
  o.topk = 0;
  EXPECT_FALSE(SimulateExchange(H800(1), o).ok());
}

}  // namespace
}  // namespace shardscope::sim
