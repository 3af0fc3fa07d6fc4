#include "sim/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "cluster/cluster_yaml.h"
#include "sim/network.h"

namespace shardscope::sim {
namespace {

// The zoo's H100 with its NCCL terms (collectives:).
ClusterSpec TunedH100(int64_t nodes) {
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/h100-sxm.yaml");
  EXPECT_TRUE(c.ok());
  ClusterSpec cluster = *c;
  cluster.num_nodes = nodes;
  return cluster;
}

// The same links, ideal: no protocol, no per-call cost (an untuned cluster).
ClusterSpec H100(int64_t nodes) {
  ClusterSpec cluster = TunedH100(nodes);
  cluster.collectives = CommTuning{};
  return cluster;
}

// Runs the plan's stages one after another on an idle network.
double Simulate(const Topology& topo, const CollectivePlan& plan) {
  FlowNetwork net(topo.capacities());
  double t = 0;
  std::vector<int64_t> done;
  for (const Stage& st : plan.stages) {
    t += st.latency;
    bool any = false;
    for (const LinkLoad& l : st.loads) any = any || l.bytes > 0;
    if (!any) continue;
    net.Start(t, st.loads, 0);
    t = net.NextCompletion();
    net.AdvanceTo(t, &done);
  }
  return t;
}

std::vector<int64_t> Devices(int64_t n) {
  std::vector<int64_t> d(n);
  for (int64_t i = 0; i < n; ++i) d[i] = i;
  return d;
}

double Rel(double a, double b) { return std::abs(a - b) / b; }

class CollectiveClosedForm : public ::testing::TestWithParam<int64_t> {};

TEST_P(CollectiveClosedForm, RingAllReduce) {
  const int64_t nodes = GetParam();
  const ClusterSpec c = H100(nodes);
  const Topology topo(c);
  const int64_t n = 8 * nodes;
  const double s = 256.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(n), static_cast<int64_t>(s)},
                        Algorithm::kRing);
  ASSERT_TRUE(plan.ok());
  // The ring's slowest hop sets B and α: NVLink inside a node, the NIC across.
  const double b =
      nodes == 1 ? c.scale_up.bandwidth_per_device : c.scale_out.nic_bandwidth_per_device;
  const double alpha = nodes == 1 ? c.scale_up.latency : c.scale_out.latency;
  const double nn = static_cast<double>(n);
  const double expected = 2 * (nn - 1) / nn * s / b + 2 * (nn - 1) * alpha;
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
}

TEST_P(CollectiveClosedForm, RingAllGatherAndReduceScatter) {
  const int64_t nodes = GetParam();
  const ClusterSpec c = H100(nodes);
  const Topology topo(c);
  const int64_t n = 8 * nodes;
  const double s = 64.0 * 1024 * 1024;
  const double b =
      nodes == 1 ? c.scale_up.bandwidth_per_device : c.scale_out.nic_bandwidth_per_device;
  const double alpha = nodes == 1 ? c.scale_up.latency : c.scale_out.latency;
  const double nn = static_cast<double>(n);
  for (Collective coll : {Collective::kAllGather, Collective::kReduceScatter}) {
    auto plan = Decompose(topo, {coll, Devices(n), static_cast<int64_t>(s)});
    ASSERT_TRUE(plan.ok());
    EXPECT_LT(Rel(Simulate(topo, *plan), (nn - 1) / nn * s / b + (nn - 1) * alpha), 1e-9);
  }
}

TEST_P(CollectiveClosedForm, DirectAllToAllUniform) {
  const int64_t nodes = GetParam();
  const ClusterSpec c = H100(nodes);
  const Topology topo(c);
  const int64_t n = 8 * nodes;
  const int64_t per_peer = 1 << 20;
  CollectiveCall call{Collective::kAllToAll, Devices(n), per_peer * n, 0, {}};
  call.per_peer.assign(n, std::vector<int64_t>(n, per_peer));
  auto plan = Decompose(topo, call);
  ASSERT_TRUE(plan.ok());
  // Each port carries its peers' parts: 7 over NVLink; across nodes 8 over the NIC too.
  const double intra = 7.0 * per_peer / c.scale_up.bandwidth_per_device;
  const double inter =
      nodes == 1 ? 0 : 8.0 * (nodes - 1) * per_peer / c.scale_out.nic_bandwidth_per_device;
  const double alpha = nodes == 1 ? c.scale_up.latency : c.scale_out.latency;
  EXPECT_LT(Rel(Simulate(topo, *plan), std::max(intra, inter) + alpha), 1e-9);
}

