#include "model/params.h"

#include <gtest/gtest.h>

#include "model/model_yaml.h"

namespace shardscope {
namespace {

ModelSpec Zoo(const std::string& name) {
  StatusOr<ModelSpec> m =
      LoadZooModel(name, std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/models");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : ModelSpec{};
}

void ExpectWithin(double actual, double expected, double rel) {
  EXPECT_NEAR(actual / expected, 1.0, rel) << actual << " vs " << expected;
}

// Published totals (model cards / papers); ours must be within 1 %.
struct TotalCase {
  const char* model;
  double total;
};

class TotalParamsTest : public ::testing::TestWithParam<TotalCase> {};

TEST_P(TotalParamsTest, MatchesThePublishedTotal) {
  ParamCounts c = CountParameters(Zoo(GetParam().model));
  ExpectWithin(static_cast<double>(c.total), GetParam().total, 0.01);
  // The parts add up.
  EXPECT_EQ(c.total, c.embedding + c.lm_head + c.attention + c.dense_ffn + c.routed_experts +
                         c.shared_experts + c.router + c.norms);
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, TotalParamsTest,
    ::testing::Values(TotalCase{"deepseek-v3", 671e9}, TotalCase{"deepseek-v2-lite", 15.7e9},
                      TotalCase{"llama-3.1-8b", 8.03e9}, TotalCase{"llama-3.2-1b", 1.24e9},
                      TotalCase{"llama-3.1-70b", 70.6e9}, TotalCase{"mixtral-8x7b", 46.7e9},
                      TotalCase{"qwen2.5-32b", 32.8e9}, TotalCase{"llama-3.1-405b", 405.8e9},
                      TotalCase{"qwen3-235b-a22b", 235.1e9}));

TEST(ParamsTest, Llama31_8BExactly) {
  ModelSpec m = Zoo("llama-3.1-8b");
  const int64_t h = 4096, kv = 8 * 128, ffn = 14336, v = 128256, layers = 32;
  const int64_t attn = h * h + 2 * h * kv + h * h;  // q, k, v, o
  const int64_t mlp = 3 * h * ffn;                  // gate, up, down
  const int64_t norms = 2 * h;
  ParamCounts c = CountParameters(m);
  EXPECT_EQ(AttentionParamsPerLayer(m), attn);
  EXPECT_EQ(DenseFfnParams(m), mlp);
  EXPECT_EQ(c.total, 2 * v * h + layers * (attn + mlp + norms) + h);
  EXPECT_EQ(c.total, 8'030'261'248);  // the safetensors metadata total of Llama-3.1-8B
  EXPECT_EQ(c.activated, c.total);    // dense: every parameter is used
  EXPECT_EQ(c.activated_matrix, layers * (attn + mlp) + v * h);
  EXPECT_EQ(LayerParams(m, 0), attn + mlp + norms);
}

TEST(ParamsTest, Llama31_405BExactlyAndItsForwardFlops) {
  // config.json: hidden 16384, 126 layers, 128 heads of 128, 8 KV heads, FFN 53248,
  // vocabulary 128256, untied head.
  ModelSpec m = Zoo("llama-3.1-405b");
  const int64_t h = 16384, kv = 8 * 128, ffn = 53248, v = 128256, layers = 126;
  const int64_t attn = h * h + 2 * h * kv + h * h;  // q, k, v, o: 570,425,344
  const int64_t mlp = 3 * h * ffn;                  // gate, up, down: 2,617,245,696
  ASSERT_EQ(attn, 570'425'344);
  ASSERT_EQ(mlp, 2'617'245'696);
  ParamCounts c = CountParameters(m);
  EXPECT_EQ(c.total, 2 * v * h + layers * (attn + mlp + 2 * h) + h);
  EXPECT_EQ(c.total, 405'853'388'800);  // the published "405.8 B"
  EXPECT_EQ(c.activated, c.total);
  EXPECT_EQ(c.activated_matrix, layers * (attn + mlp) + v * h);
  // Forward FLOPs per token at a 4096-token context: 2 per matrix weight, plus
  // QK^T and AV over 128 heads of 128 in each of the 126 layers.
  const int64_t ctx = 4096;
  EXPECT_EQ(ForwardFlopsPerToken(m, ctx),
            2 * (layers * (attn + mlp) + v * h) + layers * 2 * 128 * ctx * (128 + 128));
  EXPECT_EQ(ForwardFlopsPerToken(m, 0), 807'495'794'688);  // 2 x 403.7 B matrix weights
  // KV cache: 2 x 8 heads x 128 x 126 layers = 258,048 values per token (504 KiB in bf16).
  EXPECT_EQ(m.KvCacheValuesPerToken(), 258'048);
}

TEST(ParamsTest, Qwen3_235BExactlyAndActivated) {
  // config.json: hidden 4096, 94 layers, 64 query heads and 4 KV heads of 128 (the
  // query width 8192 is twice the hidden size), 128 experts of 1536, top-8, no shared
  // expert, vocabulary 151936, untied head; q_norm and k_norm of 128 per layer.
  ModelSpec m = Zoo("qwen3-235b-a22b");
  const int64_t h = 4096, q = 64 * 128, kv = 4 * 128, v = 151936, layers = 94;
  const int64_t attn = h * q + 2 * h * kv + q * h;  // 71,303,168
  const int64_t expert = 3 * h * 1536;              // 18,874,368
  const int64_t norms = 2 * h + 2 * 128;            // block norms + q_norm, k_norm
  ASSERT_EQ(attn, 71'303'168);
  EXPECT_EQ(AttentionParamsPerLayer(m), attn);
  EXPECT_EQ(NormParamsPerLayer(m), norms);
  EXPECT_EQ(ExpertParams(m), expert);
  EXPECT_EQ(RouterParamsPerLayer(m), 128 * h);  // bias-free gate
  ParamCounts c = CountParameters(m);
  EXPECT_EQ(c.total, 2 * v * h + layers * (attn + norms + 128 * expert + 128 * h) + h);
  EXPECT_EQ(c.total, 235'093'634'560);  // "235B"
  EXPECT_EQ(c.activated, 2 * v * h + layers * (attn + norms + 8 * expert + 128 * h) + h);
  EXPECT_EQ(c.activated, 22'190'763'520);  // "A22B"
  EXPECT_EQ(c.shared_experts, 0);
  EXPECT_EQ(c.dense_ffn, 0);
  // Forward FLOPs: 2 per activated matrix weight, plus QK^T and AV over 64 heads of 128.
  EXPECT_EQ(c.activated_matrix, layers * (attn + 8 * expert + 128 * h) + v * h);
  EXPECT_EQ(ForwardFlopsPerToken(m, 1000),
            2 * c.activated_matrix + layers * 2 * 64 * 1000 * (128 + 128));
  // KV cache: 2 x 4 heads x 128 x 94 layers = 96,256 values per token.
  EXPECT_EQ(m.KvCacheValuesPerToken(), 96'256);
  // Without the QK norms the count loses exactly their 2 x 128 weights per layer.
  m.qk_norm = false;
  EXPECT_EQ(CountParameters(m).total, c.total - layers * 2 * 128);
}

TEST(ParamsTest, DeepSeekV3PartsAndActivated) {
  ModelSpec m = Zoo("deepseek-v3");
  const int64_t h = 7168;
  // MLA: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj.
  const int64_t attn =
      h * 1536 + 1536 * 128 * 192 + h * (512 + 64) + 512 * 128 * (128 + 128) + 128 * 128 * h;
  EXPECT_EQ(AttentionParamsPerLayer(m), attn);
  // Two block norms plus q_a_layernorm and kv_a_layernorm.
  EXPECT_EQ(NormParamsPerLayer(m), 2 * h + 1536 + 512);
  EXPECT_EQ(ExpertParams(m), 3 * h * 2048);
  EXPECT_EQ(RouterParamsPerLayer(m), 256 * h + 256);  // weight + e_score_correction_bias
  EXPECT_EQ(DenseFfnParams(m), 3 * h * 18432);

  ParamCounts c = CountParameters(m);
  EXPECT_EQ(c.routed_experts, 58 * 256 * ExpertParams(m));
  EXPECT_EQ(c.shared_experts, 58 * ExpertParams(m));
  EXPECT_EQ(c.dense_ffn, 3 * DenseFfnParams(m));
  ExpectWithin(static_cast<double>(c.activated), 37e9, 0.03);  // report: 37 B activated
  // The checkpoint's 685 B = 671 B + the MTP module (about 14 B); not in total.
  ExpectWithin(static_cast<double>(c.total + c.mtp), 685e9, 0.01);
  ExpectWithin(static_cast<double>(c.mtp), 14e9, 0.05);
}

TEST(ParamsTest, DeepSeekV2LiteActivated) {
  // DeepSeek-V2 paper, Appendix B: 15.7 B total, 2.4 B activated. That figure leaves
  // the 0.21 B input embedding table out (ours, which keeps it, is 2.66 B): see
  // docs/models.md on the conventions behind published "activated" numbers.
  ParamCounts c = CountParameters(Zoo("deepseek-v2-lite"));
  ExpectWithin(static_cast<double>(c.activated - c.embedding), 2.4e9, 0.03);
  ExpectWithin(static_cast<double>(c.activated), 2.66e9, 0.01);
  EXPECT_EQ(c.mtp, 0);
}

TEST(ParamsTest, MixtralActivated) {
  // Mixtral paper: 13 B active parameters per token (12.9 B).
  ParamCounts c = CountParameters(Zoo("mixtral-8x7b"));
  ExpectWithin(static_cast<double>(c.activated), 12.9e9, 0.01);
  EXPECT_EQ(c.router, 32 * 8 * 4096);  // bias-free gate
  EXPECT_EQ(c.shared_experts, 0);
  EXPECT_EQ(c.dense_ffn, 0);
}

TEST(ParamsTest, QwenBiasesAreCounted) {
  ModelSpec m = Zoo("qwen2.5-32b");
  const int64_t h = 5120, q = 40 * 128, kv = 8 * 128;
  EXPECT_EQ(AttentionParamsPerLayer(m), h * q + 2 * h * kv + q * h + q + 2 * kv);
  EXPECT_EQ(AttentionMatrixParamsPerLayer(m), h * q + 2 * h * kv + q * h);
}

TEST(ParamsTest, TiedEmbeddingsCountOnceButTheHeadStillMultiplies) {
  ModelSpec m = Zoo("tiny-dense");
  ParamCounts untied = CountParameters(m);
  m.tie_embeddings = true;
  ParamCounts tied = CountParameters(m);
  EXPECT_EQ(tied.lm_head, 0);
  EXPECT_EQ(untied.total - tied.total, 512 * 256);
  EXPECT_EQ(tied.activated_matrix, untied.activated_matrix);
}

TEST(ParamsTest, GeluAndLayerNormAndBiases) {
  ModelSpec m = Zoo("tiny-dense");
  m.activation = Activation::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.mlp_bias = true;
  EXPECT_EQ(DenseFfnParams(m), 2 * 256 * 512 + 512 + 256);  // up + down, their biases
  EXPECT_EQ(NormParamsPerLayer(m), 2 * 2 * 256);            // weight and bias, twice
}

TEST(ParamsTest, TinyMoeMlaByHand) {
  ModelSpec m = Zoo("tiny-moe-mla");
  const int64_t h = 256, heads = 4;
  // q_proj (no q_lora), kv_a_proj_with_mqa, kv_b_proj, o_proj.
  const int64_t attn = h * heads * 48 + h * (64 + 16) + 64 * heads * (32 + 32) + heads * 32 * h;
  EXPECT_EQ(AttentionParamsPerLayer(m), attn);
  EXPECT_EQ(NormParamsPerLayer(m), 2 * h + 64);  // no q_a_layernorm without q_lora
  const int64_t expert = 3 * h * 128;
  const int64_t moe_layer = attn + 2 * h + 64 + 9 * expert + 8 * h + 8;
  EXPECT_EQ(LayerParams(m, 1), moe_layer);
  ParamCounts c = CountParameters(m);
  EXPECT_EQ(c.total, 2 * 512 * h + LayerParams(m, 0) + moe_layer + h);
  EXPECT_EQ(c.activated, c.total - 6 * expert);  // 6 of 8 routed experts unused
  EXPECT_EQ(c.activated_matrix, 2 * attn + 3 * h * 512 + 3 * expert + 8 * h + 512 * h);
}

TEST(ParamsTest, SeedDenseIsNot13B) {
  // Seed 001 estimates ~13 B; the shape it states gives 4.71 B.
  ParamCounts c = CountParameters(Zoo("seed-dense-16l"));
  ExpectWithin(static_cast<double>(c.total), 4.71e9, 0.005);
  // Seed 004's "268.4 MB per layer" is 268.4 M parameters (without norms).
  ModelSpec m = Zoo("seed-dense-16l");
  EXPECT_EQ(AttentionParamsPerLayer(m) + DenseFfnParams(m), 268'435'456);
}

TEST(ParamsTest, Llama31_8BForwardFlopsByHand) {
  ModelSpec m = Zoo("llama-3.1-8b");
  const int64_t context = 1024;
  // Per layer matrices: q 4096x4096, k and v 4096x1024 each, o 4096x4096,
  // gate/up/down 3 x 4096x14336.
  const int64_t per_layer_matrix =
      4096LL * 4096 + 2LL * 4096 * 1024 + 4096LL * 4096 + 3LL * 4096 * 14336;  // = 218,103,808
  ASSERT_EQ(per_layer_matrix, 218'103'808);
  const int64_t head = 128256LL * 4096;                     // LM head: 525,336,576
  const int64_t gemm = 2 * (32 * per_layer_matrix + head);  // 2 FLOPs per multiply-add
  // Attention: QK^T 2·32 heads·128·1024 plus AV the same, per layer, 32 layers.
  const int64_t attention = 32LL * (2 * 32 * 128 * 1024 + 2 * 32 * 128 * 1024);
  ASSERT_EQ(gemm, 15'009'316'864);
  ASSERT_EQ(attention, 536'870'912);
  EXPECT_EQ(ForwardFlopsPerToken(m, context), gemm + attention);
  EXPECT_EQ(ForwardFlopsPerToken(m, context), 15'546'187'776);
}

TEST(ParamsTest, MlaForwardFlopsUseTheNonAbsorbedForm) {
  ModelSpec m = Zoo("deepseek-v3");
  ParamCounts c = CountParameters(m);
  // Per layer: 2·128·(128+64)·ctx for QK^T, 2·128·128·ctx for AV.
  const int64_t ctx = 4096;
  EXPECT_EQ(ForwardFlopsPerToken(m, ctx),
            2 * c.activated_matrix + 61 * (2 * 128 * 192 * ctx + 2 * 128 * 128 * ctx));
  EXPECT_EQ(ForwardFlopsPerToken(m, 0), 2 * c.activated_matrix);
}

TEST(ParamsTest, KvCacheValuesPerToken) {
  ModelSpec llama = Zoo("llama-3.1-8b");
  EXPECT_EQ(llama.KvCacheValuesPerTokenPerLayer(), 2 * 8 * 128);  // 2048
  // 2048 values x 2 bytes x 32 layers = 128 KiB per token in bf16.
  EXPECT_EQ(llama.KvCacheValuesPerToken() * DTypeSize(DType::kBf16), 128 * 1024);
  EXPECT_EQ(Zoo("deepseek-v3").KvCacheValuesPerTokenPerLayer(), 512 + 64);  // 576
  EXPECT_EQ(Zoo("llama-3.1-70b").KvCacheValuesPerToken() * 2, 320 * 1024);
}

}  // namespace
}  // namespace shardscope
