#include "plan/memory.h"

#include <gtest/gtest.h>

#include "model/params.h"
#include "plan/test_experiments.h"

namespace shardscope {
namespace {

using testing::ZooExperiment;

MemoryPlan Plan(const Experiment& e) {
  auto pl = Placement::Create(e);
  EXPECT_TRUE(pl.ok()) << pl.status().message();
  return PlanMemory(e, *pl);
}

ParallelSpec Sizes(int64_t tp, int64_t pp, int64_t ep = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

TEST(MemoryTest, SingleRankHoldsEveryParameter) {
  for (const char* model : {"llama-3.1-8b", "deepseek-v3", "mixtral-8x7b", "qwen2.5-32b"}) {
    Experiment e = ZooExperiment(model, "h100-sxm", Sizes(1, 1), 1, 16);
    MemoryPlan m = Plan(e);
    EXPECT_DOUBLE_EQ(m.ranks[0].weight_params, static_cast<double>(CountParameters(e.model).total))
        << model;
  }
}

// An FP8 model with its vocabulary matrices in bf16 (as real FP8 checkpoints
// keep them): one more byte per element of the embedding and of the LM head,
// on the stages that hold them; everything else unchanged.
TEST(MemoryTest, VocabularyMatricesAtTheirOwnDtype) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Sizes(2, 2), 1, 16);
  e.workload.dtype = e.workload.kv_dtype = DType::kFp8;
  ASSERT_FALSE(e.model.tie_embeddings);
  const MemoryPlan fp8 = Plan(e);
  e.workload.lm_head_dtype = DType::kBf16;
  const MemoryPlan head = Plan(e);
  e.workload.embedding_dtype = DType::kBf16;
  const MemoryPlan both = Plan(e);
  const double matrix = static_cast<double>(e.model.vocab_size) / 2 * e.model.hidden_size;
  for (size_t r = 0; r < fp8.ranks.size(); ++r) {
    const bool first = r < 2, last = r >= 2;  // order tp, …, pp: ranks 0–1 are stage 0
    EXPECT_DOUBLE_EQ(head.ranks[r].weights - fp8.ranks[r].weights, last ? matrix : 0) << r;
    EXPECT_DOUBLE_EQ(both.ranks[r].weights - head.ranks[r].weights, first ? matrix : 0) << r;
    EXPECT_DOUBLE_EQ(both.ranks[r].weight_params, fp8.ranks[r].weight_params);
    EXPECT_DOUBLE_EQ(both.ranks[r].kv_cache, fp8.ranks[r].kv_cache);
  }
}

TEST(MemoryTest, StagesPartitionTheWeights) {
  Experiment e = ZooExperiment("llama-3.1-70b", "h100-sxm", Sizes(1, 4), 4, 16);
  MemoryPlan m = Plan(e);
  double sum = 0;
  for (const auto& r : m.ranks) sum += r.weight_params;
  EXPECT_DOUBLE_EQ(sum, static_cast<double>(CountParameters(e.model).total));
}

// Llama-3.1-405B at TP8 in FP8 (TensorRT-LLM's perf-overview layout): the eight
// shards hold the 405.85 B parameters between them, ~50.7 GB each (one KV head each).
TEST(MemoryTest, Llama405BTp8Fp8) {
  Experiment e = ZooExperiment("llama-3.1-405b", "h100-sxm", Sizes(8, 1), 8, 16);
  e.workload.dtype = e.workload.kv_dtype = DType::kFp8;
  MemoryPlan m = Plan(e);
  ASSERT_EQ(m.ranks.size(), 8u);
  const double total = static_cast<double>(CountParameters(e.model).total);
  double sum = 0;
  for (const auto& r : m.ranks) {
    sum += r.weight_params;
    EXPECT_NEAR(r.weights / 1e9, 405.85 / 8, 0.2);  // one byte per parameter
  }
  // Every rank keeps whole copies of the norms (126 x 2 block norms + the final one).
  const double norms = 126.0 * 2 * 16384 + 16384;
  EXPECT_DOUBLE_EQ(sum, total + 7 * norms);
}

TEST(MemoryTest, ExpertParallelShardsOnlyTheRoutedExperts) {
  const int64_t ep = 8;
  Experiment e = ZooExperiment("deepseek-v3", "h100-sxm", Sizes(1, 1, ep), 8, 16);
  MemoryPlan m = Plan(e);
  ParamCounts p = CountParameters(e.model);
  double sum = 0;
  for (const auto& r : m.ranks) sum += r.weight_params;
  // Everything but the routed experts is replicated on each EP rank.
  EXPECT_DOUBLE_EQ(sum, static_cast<double>(p.total + (ep - 1) * (p.total - p.routed_experts)));
}

TEST(MemoryTest, KvCachePerToken) {
  // Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 bytes = 128 KiB per token.
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Sizes(1, 1), 1, 1024, 1);
  EXPECT_DOUBLE_EQ(Plan(e).ranks[0].kv_cache, 1024.0 * 128 * 1024);
  // DeepSeek-V3: 61 layers × (512 + 64) latent values × 2 bytes per token.
  e = ZooExperiment("deepseek-v3", "h100-sxm", Sizes(1, 1), 1, 100, 1);
  EXPECT_DOUBLE_EQ(Plan(e).ranks[0].kv_cache, 100.0 * 61 * 576 * 2);
  // MLA's latent is shared by all heads, so TP replicates it instead of splitting it.
  e = ZooExperiment("deepseek-v3", "h100-sxm", Sizes(8, 1), 1, 100, 1);
  EXPECT_DOUBLE_EQ(Plan(e).ranks[3].kv_cache, 100.0 * 61 * 576 * 2);
  // GQA under TP splits KV heads: 8 heads over tp 4.
  e = ZooExperiment("llama-3.1-8b", "h100-sxm", Sizes(4, 1), 1, 1024, 1);
  EXPECT_DOUBLE_EQ(Plan(e).ranks[0].kv_cache, 1024.0 * 128 * 1024 / 4);
}