TEST_P(CollectiveClosedForm, SendRecvAndBroadcast) {
  const int64_t nodes = GetParam();
  const ClusterSpec c = H100(nodes);
  const Topology topo(c);
  const int64_t n = 8 * nodes;
  const double s = 32.0 * 1024 * 1024;
  const int64_t peer = n - 1;
  auto p2p = Decompose(topo, {Collective::kSend, {0, peer}, static_cast<int64_t>(s)});
  ASSERT_TRUE(p2p.ok());
  EXPECT_LT(
      Rel(Simulate(topo, *p2p), s / c.LinkBandwidthBetween(0, peer) + c.LatencyBetween(0, peer)),
      1e-9);
  auto bc = Decompose(topo, {Collective::kBroadcast, Devices(n), static_cast<int64_t>(s), 0});
  ASSERT_TRUE(bc.ok());
  const double b =
      nodes == 1 ? c.scale_up.bandwidth_per_device : c.scale_out.nic_bandwidth_per_device;
  const double alpha = nodes == 1 ? c.scale_up.latency : c.scale_out.latency;
  EXPECT_LT(Rel(Simulate(topo, *bc), s / b + static_cast<double>(n - 1) * alpha), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoNodes, CollectiveClosedForm, ::testing::Values(1, 2));

// The all-to-all's per-link loads and latency, summed pair by pair over each
// pair's path: the reference for Decompose's row and column sums.
Stage PairByPair(const Topology& topo, const CollectiveCall& call) {
  std::map<int32_t, double> per_link;
  Stage st;
  for (size_t i = 0; i < call.devices.size(); ++i) {
    for (size_t j = 0; j < call.devices.size(); ++j) {
      if (i == j || call.per_peer[i][j] <= 0) continue;
      std::vector<int32_t> path;
      topo.AppendPath(call.devices[i], call.devices[j], &path);
      for (int32_t l : path) per_link[l] += static_cast<double>(call.per_peer[i][j]);
      st.latency = std::max(st.latency, topo.Latency(call.devices[i], call.devices[j]));
    }
  }
  for (const auto& [link, bytes] : per_link) st.loads.push_back({link, bytes});
  return st;
}

TEST(CollectivesTest, AllToAllLoadsArePairByPairSumsOverEachPath) {
  std::mt19937_64 rng(17);
  const Topology topo(H100(3));
  // Members in device order, out of order, within one node only, and with
  // empty rows and zero entries (zero pairs add no load and no latency).
  const std::vector<std::vector<int64_t>> groups = {
      Devices(24), {17, 3, 9, 22, 0, 8, 16, 1}, {2, 3, 4, 5}, {0, 8, 16}};
  for (const auto& devices : groups) {
    for (int sparsity : {0, 2, 5}) {
      const size_t n = devices.size();
      CollectiveCall call{Collective::kAllToAll, devices, 0, 0, {}};
      call.per_peer.assign(n, std::vector<int64_t>(n, 0));
      for (auto& row : call.per_peer) {
        for (int64_t& b : row) b = rng() % 6 < static_cast<uint64_t>(sparsity) ? 0 : rng() % 99999;
      }
      call.per_peer[n / 2].assign(n, 0);
      auto plan = Decompose(topo, call);
      ASSERT_TRUE(plan.ok());
      ASSERT_EQ(plan->stages.size(), 1u);
      const Stage want = PairByPair(topo, call);
      const Stage& got = plan->stages[0];
      EXPECT_EQ(got.latency, want.latency);
      ASSERT_EQ(got.loads.size(), want.loads.size()) << n << " members, sparsity " << sparsity;
      for (size_t k = 0; k < want.loads.size(); ++k) {
        EXPECT_EQ(got.loads[k].link, want.loads[k].link);
        EXPECT_EQ(got.loads[k].bytes, want.loads[k].bytes) << topo.LinkName(want.loads[k].link);
      }
    }
  }
}

// Row i's non-zero entries, by position (what the ops' peer_sends hold).
std::vector<std::vector<PeerBytes>> NonZeros(const std::vector<std::vector<int64_t>>& matrix) {
  std::vector<std::vector<PeerBytes>> rows(matrix.size());
  for (size_t i = 0; i < matrix.size(); ++i) {
    for (size_t j = 0; j < matrix[i].size(); ++j) {
      if (matrix[i][j] != 0) rows[i].push_back({static_cast<int32_t>(j), matrix[i][j]});
    }
  }
  return rows;
}

TEST(CollectivesTest, AllToAllOfSparseRowsEqualsPairByPairSumsOfTheDenseMatrix) {
  std::mt19937_64 rng(29);
  auto tpu = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/tpu-v5e.yaml");
  ASSERT_TRUE(tpu.ok());
  tpu->num_nodes = 2;
  // A switched fabric (row and column sums) and a torus (each pair's route).
  for (const ClusterSpec& cluster : {H100(3), *tpu}) {
    const Topology topo(cluster);
    const int64_t devices = std::min<int64_t>(24, cluster.num_devices());
    std::vector<int64_t> shuffled = Devices(devices);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (const auto& members : {Devices(devices), shuffled}) {
      // Decode-like rows (a few non-zeros of n) and dense ones.
      for (int non_zero_in_16 : {1, 4, 16}) {
        const size_t n = members.size();
        CollectiveCall dense{Collective::kAllToAll, members, 0, 0, {}};
        dense.per_peer.assign(n, std::vector<int64_t>(n, 0));
        for (auto& row : dense.per_peer) {
          for (int64_t& b : row) {
            if (static_cast<int>(rng() % 16) < non_zero_in_16) b = 1 + rng() % 99999;
          }
        }
        const std::vector<std::vector<PeerBytes>> rows = NonZeros(dense.per_peer);
        CollectiveCall sparse{Collective::kAllToAll, members, 0, 0, {}};
        for (const auto& row : rows) sparse.sparse_rows.push_back(row);
        auto plan = Decompose(topo, sparse);
        ASSERT_TRUE(plan.ok());
        ASSERT_EQ(plan->stages.size(), 1u);
        const Stage want = PairByPair(topo, dense);
        const Stage& got = plan->stages[0];
        EXPECT_EQ(got.latency, want.latency);
        ASSERT_EQ(got.loads.size(), want.loads.size())
            << cluster.name << ", " << n << " members, " << non_zero_in_16 << "/16 non-zero";
        for (size_t k = 0; k < want.loads.size(); ++k) {
          EXPECT_EQ(got.loads[k].link, want.loads[k].link);
          EXPECT_EQ(got.loads[k].bytes, want.loads[k].bytes) << topo.LinkName(want.loads[k].link);
        }
      }
    }
  }
}

TEST(CollectivesTest, HierarchicalAllReduceOnTwoNodes) {
  const ClusterSpec c = H100(2);
  const Topology topo(c);
  const double s = 256.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)},
                        Algorithm::kHierarchical);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->stages.size(), 3u);
  const double k = 8, m = 2;
  const double bu = c.scale_up.bandwidth_per_device, bn = c.scale_out.nic_bandwidth_per_device;
  const double expected = 2 * ((k - 1) / k * s / bu + (k - 1) * c.scale_up.latency) +
                          2 * (m - 1) / m * (s / k) / bn + 2 * (m - 1) * c.scale_out.latency;
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
  // For a large buffer across nodes the automatic choice is the hierarchical one.
  auto chosen = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)});
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->algorithm, Algorithm::kHierarchical);
}

