// The Program under dtype roles (config/precision.h): GEMM, quantisation,
// KV-cache and all-reduce bytes by hand, and an unchanged bf16 Program.
#include <gtest/gtest.h>

#include "plan/memory.h"
#include "program/program_builder.h"
#include "program/program_test_util.h"

namespace shardscope {
namespace {

using testing::BuildOrDie;
using testing::Built;
using testing::MakeExperiment;

Experiment WithPresets(Experiment e, std::initializer_list<const char*> names) {
  for (const char* n : names) EXPECT_TRUE(ApplyPrecisionPreset(n, &e.precision).ok()) << n;
  return e;
}

const Op* Find(const RankProgram& rp, OpRole role, int32_t layer = 0) {
  for (const Op& op : rp.ops) {
    if (op.role == role && op.layer == layer) return &op;
  }
  return nullptr;
}

// W8A8 FP8 per tensor on tiny-dense (h 64, 8 + 2 + 2 heads of 8, biases),
// one request of 16 tokens: the fused q/k/v GEMM reads its input as FP8 with
// one fp32 scale, its 64 × 96 weights as FP8 with one fp32 scale and its bf16
// bias, and writes bf16; a quantisation op before it reads the bf16 input twice
// (amax, then cast) and writes the FP8 copy and its scale.
TEST(ProgramBuilderPrecisionTest, W8A8GemmAndItsQuantisationByHand) {
  const Experiment e = WithPresets(MakeExperiment(testing::TinyDense(), {}, 1, 16), {"w8a8-fp8"});
  const Built b = BuildOrDie(e, Phase::kPrefill);
  const RankProgram& rp = b.program.ranks[0];
  const Op* qkv = Find(rp, OpRole::kQkvProj);
  ASSERT_NE(qkv, nullptr);
  const int64_t m = 16, k = 64, n = 96;
  EXPECT_EQ(qkv->flops, 2 * m * k * n + m * n);
  EXPECT_EQ(qkv->weight_bytes, k * n * 1 + 4 + n * 2);  // 6340
  EXPECT_EQ(qkv->bytes_read, m * k * 1 + 4 + 6340);     // 7368
  EXPECT_EQ(qkv->bytes_written, m * n * 2);             // bf16 output
  const Op* quant = Find(rp, OpRole::kQuantAttn);
  ASSERT_NE(quant, nullptr);
  EXPECT_EQ(quant->kind, OpKind::kQuantize);
  EXPECT_EQ(quant->id + 1, qkv->id);  // right before its GEMM
  EXPECT_EQ(quant->bytes_read, 2 * m * k * 2);
  EXPECT_EQ(quant->bytes_written, m * k + 4);
  EXPECT_EQ(quant->replication, 1);
  // One quantisation per GEMM input: attention, o_proj, FFN up, FFN down; every
  // layer, not the LM head (bf16).
  int quant_ops = 0;
  for (const Op& op : rp.ops) quant_ops += op.kind == OpKind::kQuantize;
  EXPECT_EQ(quant_ops, 4 * e.model.num_layers);
  const Op* head = nullptr;
  for (const Op& op : rp.ops) head = op.kind == OpKind::kLmHead ? &op : head;
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->weight_bytes, 2 * k * e.model.vocab_size);
  // Elementwise ops stay in bf16: the input norm reads and writes 2 bytes a value.
  const Op* norm = Find(rp, OpRole::kInputNorm);
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->bytes_written, m * k * 2);
}

