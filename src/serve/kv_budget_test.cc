#include "serve/kv_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "config/engine_profile.h"
#include "config/precision.h"
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

// Serves `e` (one device) with `engine`'s scheduler defaults for its model and device.
void UseEngine(Experiment* e, const EngineSpec& engine) {
  EngineInputs in;
  in.max_model_len = e->model.max_position_embeddings;
  in.device_memory_bytes = e->cluster.device.memory_bytes;
  e->serving->scheduler = EngineSchedulerDefaults(engine, in);
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
  UseEngine(&e, {"vllm", "0.6"});
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->block_size, 16);
  EXPECT_GT(b->tokens(), 4096);
}

// The same with the dtype roles a vLLM FP8 checkpoint runs under: W8A8 layer
// matrices (`precision: w8a8-fp8`), the vocabulary matrices and the KV cache
// in bf16 (vLLM 0.6's kv_cache_dtype "auto"). It runs; the bf16 model does not.
TEST(KvBudgetTest, W8a8SeventyBOnOneH100RunsWithTheVllmProfileAndBf16DoesNot) {
  ParallelSpec p;
  p.strategy = "single";
  Experiment e = ZooExperiment("llama-3.1-70b", "h100-sxm", p, 1, 2048, 2);
  e.serving = ServingSpec{};
  UseEngine(&e, {"vllm", "0.6"});
  Experiment bf16 = e;
  ASSERT_TRUE(ApplyPrecisionPreset("w8a8-fp8", &e.precision).ok());
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  // 80 layers × 8 KV heads × 128 × (K, V) × 2 bytes.
  EXPECT_DOUBLE_EQ(b->bytes_per_token, 80.0 * 8 * 128 * 2 * 2);
  EXPECT_GT(b->tokens(), 4096);  // room for two 2,048-token requests
  auto refused = PlanKvBudget(bf16);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no room for the KV cache"));
}

// Under expert parallelism attention is data-parallel: the replica's budget of
// tokens is spread over its ep ranks, and an MoE layer holds the copies routed
// to the rank's experts. tiny-moe-mla (h 256, 4 MLA heads of q/k 48 and v 32,
// layer 0 dense with a SwiGLU FFN of 512, layer 1 MoE: 8 experts of 128, top-2,
// one shared expert, vocabulary 512), bf16, EP4, 4,096 tokens per iteration:
// each rank holds 1,024 tokens and receives 2 × 4,096 / 4 = 2,048 expert copies.
TEST(KvBudgetTest, ExpertParallelRanksHoldTheirShareOfTheIterationsActivations) {
  ParallelSpec p;
  p.strategy = "expert";
  p.ep = 4;
  Experiment e = ZooExperiment("tiny-moe-mla", "h100-sxm", p, 4, 1024, 16);
  e.serving = ServingSpec{};
  e.serving->scheduler.max_num_batched_tokens = 4096;
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  // Per layer the widest live set: the MoE layer's 2,048 received copies of
  // the hidden state and their expert intermediates (gate, up, product:
  // 3 × 128), the shared expert's on the rank's 1,024 tokens, beside the
  // layer's input and residual (2h) of those tokens; bf16. The attention
  // (4 × (2 × 48 + 2 × 32) = 640 per token) and the dense FFN (3 × 512 =
  // 1,536) are narrower than the MoE layer's 1,664 per token.
  const double moe = 2048.0 * (256 + 3 * 128) + 1024.0 * 3 * 128;
  const double act = 2.0 * (1024.0 * 2 * 256 + moe);
  const double logits = 512.0 * 4;  // fp32 logits of the rank's one request
  EXPECT_DOUBLE_EQ(b->activation_bytes, act + logits);
  EXPECT_DOUBLE_EQ(act + logits, 4458496.0);
  // Not the whole iteration on every rank (the defect: 4 × as much).
  EXPECT_LT(b->activation_bytes, 4 * act / 3);
}

// Without expert parallelism a rank holds the whole iteration, as before:
// Llama-3.1-8B at TP2, bf16, 8,192 tokens: the FFN's 3 × 14,336 / 2 = 21,504
// values per token (wider than attention's 16 heads × (2 × 128 + 2 × 128) =
// 8,192) beside 2h = 8,192; the last token's fp32 logits over 128,256 / 2.
TEST(KvBudgetTest, TensorParallelRanksHoldTheWholeIteration) {
  ParallelSpec p;
  p.strategy = "tensor";
  p.tp = 2;
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", p, 1, 1024, 16);
  e.serving = ServingSpec{};
  ASSERT_EQ(e.serving->scheduler.max_num_batched_tokens, 8192);
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_DOUBLE_EQ(b->activation_bytes, 8192.0 * 2 * (8192 + 21504) + 128256.0 / 2 * 4);
}