TEST(CollectivesTest, TreeAllReduceClosedFormAndSmallMessageChoice) {
  const ClusterSpec c = H100(2);
  const Topology topo(c);
  const double s = 4096;
  auto tree = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)},
                        Algorithm::kTree);
  ASSERT_TRUE(tree.ok());
  // Binary heap over 16: depth 4; a parent's port carries 2 children's S each way.
  const double expected =
      2 * s / c.scale_out.nic_bandwidth_per_device + 2 * 4 * c.scale_out.latency;
  EXPECT_LT(Rel(Simulate(topo, *tree), expected), 1e-9);
  auto chosen = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)});
  ASSERT_TRUE(chosen.ok());
  EXPECT_NE(chosen->algorithm, Algorithm::kRing);  // latency-bound: fewer steps win
}

TEST(CollectivesTest, EightGpuRingAllReduceBusBandwidthNearNvlink) {
  const ClusterSpec c = H100(1);
  const Topology topo(c);
  const double s = 1024.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(8), static_cast<int64_t>(s)},
                        Algorithm::kRing);
  ASSERT_TRUE(plan.ok());
  const double t = Simulate(topo, *plan);
  const double busbw = s / t * 2 * 7 / 8;
  EXPECT_GT(busbw, 0.95 * c.scale_up.bandwidth_per_device);
  EXPECT_LE(busbw, c.scale_up.bandwidth_per_device);
}

