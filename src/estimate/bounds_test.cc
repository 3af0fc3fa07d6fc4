#include "estimate/bounds.h"

#include <gtest/gtest.h>

#include "plan/test_experiments.h"

namespace shardscope {
namespace {

using testing::ZooExperiment;

// A program in which every rank runs the given ops (comm ops get the rank's group).
PhaseProgram Uniform(const Placement& pl, const std::vector<Op>& ops) {
  PhaseProgram p;
  for (int64_t r = 0; r < pl.world_size(); ++r) {
    RankProgram rp;
    rp.rank = r;
    for (Op op : ops) {
      if (op.is_comm()) op.group_id = pl.GroupOf(r, op.dim).id;
      rp.ops.push_back(op);
    }
    p.ranks.push_back(rp);
  }
  return p;
}

Op AllReduce(Dim dim, int64_t bytes) {
  Op op;
  op.kind = OpKind::kComm;
  op.collective = Collective::kAllReduce;
  op.dim = dim;
  op.bytes = bytes;
  return op;
}

Op Gemm(int64_t flops, int64_t bytes) {
  Op op;
  op.kind = OpKind::kFfnUp;
  op.flops = flops;
  op.bytes_read = bytes;
  return op;
}

ParallelSpec Tp(int64_t tp) {
  ParallelSpec p;
  p.tp = tp;
  return p;
}

TEST(BoundsTest, ComputeAndMemoryTerms) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Tp(1), 1, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  auto b = BoundPhase(e, *pl, Uniform(*pl, {Gemm(989'400'000'000'000, 3'350'000'000)}));
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->compute, 1.0);  // one second at 989.4 TFLOP/s
  EXPECT_DOUBLE_EQ(b->memory, 1e-3);  // 3.35 GB at 3.35 TB/s
  EXPECT_EQ(b->network, 0);
  EXPECT_EQ(b->dominant(), BoundKind::kCompute);
}

TEST(BoundsTest, AllReduceInsideOneNode) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Tp(8), 8, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  const double s = 1e9;
  auto b = BoundPhase(e, *pl, Uniform(*pl, {AllReduce(Dim::kTp, 1'000'000'000)}));
  ASSERT_TRUE(b.ok());
  // The switch reduces (NVLS): (n−1)/n · S each way over 450 GB/s NVLink, plus
  // one NVLink latency (0.6 us).
  EXPECT_NEAR(b->network, 7.0 / 8 * s / 450e9 + 0.6e-6, 1e-12);
  // Without NVLS the ring's 2(n−1)/n · S.
  e.cluster.collectives.nvls = false;
  b = BoundPhase(e, *pl, Uniform(*pl, {AllReduce(Dim::kTp, 1'000'000'000)}));
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->network, 2.0 * 7 / 8 * s / 450e9 + 0.6e-6, 1e-12);
}

TEST(BoundsTest, AllReduceAcrossTwoNodesIsBoundByTheNics) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Tp(16), 16, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  const double s = 1e9;
  auto b = BoundPhase(e, *pl, Uniform(*pl, {AllReduce(Dim::kTp, 1'000'000'000)}));
  ASSERT_TRUE(b.ok());
  // Inside (NVLS): 7/8·S at 450 GB/s = 1.9 ms. Across: each node exchanges
  // 2·1/2·S over its 8 NICs of 50 GB/s = 2.5 ms. The larger, plus the network
  // latency (2.7 us).
  double inside = 7.0 / 8 * s / 450e9, across = 2.0 * 1 / 2 * s / 8 / 50e9;
  EXPECT_NEAR(b->network, std::max(inside, across) + 2.7e-6, 1e-12);
  // Without NVLS the ring inside a node (2·7/8·S = 3.9 ms) dominates.
  e.cluster.collectives.nvls = false;
  b = BoundPhase(e, *pl, Uniform(*pl, {AllReduce(Dim::kTp, 1'000'000'000)}));
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->network, 2.0 * 7 / 8 * s / 450e9 + 2.7e-6, 1e-12);
}

TEST(BoundsTest, AllToAllCountsRealPeerBytesByLink) {
  ParallelSpec p;
  p.ep = 16;
  Experiment e = ZooExperiment("deepseek-v3", "h100-sxm", p, 16, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  Op a2a;
  a2a.kind = OpKind::kComm;
  a2a.collective = Collective::kAllToAll;
  a2a.dim = Dim::kEp;
  for (int32_t j = 0; j < 16; ++j) {
    a2a.peer_sends.push_back({j, 1'000'000});  // 1 MB to every member (self included)
  }
  a2a.bytes = 16'000'000;
  // NCCL's pairwise exchange: 7 peers on the node over NVLink (7 MB / 450 GB/s),
  // 8 on the other node over the NIC (8 MB / 50 GB/s = 160 us): the NIC dominates.
  e.communication.prefill_all_to_all = AllToAllKind::kNccl;
  auto b = BoundPhase(e, *pl, Uniform(*pl, {a2a}));
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->network, 8e6 / 50e9 + 2.7e-6, 1e-12);
  // The hierarchical kernels (the default on this tuned NVSwitch cluster) send a
  // token to a node once for up to topk = 8 of its pairs: at least 1 MB crosses
  // (20 us), still above NVLink's 7 MB / 450 GB/s = 15.6 us.
  e.communication.prefill_all_to_all = AllToAllKind::kAuto;
  b = BoundPhase(e, *pl, Uniform(*pl, {a2a}));
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->network, 1e6 / 50e9 + 2.7e-6, 1e-12);
}

TEST(BoundsTest, PipelineStagesAddUpByMicroBatch) {
  ParallelSpec p;
  p.pp = 2;
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", p, 4, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  PhaseProgram prog = Uniform(*pl, {Gemm(989'400'000'000'000, 0)});  // 1 s on each stage
  prog.micro_batches = 1;
  auto one = BoundPhase(e, *pl, prog);
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->compute, 2.0);  // stages in sequence
  prog.micro_batches = 4;
  auto four = BoundPhase(e, *pl, prog);
  ASSERT_TRUE(four.ok());
  EXPECT_DOUBLE_EQ(four->compute, 1.25);  // 1 s + the other stage's first quarter
}

TEST(BoundsTest, ClaimsAgainstBounds) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Tp(8), 64, 2048, 64);
  e.claims = {{"tps", 1e12},
              {"tpot_ms", 1000},
              {"ttft_ms", 1e-6},
              {"memory_per_gpu_gb", 1e-3},
              {"decode_tokens_per_s", 1}};
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  auto b = ComputeBounds(e, *pl);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT(b->ttft.seconds(), 0);
  EXPECT_GT(b->tpot.seconds(), 0);
  EXPECT_NEAR(b->total, b->ttft.seconds() + 63 * b->tpot.seconds(), 1e-12);
  EXPECT_EQ(b->tpot.dominant(), BoundKind::kMemory);  // decode reads weights and KV cache
  auto checks = CheckClaims(e, *b, PlanMemory(e, *pl));
  ASSERT_EQ(checks.size(), 5u);
  for (const ClaimCheck& c : checks) {
    bool expect_possible = c.key == "tpot_ms" || c.key == "decode_tokens_per_s";
    EXPECT_EQ(c.possible, expect_possible) << c.key << ": " << c.reason;
    EXPECT_FALSE(c.reason.empty());
  }
}

}  // namespace
}  // namespace shardscope