// An FP8 KV cache: the append writes a byte per value and decode attention
// reads the cache at a byte per value; the memory plan holds half the bytes.
// Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 = 65 536 values per token.
TEST(ProgramBuilderPrecisionTest, Fp8KvCacheBytesPerToken) {
  const int64_t values_per_token = 32 * 2 * 8 * 128;
  const Experiment bf16 = MakeExperiment(testing::Llama8B(), {}, 1, 1000);
  const Experiment fp8 = WithPresets(bf16, {"fp8-kv"});
  auto placement = Placement::Create(bf16);
  ASSERT_TRUE(placement.ok());
  // Prompt + 7 of the 8 generated tokens (the last is never fed back).
  const int64_t tokens = 1000 + 7;
  EXPECT_DOUBLE_EQ(PlanMemory(bf16, *placement).ranks[0].kv_cache,
                   static_cast<double>(tokens * values_per_token * 2));
  EXPECT_DOUBLE_EQ(PlanMemory(fp8, *placement).ranks[0].kv_cache,
                   static_cast<double>(tokens * values_per_token * 1));
  // The weights do not change.
  EXPECT_DOUBLE_EQ(PlanMemory(fp8, *placement).ranks[0].weights,
                   PlanMemory(bf16, *placement).ranks[0].weights);

  const Built b = BuildOrDie(fp8, Phase::kDecode, 0);
  const RankProgram& rp = b.program.ranks[0];
  const Op* append = Find(rp, OpRole::kKvAppend);
  const Op* attn = Find(rp, OpRole::kAttentionDecode);
  ASSERT_NE(append, nullptr);
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(append->bytes_written, 2 * 8 * 128);  // one token's K and V of one layer
  EXPECT_EQ(append->bytes_read, 2 * 8 * 128 * 2);
  const int64_t keys = 1000 + 1;
  EXPECT_EQ(attn->bytes_read, 32 * 128 * 2 + keys * 2 * 8 * 128 * 1);  // bf16 query, fp8 cache
}

// W8A8 keeps the TP all-reduces in bf16 (the legacy `dtype: fp8` halves them),
// unless the roles say all_reduce: fp8.
TEST(ProgramBuilderPrecisionTest, AllReducesFollowTheirRole) {
  const Experiment base = MakeExperiment(testing::TinyDense(), {.tp = 2}, 1, 16);
  auto reduce_bytes = [](const Experiment& e) {
    const Built b = BuildOrDie(e, Phase::kPrefill);
    const Op* op = Find(b.program.ranks[0], OpRole::kAttnReduce);
    EXPECT_NE(op, nullptr);
    return op ? op->bytes : -1;
  };
  EXPECT_EQ(reduce_bytes(WithPresets(base, {"w8a8-fp8"})), 16 * 64 * 2);
  Experiment legacy = base;
  legacy.workload.dtype = legacy.workload.kv_dtype = DType::kFp8;
  EXPECT_EQ(reduce_bytes(legacy), 16 * 64 * 1);
  Experiment fp8_reduce = WithPresets(base, {"w8a8-fp8"});
  fp8_reduce.precision.all_reduce = DType::kFp8;
  EXPECT_EQ(reduce_bytes(fp8_reduce), 16 * 64 * 1);
}

// W8A8 weights: the layers' matrices at a byte per weight (and a scale per
// matrix), norms and the vocabulary matrices at two; the GEMMs read exactly that.
TEST(ProgramBuilderPrecisionTest, W8A8WeightsInTheMemoryPlanAndTheProgram) {
  const Experiment bf16 = MakeExperiment(testing::Llama8B(), {}, 1, 64);
  const Experiment w8a8 = WithPresets(bf16, {"w8a8-fp8"});
  auto placement = Placement::Create(bf16);
  ASSERT_TRUE(placement.ok());
  const int64_t h = 4096, vocab = 128256, layers = 32;
  const int64_t matrices = layers * (h * 6144 + 4096 * h + 3 * h * 14336);
  const int64_t small = layers * 2 * h + h;  // block norms and the final norm
  EXPECT_DOUBLE_EQ(PlanMemory(bf16, *placement).ranks[0].weights,
                   static_cast<double>(2 * (matrices + small + 2 * vocab * h)));
  EXPECT_DOUBLE_EQ(PlanMemory(w8a8, *placement).ranks[0].weights,
                   static_cast<double>(matrices + 2 * (small + 2 * vocab * h)));
  const Built b = BuildOrDie(w8a8, Phase::kPrefill);
  int64_t weights = 0;
  for (const Op& op : b.program.ranks[0].ops) weights += op.weight_bytes;
  // Four matrices a layer with a 4-byte scale each; the embedding is gathered.
  EXPECT_EQ(weights, matrices + 4 * 4 * layers + 2 * (small + vocab * h));
}