TEST(CollectivesTest, ForcedAlgorithmTheCollectiveLacksFallsBackToTheRule) {
  // As NCCL_ALGO: a tree all-gather does not exist, so the all-gather chooses
  // by itself (a ring) and the forced tree still applies to all-reduces.
  const Topology topo(H100(1));
  auto plan = Decompose(topo, {Collective::kAllGather, Devices(8), 1 << 20}, Algorithm::kTree);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->algorithm, Algorithm::kRing);
  EXPECT_FALSE(HasAlgorithm(topo, {Collective::kAllGather, Devices(8), 1 << 20}, Algorithm::kTree));
  auto reduce = Decompose(topo, {Collective::kAllReduce, Devices(8), 1 << 20}, Algorithm::kTree);
  ASSERT_TRUE(reduce.ok());
  EXPECT_EQ(reduce->algorithm, Algorithm::kTree);
  // NVLS needs NVLink SHARP: an untuned cluster has none.
  EXPECT_FALSE(HasAlgorithm(topo, {Collective::kAllReduce, Devices(8), 1 << 20}, Algorithm::kNvls));
}

TEST(CollectivesTest, TorusRingUsesIciLinks) {
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/tpu-v4.yaml");
  ASSERT_TRUE(c.ok());
  const Topology topo(*c);
  const double s = 64.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(4), static_cast<int64_t>(s)},
                        Algorithm::kRing);
  ASSERT_TRUE(plan.ok());
  // 2x2 mesh: no ring hop can be faster than one ICI link carrying 2(n−1)/n·S.
  const double t = Simulate(topo, *plan);
  EXPECT_GE(t, 2 * 3.0 / 4 * s / c->scale_up.link_bandwidth);
}

double Latency(const CollectivePlan& plan) {
  double t = 0;
  for (const Stage& st : plan.stages) t += st.latency;
  return t;
}

