#include "serve/kv_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "config/engine_profile.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "plan/test_experiments.h"

namespace shardscope::serve {
namespace {

using shardscope::testing::ZooExperiment;
using ::testing::HasSubstr;

// Llama-3.1-70B in FP8 (weights and KV cache; the vocabulary matrices in bf16,
// as real FP8 checkpoints keep them) served on one H100 with vLLM's defaults.
Experiment Fp8SeventyB() {
  ParallelSpec p;
  p.strategy = "single";
  Experiment e = ZooExperiment("llama-3.1-70b", "h100-sxm", p, 1, 1024, 128);
  e.workload.dtype = DType::kFp8;
  e.workload.kv_dtype = DType::kFp8;
  e.workload.lm_head_dtype = DType::kBf16;
  e.workload.embedding_dtype = DType::kBf16;
  e.serving = ServingSpec{};
  return e;
}

// issue 33: the KV pool is gpu_memory_utilization × the usable capacity the
// runtime reports (81,559 MiB on an H100), not × the datasheet's 80 GB. An
// FP8 70B on one H100 runs as it does in vLLM; with 80 GB it had no room.
TEST(KvBudgetTest, Fp8SeventyBOnOneH100UsesTheUsableCapacity) {
  const Experiment e = Fp8SeventyB();
  ASSERT_DOUBLE_EQ(e.cluster.device.memory_bytes, 81559.0 * 1048576);
  ASSERT_DOUBLE_EQ(e.serving->scheduler.gpu_memory_utilization, 0.9);
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  // 80 layers × 8 KV heads × 128 × (K, V) × 1 byte.
  EXPECT_DOUBLE_EQ(b->bytes_per_token, 80.0 * 8 * 128 * 2);
  // The rank's weights, activations of one 8192-token iteration and buffers.
  Experiment probe = e;
  probe.workload.sequence_length = e.serving->scheduler.max_num_batched_tokens;
  probe.workload.tokens_to_generate = 1;
  auto placement = Placement::Create(probe);
  ASSERT_TRUE(placement.ok());
  const MemoryPlan plan = PlanMemory(probe, *placement);
  const RankMemory& r = plan.ranks[0];
  // ~68.4e9 FP8 parameters + 2 × 128,256 × 8,192 bf16 vocabulary parameters.
  EXPECT_NEAR(r.weights, 68.4e9 + 2 * 2 * 128256.0 * 8192, 0.3e9);
  const double free = 0.9 * 81559.0 * 1048576 - r.weights - r.activations - r.comm_buffers;
  EXPECT_NEAR(b->free_bytes, free, 1.0);
  EXPECT_GT(free, 0);
  EXPECT_EQ(b->blocks, static_cast<int64_t>(std::floor(free / (80.0 * 8 * 128 * 2) / 16)));
  EXPECT_GT(b->tokens(), 4096);  // room for a few requests

  // The datasheet's 80 GB leave 72 GB to the server: less than the weights.
  Experiment datasheet = e;
  datasheet.cluster.device.memory_bytes = 80e9;
  auto refused = PlanKvBudget(datasheet);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no room for the KV cache"));
}

// gpu_memory_utilization scales the usable capacity: free bytes move by the
// difference times the capacity, and nothing else changes.
TEST(KvBudgetTest, GpuMemoryUtilizationAppliesToTheUsableCapacity) {
  Experiment e = Fp8SeventyB();
  e.serving->scheduler.gpu_memory_utilization = 0.95;
  auto high = PlanKvBudget(e);
  e.serving->scheduler.gpu_memory_utilization = 0.9;
  auto low = PlanKvBudget(e);
  ASSERT_TRUE(high.ok() && low.ok());
  EXPECT_NEAR(high->free_bytes - low->free_bytes, 0.05 * 81559.0 * 1048576, 1.0);
}

// TensorRT-LLM sizes its KV cache as a share of what weights, activations and
// buffers leave free (kv_cache_free_gpu_memory_fraction): with the rest R of
// capacity C, 0.9 × (C − R) where vLLM's rule gives 0.9 × C − R.
TEST(KvBudgetTest, ShareOfFreeMemoryIsTensorRtLlmsRule) {
  Experiment e = Fp8SeventyB();
  auto capacity_rule = PlanKvBudget(e);
  e.serving->scheduler.memory_rule = KvMemoryRule::kShareOfFree;
  auto free_rule = PlanKvBudget(e);
  ASSERT_TRUE(capacity_rule.ok() && free_rule.ok());
  const double c = 81559.0 * 1048576;
  const double rest = 0.9 * c - capacity_rule->free_bytes;
  EXPECT_NEAR(free_rule->free_bytes, 0.9 * (c - rest), 1.0);
  EXPECT_GT(free_rule->blocks, capacity_rule->blocks);
}

// issue 33's "done when": an FP8 70B on one H100 runs with the vLLM profile.
TEST(KvBudgetTest, Fp8SeventyBOnOneH100RunsWithTheVllmProfile) {
  Experiment e = Fp8SeventyB();
  EngineInputs in;
  in.max_model_len = e.model.max_position_embeddings;
  in.device_memory_bytes = e.cluster.device.memory_bytes;
  e.serving->scheduler = EngineSchedulerDefaults({"vllm", "0.6"}, in);
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->block_size, 16);
  EXPECT_GT(b->tokens(), 4096);
}

}  // namespace
}  // namespace shardscope::serve