// `precision: bf16` on a bf16 workload names no role the workload's fields do
// not: the same Program, op for op.
TEST(ProgramBuilderPrecisionTest, Bf16PresetLeavesTheProgramUnchanged) {
  for (const ModelSpec& model : {testing::TinyDense(), testing::TinyMoe()}) {
    const Experiment plain =
        MakeExperiment(model, {.tp = 2, .ep = model.is_moe() ? int64_t{2} : 1}, 4, 16);
    const Experiment preset = WithPresets(plain, {"bf16"});
    for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
      const Built a = BuildOrDie(plain, phase);
      const Built b = BuildOrDie(preset, phase);
      ASSERT_EQ(a.program.ranks.size(), b.program.ranks.size());
      for (size_t r = 0; r < a.program.ranks.size(); ++r) {
        const auto& x = a.program.ranks[r].ops;
        const auto& y = b.program.ranks[r].ops;
        ASSERT_EQ(x.size(), y.size());
        for (size_t i = 0; i < x.size(); ++i) {
          EXPECT_EQ(x[i].role, y[i].role);
          EXPECT_EQ(x[i].flops, y[i].flops);
          EXPECT_EQ(x[i].bytes_read, y[i].bytes_read);
          EXPECT_EQ(x[i].bytes_written, y[i].bytes_written);
          EXPECT_EQ(x[i].bytes, y[i].bytes);
        }
      }
    }
  }
}

// DeepSeek's recipe on an MLA MoE: every GEMM input but the router's and the
// absorbed decode products' is quantised, per token and 128-value group; the
// Programs pass the checker in every phase.
TEST(ProgramBuilderPrecisionTest, DeepSeekFp8OnMlaMoeChecksOut) {
  const Experiment e =
      WithPresets(MakeExperiment(testing::TinyMoe(), {.tp = 2, .ep = 2}, 4, 16), {"deepseek-fp8"});
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    const Built b = BuildOrDie(e, phase);
    const Status checked = CheckProgram(b.program, b.placement);
    EXPECT_TRUE(checked.ok()) << checked.message();
    const RankProgram& rp = b.program.ranks[0];
    const Op* quant = Find(rp, OpRole::kQuantAttn);
    ASSERT_NE(quant, nullptr);
    // One pass over the bf16 input; an fp32 scale per token and (up to) 128 values.
    EXPECT_EQ(quant->bytes_read, quant->m * 64 * 2);
    EXPECT_EQ(quant->bytes_written, quant->m * 64 + quant->m * 4);
    EXPECT_NE(Find(rp, OpRole::kQuantExpertDown, 1), nullptr);
    EXPECT_NE(Find(rp, OpRole::kQuantSharedDown, 1), nullptr);
    EXPECT_NE(Find(rp, OpRole::kQuantFfn, 1), nullptr);
    EXPECT_NE(Find(rp, OpRole::kQuantDown, 0), nullptr);  // the dense first layer
  }
}

// The absorbed decode products (W_UK, W_UV) under DeepSeek's block-scaled FP8
// read their weights in bf16: engines dequantise kv_b_proj at load (SGLang's
// default, DeepSeek's inference code). Tiny-moe, 8 heads, nope 8, latent 16,
// v 8, 2 requests: each product's weights 8 × 8 × 16 × 2 B = 2048 B, its input
// 2 × 8 × 8 × 2 B = 256 B (DeepSeek-V3: 128 × 128 × 512 × 2 B = 16.8 MB each,
// against 8.4 MB in FP8). Per-tensor W8A8 keeps FP8 weights and one scale.
TEST(ProgramBuilderPrecisionTest, DeepSeekFp8AbsorbedProductsReadBf16Weights) {
  const Experiment base = MakeExperiment(testing::TinyMoe(), {}, 2, 16);
  const Built ds = BuildOrDie(WithPresets(base, {"deepseek-fp8"}), Phase::kDecode);
  const Op* uk = Find(ds.program.ranks[0], OpRole::kAbsorbUk);
  const Op* uv = Find(ds.program.ranks[0], OpRole::kAbsorbUv);
  ASSERT_NE(uk, nullptr);
  ASSERT_NE(uv, nullptr);
  EXPECT_EQ(uk->weight_bytes, 2048);
  EXPECT_EQ(uk->bytes_read, 256 + 2048);
  EXPECT_EQ(uv->weight_bytes, 2048);
  EXPECT_EQ(uv->bytes_read, 2 * 8 * 16 * 2 + 2048);
  const Built w8 = BuildOrDie(WithPresets(base, {"w8a8-fp8"}), Phase::kDecode);
  const Op* uk8 = Find(w8.program.ranks[0], OpRole::kAbsorbUk);
  ASSERT_NE(uk8, nullptr);
  EXPECT_EQ(uk8->weight_bytes, 1024 + 4);
}

}  // namespace
}  // namespace shardscope