// A measured latency (calibration) larger than the algorithm's replaces the
// plan's steps × link latency, spread over its stages; the bytes move as
// before. One smaller than the model's changes nothing (the link latency is
// a floor), and a collective or group size without one keeps the model's.
TEST(CollectivesTest, MeasuredLatencyReplacesTheModelsWhenLarger) {
  const ClusterSpec c = H100(1);
  const Topology model(c);
  const CollectiveCall call{Collective::kAllReduce, Devices(2), 4096};
  auto base = Decompose(model, call, Algorithm::kRing);
  ASSERT_TRUE(base.ok());
  const double base_latency = Latency(*base);
  ASSERT_GT(base_latency, 0);
  ASSERT_LT(base_latency, 30e-6);

  const Topology measured(
      c, {{{Collective::kAllReduce, 2}, {30e-6, 0}}, {{Collective::kSend, 2}, {9e-6, 0}}});
  auto slow = Decompose(measured, call, Algorithm::kRing);
  ASSERT_TRUE(slow.ok());
  EXPECT_NEAR(Latency(*slow), 30e-6, 1e-15);
  EXPECT_NEAR(UncontendedSeconds(measured, *slow) - UncontendedSeconds(model, *base),
              30e-6 - base_latency, 1e-15);
  ASSERT_EQ(slow->stages.size(), base->stages.size());
  for (size_t i = 0; i < slow->stages.size(); ++i) {
    ASSERT_EQ(slow->stages[i].loads.size(), base->stages[i].loads.size());
    for (size_t j = 0; j < slow->stages[i].loads.size(); ++j) {
      EXPECT_EQ(slow->stages[i].loads[j].bytes, base->stages[i].loads[j].bytes);
    }
  }
  // A recv is keyed as its send.
  auto p2p = Decompose(measured, {Collective::kRecv, Devices(2), 4096});
  ASSERT_TRUE(p2p.ok());
  EXPECT_NEAR(p2p->stages.front().latency, 9e-6, 1e-15);
  // Another group size, another collective: the model's.
  auto four = Decompose(measured, {Collective::kAllReduce, Devices(4), 4096}, Algorithm::kRing);
  auto four_model = Decompose(model, {Collective::kAllReduce, Devices(4), 4096}, Algorithm::kRing);
  ASSERT_TRUE(four.ok() && four_model.ok());
  EXPECT_EQ(UncontendedSeconds(measured, *four), UncontendedSeconds(model, *four_model));
  auto gather = Decompose(measured, {Collective::kAllGather, Devices(2), 4096});
  auto gather_model = Decompose(model, {Collective::kAllGather, Devices(2), 4096});
  ASSERT_TRUE(gather.ok() && gather_model.ok());
  EXPECT_EQ(UncontendedSeconds(measured, *gather), UncontendedSeconds(model, *gather_model));
  // Smaller than the model's: unchanged.
  const Topology fast(c, {{{Collective::kAllReduce, 2}, {base_latency / 2, 0}}});
  auto same = Decompose(fast, call, Algorithm::kRing);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(UncontendedSeconds(fast, *same), UncontendedSeconds(model, *base));
}

// The members' wait adds to the measured latency; bytes stay the model's.
TEST(CollectivesTest, MeasuredWaitAddsToTheLatency) {
  const ClusterSpec c = H100(1);
  const Topology model(c);
  const CollectiveCall call{Collective::kAllReduce, Devices(2), 4096};
  auto base = Decompose(model, call, Algorithm::kRing);
  ASSERT_TRUE(base.ok());
  sim::MeasuredCollective line{30e-6, 0, 12e-6};
  const Topology with_line(c, {{{Collective::kAllReduce, 2}, line}});
  auto slow = Decompose(with_line, call, Algorithm::kRing);
  ASSERT_TRUE(slow.ok());
  EXPECT_NEAR(Latency(*slow), 42e-6, 1e-15);
  sim::MeasuredCollective wait_only;
  wait_only.wait = 50e-6;
  const Topology waits(c, {{{Collective::kAllReduce, 2}, wait_only}});
  auto waited = Decompose(waits, call, Algorithm::kRing);
  ASSERT_TRUE(waited.ok());
  EXPECT_NEAR(Latency(*waited), 50e-6, 1e-15);
  EXPECT_NEAR(UncontendedSeconds(waits, *waited) - UncontendedSeconds(model, *base),
              50e-6 - Latency(*base), 1e-15);
}

// A measured bandwidth below the model's stretches the transfer to exactly
// size / algbw on an idle network (latency unchanged); one above it changes
// nothing (the links' bandwidth is a floor on the time).
TEST(CollectivesTest, MeasuredBandwidthSlowsTheTransferOnlyWhenSlower) {
  const ClusterSpec c = H100(1);
  const Topology model(c);
  const int64_t s = 64 << 20;
  const CollectiveCall call{Collective::kAllReduce, Devices(2), s};
  auto base = Decompose(model, call, Algorithm::kRing);
  ASSERT_TRUE(base.ok());
  const double base_transfer = UncontendedSeconds(model, *base) - Latency(*base);
  ASSERT_GT(base_transfer, 0);
  const double algbw = 0.25 * static_cast<double>(s) / base_transfer;  // 4× slower
  const Topology slow(c, {{{Collective::kAllReduce, 2}, {0, algbw}}});
  auto plan = Decompose(slow, call, Algorithm::kRing);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(Latency(*plan), Latency(*base), 1e-18);
  EXPECT_LT(Rel(UncontendedSeconds(slow, *plan) - Latency(*plan), static_cast<double>(s) / algbw),
            1e-12);
  EXPECT_LT(Rel(Simulate(slow, *plan), Latency(*base) + static_cast<double>(s) / algbw), 1e-9);
  const Topology fast(
      c, {{{Collective::kAllReduce, 2}, {0, 4 * static_cast<double>(s) / base_transfer}}});
  auto same = Decompose(fast, call, Algorithm::kRing);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(UncontendedSeconds(fast, *same), UncontendedSeconds(model, *base));
}