// A Llama-3.2-1B draft beside a Llama-3.1-8B target at tp 2 (3 requests of
// 1,000 + 4 generated tokens: 1,003 cached at the last): the plan grows by
// exactly the draft's weights and KV cache. By hand: 16 layers × 2 × 8 KV
// heads × 64 × 2 bytes = 32 KiB of draft KV per token; draft_tensor_parallel
// 1 puts all of it and every parameter on tp rank 0; draft_tensor_parallel 2
// halves the matrices and the KV heads, the norms (2,048 + 16 × 2 × 2,048)
// replicated.
TEST(MemoryTest, DraftModelAddsItsWeightsAndKvCache) {
  const Experiment target = ZooExperiment("llama-3.1-8b", "h100-sxm", Sizes(2, 1), 3, 1000, 4);
  const MemoryPlan before = Plan(target);
  Experiment e = target;
  e.speculative.method = SpeculativeMethod::kDraft;
  e.speculative.draft_tokens = 2;
  e.speculative.acceptance = {0.5, 0.5};
  auto draft = LoadZooModel("llama-3.2-1b", DefaultModelsDir());
  ASSERT_TRUE(draft.ok());
  e.speculative.draft_model = *draft;
  const double params = static_cast<double>(CountParameters(*draft).total);
  const double norms = 2048 + 16 * 2 * 2048;
  const double tokens = 3 * 1003;
  const double kv_per_token = 16 * 2 * 8 * 64 * 2;
  e.speculative.draft_tp = 1;
  MemoryPlan after = Plan(e);
  EXPECT_DOUBLE_EQ(after.ranks[0].weight_params - before.ranks[0].weight_params, params);
  EXPECT_DOUBLE_EQ(after.ranks[0].weights - before.ranks[0].weights, 2 * params);
  EXPECT_DOUBLE_EQ(after.ranks[0].kv_cache - before.ranks[0].kv_cache, tokens * kv_per_token);
  EXPECT_EQ(after.ranks[1].total(), before.ranks[1].total());
  EXPECT_EQ(after.ranks[0].activations, before.ranks[0].activations);
  e.speculative.draft_tp = 2;
  after = Plan(e);
  for (int r : {0, 1}) {
    EXPECT_DOUBLE_EQ(after.ranks[r].weights - before.ranks[r].weights,
                     2 * ((params - norms) / 2 + norms));
    EXPECT_DOUBLE_EQ(after.ranks[r].kv_cache - before.ranks[r].kv_cache, tokens * kv_per_token / 2);
  }
}

TEST(MemoryTest, Seed001RingAttentionCannotFitItsKvCache) {
  ParallelSpec p;
  p.sp = 16;
  Experiment e = ZooExperiment("seed-dense-16l", "h100-sxm", p, 128, 100000, 1);
  MemoryPlan m = Plan(e);
  // 128 × 100 000 tokens × 16 layers × 2 × 4096 × 2 bytes / 16 ranks ≈ 210 GB.
  EXPECT_NEAR(m.Peak().kv_cache, 128.0 * 100000 * 16 * 2 * 4096 * 2 / 16, 1);
  EXPECT_FALSE(m.Fits());
}

}  // namespace
}  // namespace shardscope
