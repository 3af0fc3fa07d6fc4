#include "sim/collective_sweep.h"

#include <gtest/gtest.h>

#include "cluster/cluster_yaml.h"
#include "core/collective.h"

namespace shardscope::sim {
namespace {

ClusterSpec Zoo(const std::string& name, int64_t nodes) {
  auto c =
      LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/" + name + ".yaml");
  EXPECT_TRUE(c.ok());
  ClusterSpec cluster = *c;
  cluster.num_nodes = nodes;
  return cluster;
}

TEST(CollectiveSweepTest, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllReduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kSend, 2), 1);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kBroadcast, 8), 1);
}

TEST(CollectiveSweepTest, ParsesNcclTestsSizes) {
  EXPECT_EQ(*ParseByteSize("8"), 8);
  EXPECT_EQ(*ParseByteSize("64K"), 65536);
  EXPECT_EQ(*ParseByteSize("1M"), 1 << 20);
  EXPECT_EQ(*ParseByteSize("8G"), int64_t{8} << 30);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("8T").ok());
  EXPECT_FALSE(ParseByteSize("x").ok());
  EXPECT_FALSE(ParseByteSize("99999999999999999999").ok());
}

TEST(CollectiveSweepTest, SweepsEightBytesToEightGigabytesWithItsColumns) {
  const ClusterSpec c = Zoo("h100-sxm", 2);
  const Topology topo(c);
  SweepOptions o;
  o.collective = Collective::kAllReduce;
  o.min_bytes = 8;
  o.max_bytes = int64_t{8} << 30;
  auto rows = SweepCollective(topo, c.num_devices(), o);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 31u);  // 2^3 .. 2^33
  for (size_t i = 0; i < rows->size(); ++i) {
    const SweepRow& r = (*rows)[i];
    EXPECT_EQ(r.count * 4, r.bytes);
    EXPECT_DOUBLE_EQ(r.algbw, static_cast<double>(r.bytes) / r.seconds);
    EXPECT_DOUBLE_EQ(r.busbw, r.algbw * 2 * 15 / 16);
    if (i > 0) {
      EXPECT_GT(r.seconds, (*rows)[i - 1].seconds);
    }
    // Physics: no busbw above the links (8 NICs or NVLink per GPU, NVLS's switch
    // reduction at most doubling what a ring could do).
    EXPECT_LT(r.busbw, 2 * c.scale_up.bandwidth_per_device);
  }
  EXPECT_EQ(rows->front().bottleneck, "latency");
  EXPECT_EQ(rows->back().bottleneck, "nvlink");
}

TEST(CollectiveSweepTest, SplitCollectivesUseWholeElementsPerRank) {
  const ClusterSpec c = Zoo("h100-sxm", 1);
  const Topology topo(c);
  SweepOptions o;
  o.collective = Collective::kAllGather;
  o.min_bytes = 100;
  o.max_bytes = 100;
  auto rows = SweepCollective(topo, 8, o);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].bytes, 96);  // 8 ranks × 3 floats
}

TEST(CollectiveSweepTest, SendRecvCrossesTheNetworkOnTwoNodes) {
  const ClusterSpec c = Zoo("h100-sxm", 2);
  const Topology topo(c);
  SweepOptions o;
  o.collective = Collective::kSend;
  o.min_bytes = o.max_bytes = int64_t{1} << 30;
  auto rows = SweepCollective(topo, 16, o);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].bottleneck, "nic");
  EXPECT_LT((*rows)[0].busbw, c.scale_out.nic_bandwidth_per_device);
}

TEST(CollectiveSweepTest, RefusesBadOptions) {
  const ClusterSpec c = Zoo("h100-sxm", 1);
  const Topology topo(c);
  SweepOptions o;
  o.ranks = 9;
  EXPECT_NE(SweepCollective(topo, 8, o).status().message().find("--ranks"), std::string::npos);
  o.ranks = 8;
  o.min_bytes = 64;
  o.max_bytes = 8;
  EXPECT_FALSE(SweepCollective(topo, 8, o).ok());
  o.max_bytes = 64;
  o.factor = 1;
  EXPECT_FALSE(SweepCollective(topo, 8, o).ok());
}

}  // namespace
}  // namespace shardscope::sim