// ---- The tuned (NCCL) model: hand-computed from the zoo's H100 terms.

TEST(TunedCollectivesTest, RingAllReduceOnOneNodeHasProtocolLatencyAndEfficiency) {
  const ClusterSpec c = TunedH100(1);
  const Topology topo(c);
  const double s = 1024.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(8), static_cast<int64_t>(s)},
                        Algorithm::kRing, Protocol::kSimple);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->protocol, Protocol::kSimple);
  const ProtocolCost& p = c.collectives.Of(CommProtocol::kSimple);
  // Base latency + 2(n−1) NVLink steps; each link carries 2(n−1)/n·S at the protocol's efficiency.
  const double expected =
      p.ring_base_latency + 14 * p.scale_up_step +
      2 * 7.0 / 8 * s / (c.scale_up.bandwidth_per_device * p.scale_up_efficiency);
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
}

TEST(TunedCollectivesTest, RingAcrossNodesSpreadsOverRailsWithNcclStepCounts) {
  const ClusterSpec c = TunedH100(2);
  const Topology topo(c);
  const double s = 1024.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)},
                        Algorithm::kRing, Protocol::kSimple);
  ASSERT_TRUE(plan.ok());
  const ProtocolCost& p = c.collectives.Of(CommProtocol::kSimple);
  // 30 steps, 2(m−1) = 2 of them over the network; the two boundary hops' bytes
  // spread over each node's 8 NICs, so the NVLink hops bound the transfer.
  const double per_link = 2 * 15.0 / 16 * s;
  const double nvlink = per_link / (c.scale_up.bandwidth_per_device * p.scale_up_efficiency);
  const double nic = per_link / 8 / (c.scale_out.nic_bandwidth_per_device * p.scale_out_efficiency);
  const double expected =
      p.ring_base_latency + 28 * p.scale_up_step + 2 * p.scale_out_step + std::max(nvlink, nic);
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
}

TEST(TunedCollectivesTest, NvlsAllReduceInsideOneNode) {
  const ClusterSpec c = TunedH100(1);
  const Topology topo(c);
  const double s = 4.0 * 1024 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(8), static_cast<int64_t>(s)});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->algorithm, Algorithm::kNvls);  // large messages: NVLS wins, as NCCL picks
  // The switch reduces: S up and S down per GPU at the NVLS efficiency.
  const double expected = c.collectives.nvls_base_latency +
                          s / (c.scale_up.bandwidth_per_device * c.collectives.nvls_efficiency);
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
  // All-gather: S/n up, (n−1)/n·S down.
  auto ag = Decompose(topo, {Collective::kAllGather, Devices(8), static_cast<int64_t>(s)},
                      Algorithm::kNvls);
  ASSERT_TRUE(ag.ok());
  EXPECT_LT(
      Rel(Simulate(topo, *ag),
          c.collectives.nvls_base_latency +
              7.0 / 8 * s / (c.scale_up.bandwidth_per_device * c.collectives.nvls_efficiency)),
      1e-9);
}

TEST(TunedCollectivesTest, NvlsTreeAcrossNodesWithItsPipelineFill) {
  const ClusterSpec c = TunedH100(2);
  const Topology topo(c);
  const double s = 1024.0 * 1024 * 1024;
  auto plan = Decompose(topo, {Collective::kAllReduce, Devices(16), static_cast<int64_t>(s)},
                        Algorithm::kNvlsTree);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->stages.size(), 2u);  // the fill, then the pipeline
  const CommTuning& t = c.collectives;
  const double nvl = c.scale_up.bandwidth_per_device, nic = c.scale_out.nic_bandwidth_per_device;
  const double eff_out = t.Of(CommProtocol::kSimple).scale_out_efficiency;
  // Two nodes: each node sends and receives S over its 8 NICs; NVLink carries S each way.
  const double nvlink_time = s / t.nvls_efficiency / nvl;
  const double nic_load = s / 8 / eff_out;
  ASSERT_GT(nvlink_time, nic_load / nic);  // NVLink bounds; the NICs' first bytes fill
  const double expected = t.nvls_base_latency + 2 * t.nvls_tree_step +
                          std::min(nic_load, t.pipeline_fill_bytes) / nic + nvlink_time;
  EXPECT_LT(Rel(Simulate(topo, *plan), expected), 1e-9);
}

