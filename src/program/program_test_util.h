// Small models, clusters and experiments for the program tests (test-only).
#ifndef SHARDSCOPE_PROGRAM_PROGRAM_TEST_UTIL_H_
#define SHARDSCOPE_PROGRAM_PROGRAM_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>

#include "config/experiment.h"
#include "plan/placement.h"
#include "program/program.h"
#include "program/program_builder.h"
#include "program/program_check.h"

namespace shardscope::testing {

// 4 layers, 8 heads over 2 KV heads (KV heads replicate for tp 4 and 8), an
// uneven vocabulary (1003 does not divide by 2, 4 or 8), biases everywhere.
inline ModelSpec TinyDense() {
  ModelSpec m;
  m.name = "tiny-dense";
  m.vocab_size = 1003;
  m.hidden_size = 64;
  m.num_layers = 4;
  m.num_heads = 8;
  m.num_kv_heads = 2;
  m.head_dim = 8;
  m.qkv_bias = true;
  m.o_bias = true;
  m.mlp_bias = true;
  m.intermediate_size = 168;  // 168 / 8 = 21, odd per rank
  return m;
}

// Llama-3.1-8B's shape.
inline ModelSpec Llama8B() {
  ModelSpec m;
  m.name = "llama-3.1-8b";
  m.vocab_size = 128256;
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 14336;
  m.rope_theta = 500000;
  return m;
}

// A small DeepSeek-like model: MLA, first layer dense, then MoE with 16 routed
// experts (top 2) and one shared expert, sigmoid router.
inline ModelSpec TinyMoe(bool mla = true, int64_t q_lora_rank = 24) {
  ModelSpec m;
  m.name = "tiny-moe";
  m.vocab_size = 512;
  m.hidden_size = 64;
  m.num_layers = 3;
  m.num_heads = 8;
  if (mla) {
    m.attention = AttentionKind::kMla;
    m.mla = MlaSpec{q_lora_rank, 16, 8, 4, 8};
  } else {
    m.num_kv_heads = 4;
    m.head_dim = 8;
  }
  m.intermediate_size = 128;
  m.moe.num_routed_experts = 16;
  m.moe.experts_per_token = 2;
  m.moe.num_shared_experts = 1;
  m.moe.expert_intermediate_size = 32;
  m.moe.first_dense_layers = 1;
  m.moe.router = RouterKind::kSigmoidBias;
  m.moe.n_group = 4;
  m.moe.topk_group = 2;
  return m;
}

inline ClusterSpec TestCluster(int64_t devices) {
  ClusterSpec c;
  c.name = "test";
  c.device.peak_flops[DType::kBf16] = 1e15;
  c.device.memory_bytes = 80e9;
  c.device.memory_bandwidth = 3e12;
  c.devices_per_node = 8;
  c.num_nodes = (devices + 7) / 8;
  c.scale_up.kind = ScaleUpKind::kSwitched;
  c.scale_up.domain_size = 8;
  c.scale_up.bandwidth_per_device = 450e9;
  c.scale_out.nic_bandwidth_per_device = 50e9;
  return c;
}

struct Sizes {
  int64_t tp = 1, sp = 1, ep = 1, dp = 1, pp = 1;
};

inline Experiment MakeExperiment(const ModelSpec& model, Sizes s, int64_t batch, int64_t seq) {
  Experiment e;
  e.name = "test";
  e.model = model;
  e.parallel.tp = s.tp, e.parallel.sp = s.sp, e.parallel.ep = s.ep;
  e.parallel.dp = s.dp, e.parallel.pp = s.pp;
  e.workload.batch_size = batch;
  e.workload.sequence_length = seq;
  e.workload.tokens_to_generate = 8;
  e.workload.seed = 7;
  e.cluster = TestCluster(e.parallel.world_size());
  return e;
}

struct Built {
  Placement placement;
  PhaseProgram program;
};

// Places and builds one phase; fails the test on error.
inline Built BuildOrDie(const Experiment& e, Phase phase, int64_t step = 0) {
  auto placement = Placement::Create(e);
  EXPECT_TRUE(placement.ok()) << placement.status().ToString();
  auto builder = ProgramBuilder::Create(e, *placement);
  EXPECT_TRUE(builder.ok()) << builder.status().ToString();
  auto program = builder->Build(phase, step);
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  return Built{*placement, *program};
}

// Σ over ranks and compute ops of value(op) · (scale / replication): scale ×
// the single-device total, exact when every replication divides scale.
inline int64_t ScaledUnique(const PhaseProgram& p, int64_t scale,
                            const std::function<int64_t(const Op&)>& value) {
  int64_t sum = 0;
  for (const RankProgram& rp : p.ranks) {
    for (const Op& op : rp.ops) {
      if (op.is_comm()) continue;
      EXPECT_EQ(scale % op.replication, 0) << OpName(op);
      sum += value(op) * (scale / op.replication);
    }
  }
  return sum;
}

inline int64_t SumFlops(const RankProgram& rp) { return Totals(rp).flops; }

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_PROGRAM_PROGRAM_TEST_UTIL_H_