// tiny-dense (h 256, 2 layers, 4 heads and 2 KV heads of 64, SwiGLU FFN of
// 512, vocabulary 512, untied), bf16, on one H100 (81,559 MiB usable).
// Weights: embedding and head 2 × 512 × 256, per layer q and o 2 × 256 × 256,
// k and v 2 × 256 × 128, FFN 3 × 256 × 512, two norms 2 × 256; a final norm 256.
// KV per token: 2 layers × 2 KV heads × 64 × (K, V) × 2 bytes = 1,024.
constexpr double kTinyDenseWeights =
    2.0 * (2 * 512 * 256 + 2 * (2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512 + 2 * 256) + 256);
constexpr double kH100Usable = 81559.0 * 1048576;

Experiment TinyDenseWithEngine(const std::string& engine) {
  ParallelSpec p;
  p.strategy = "single";
  Experiment e = ZooExperiment("tiny-dense", "h100-sxm", p, 1, 1024, 16);
  e.serving = ServingSpec{};
  UseEngine(&e, {engine, ""});
  return e;
}

// SGLang's mem_fraction_static holds the weights and the KV pool only
// (model_runner.py profile_max_num_token: free after the weights less
// total × (1 − fraction)): pool = 0.88 × capacity − weights, the iteration's
// activations are not subtracted; they live in the 12 % outside.
TEST(KvBudgetTest, SglangsStaticShareHoldsWeightsAndThePoolOnly) {
  const Experiment e = TinyDenseWithEngine("sglang");
  ASSERT_EQ(e.serving->scheduler.memory_rule, KvMemoryRule::kStaticShare);
  ASSERT_DOUBLE_EQ(e.serving->scheduler.gpu_memory_utilization, 0.88);
  ASSERT_EQ(e.serving->scheduler.max_num_batched_tokens, 8192);
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_DOUBLE_EQ(kTinyDenseWeights, 2886144.0);
  EXPECT_DOUBLE_EQ(b->bytes_per_token, 1024.0);
  EXPECT_DOUBLE_EQ(b->free_bytes, 0.88 * kH100Usable - kTinyDenseWeights);
  EXPECT_EQ(b->block_size, 1);
  EXPECT_EQ(b->blocks,
            static_cast<int64_t>(std::floor((0.88 * kH100Usable - kTinyDenseWeights) / 1024)));
  // 8,192 tokens × 2 bytes × (2h + the FFN's 3 × 512) + fp32 logits of 512:
  // reported, not reserved inside the share.
  EXPECT_DOUBLE_EQ(b->activation_bytes, 8192.0 * 2 * (512 + 1536) + 512 * 4);
}

// vLLM's rule is unchanged: 0.9 × capacity − weights − the activations of its
// 4,096-token iteration (max(max_model_len, 2048), no chunked prefill at 4K).
TEST(KvBudgetTest, VllmsShareStillSubtractsTheActivations) {
  const Experiment e = TinyDenseWithEngine("vllm");
  ASSERT_EQ(e.serving->scheduler.memory_rule, KvMemoryRule::kShareOfCapacity);
  ASSERT_EQ(e.serving->scheduler.max_num_batched_tokens, 4096);
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const double act = 4096.0 * 2 * (512 + 1536) + 512 * 4;
  EXPECT_DOUBLE_EQ(b->activation_bytes, act);
  EXPECT_DOUBLE_EQ(b->free_bytes, 0.9 * kH100Usable - kTinyDenseWeights - act);
  EXPECT_EQ(b->blocks, static_cast<int64_t>(
                           std::floor((0.9 * kH100Usable - kTinyDenseWeights - act) / 1024 / 16)));
}

// The static share leaves the activations the rest of the capacity: a share
// that leaves too little for them is refused, naming the figures.
TEST(KvBudgetTest, StaticShareRefusesActivationsThatDoNotFitOutsideIt) {
  Experiment e = TinyDenseWithEngine("sglang");
  // 1 − 0.9999 of 85.5 GB is 8.6 MB, less than the 33.6 MB of activations.
  e.serving->scheduler.gpu_memory_utilization = 0.9999;
  auto refused = PlanKvBudget(e);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("rank 0 has no room for its activations"));
  EXPECT_THAT(refused.status().message(), HasSubstr("outside the static share 0.9999"));
  // 0.999 leaves 85.5 MB: it fits, and the pool is 0.999 × capacity − weights.
  e.serving->scheduler.gpu_memory_utilization = 0.999;
  auto b = PlanKvBudget(e);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_DOUBLE_EQ(b->free_bytes, 0.999 * kH100Usable - kTinyDenseWeights);
  // A share smaller than the weights leaves no pool.
  e.serving->scheduler.gpu_memory_utilization = 1e-6;
  auto none = PlanKvBudget(e);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no room for the KV cache"));
  EXPECT_THAT(none.status().message(), HasSubstr("(weights and KV pool)"));
}

}  // namespace
}  // namespace shardscope::serve