TEST(TunedCollectivesTest, SmallMessagesChooseLowLatencyProtocolsLargeOnesSimple) {
  const Topology topo(TunedH100(2));
  auto small = Decompose(topo, {Collective::kAllReduce, Devices(16), 8});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->protocol, Protocol::kLL);
  // Tree/LL: base 6.8 + 2·((8−1)·0.6 + log2(2)·2.7) µs = 20.6 µs over the chain and one
  // tree level; ring/LL pays 6.6 + 28·0.6 + 2·2.7 µs = 28.8 µs.
  EXPECT_EQ(small->algorithm, Algorithm::kTree);
  auto large = Decompose(topo, {Collective::kAllReduce, Devices(16), int64_t{8} << 30});
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(large->protocol, Protocol::kSimple);
  // Forcing a protocol keeps it where the algorithm has one.
  auto forced = Decompose(topo, {Collective::kAllReduce, Devices(16), int64_t{1} << 30},
                          Algorithm::kRing, Protocol::kLL128);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->protocol, Protocol::kLL128);
}

TEST(TunedCollectivesTest, HierarchicalAllToAllCrossesOncePerNodeThenForwards) {
  const ClusterSpec c = TunedH100(2);
  const Topology topo(c);
  // Member 0 sends 1000 B to members 8 and 9, on the other node.
  std::vector<std::vector<int64_t>> m(16, std::vector<int64_t>(16, 0));
  m[0][8] = m[0][9] = 1000;
  CollectiveCall call{Collective::kAllToAll, Devices(16), 2000, 0, m};
  call.all_to_all = AllToAllKind::kHierarchical;
  call.node_ratio = 0.5;  // half the (token, expert) pairs are distinct (token, node) pairs
  auto plan = Decompose(topo, call);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->algorithm, Algorithm::kHierarchical);
  const ExchangeKernelCost& k = c.collectives.normal;
  std::map<int32_t, double> loads;
  for (const LinkLoad& l : plan->stages.front().loads) loads[l.link] += l.bytes;
  // 2000 B × 0.5 once over the NICs to the same-index GPU (8), which forwards 1000 B to 9.
  EXPECT_DOUBLE_EQ(loads[topo.NicUp(0)], 1000 / k.scale_out_efficiency);
  EXPECT_DOUBLE_EQ(loads[topo.NicDown(8)], 1000 / k.scale_out_efficiency);
  EXPECT_DOUBLE_EQ(loads[topo.ScaleUpUp(8)], 1000 / k.scale_up_efficiency);
  EXPECT_DOUBLE_EQ(loads[topo.ScaleUpDown(9)], 1000 / k.scale_up_efficiency);
  EXPECT_EQ(loads.size(), 4u);
  EXPECT_DOUBLE_EQ(plan->stages.front().latency, k.latency);
  // Low-latency: both copies straight over the NICs, after its own per-call cost.
  call.all_to_all = AllToAllKind::kLowLatency;
  auto ll = Decompose(topo, call);
  ASSERT_TRUE(ll.ok());
  EXPECT_EQ(ll->algorithm, Algorithm::kLowLatency);
  const ExchangeKernelCost& l = c.collectives.low_latency;
  const double t = l.latency + 2000 / l.scale_out_efficiency / c.scale_out.nic_bandwidth_per_device;
  EXPECT_LT(Rel(Simulate(topo, *ll), t), 1e-9);
  // Untuned links know only NCCL's pairwise exchange.
  const Topology ideal(H100(2));
  call.all_to_all = AllToAllKind::kHierarchical;
  auto direct = Decompose(ideal, call);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->algorithm, Algorithm::kDirect);
}

}  // namespace
}  // namespace shardscope::sim
