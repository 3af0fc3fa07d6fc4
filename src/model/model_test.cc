#include "model/model.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

// A small valid GQA model; tests change one field at a time.
ModelSpec Dense() {
  ModelSpec m;
  m.vocab_size = 512;
  m.hidden_size = 256;
  m.num_layers = 4;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 64;
  m.intermediate_size = 512;
  return m;
}

ModelSpec MoeMla() {
  ModelSpec m = Dense();
  m.attention = AttentionKind::kMla;
  m.num_kv_heads = m.num_heads;
  m.head_dim = 0;
  m.mla = {.q_lora_rank = 0,
           .kv_lora_rank = 64,
           .qk_nope_head_dim = 32,
           .qk_rope_head_dim = 16,
           .v_head_dim = 24};
  m.moe.num_routed_experts = 8;
  m.moe.experts_per_token = 2;
  m.moe.expert_intermediate_size = 128;
  m.moe.first_dense_layers = 1;
  return m;
}

TEST(ModelSpecTest, ValidModelsPass) {
  EXPECT_TRUE(Dense().Validate().ok());
  EXPECT_TRUE(MoeMla().Validate().ok()) << MoeMla().Validate().ToString();
}

TEST(ModelSpecTest, MoeLayersFollowFirstDenseAndFrequency) {
  ModelSpec m = MoeMla();
  EXPECT_FALSE(m.IsMoeLayer(0));
  EXPECT_TRUE(m.IsMoeLayer(1));
  EXPECT_TRUE(m.IsMoeLayer(3));
  EXPECT_FALSE(m.IsMoeLayer(4));  // past the last layer
  EXPECT_EQ(m.NumMoeLayers(), 3);
  // As HF DeepSeek: MoE when layer >= first_k_dense_replace and layer % freq == 0.
  m.moe.moe_layer_freq = 2;
  EXPECT_FALSE(m.IsMoeLayer(1));
  EXPECT_TRUE(m.IsMoeLayer(2));
  EXPECT_EQ(m.NumMoeLayers(), 1);
  EXPECT_EQ(Dense().NumMoeLayers(), 0);
  EXPECT_FALSE(Dense().IsMoeLayer(0));
}

TEST(ModelSpecTest, HeadDimsAndKvCache) {
  ModelSpec d = Dense();
  EXPECT_EQ(d.QkHeadDim(), 64);
  EXPECT_EQ(d.VHeadDim(), 64);
  EXPECT_EQ(d.KvCacheValuesPerTokenPerLayer(), 2 * 2 * 64);
  EXPECT_EQ(d.KvCacheValuesPerToken(), 4 * 2 * 2 * 64);
  ModelSpec m = MoeMla();
  EXPECT_EQ(m.QkHeadDim(), 32 + 16);
  EXPECT_EQ(m.VHeadDim(), 24);
  EXPECT_EQ(m.KvCacheValuesPerTokenPerLayer(), 64 + 16);  // latent + shared rope key
}

// Each case breaks one field; the error must name it.
struct BadField {
  ModelSpec (*base)();
  const char* field;
  void (*mutate)(ModelSpec*);
  const char* message;
};

class ModelSpecInvalidTest : public ::testing::TestWithParam<BadField> {};

TEST_P(ModelSpecInvalidTest, NamesTheField) {
  ModelSpec m = GetParam().base();
  GetParam().mutate(&m);
  Status s = m.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::string("field '") + GetParam().field + "'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(GetParam().message), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ModelSpecInvalidTest,
    ::testing::Values(
        BadField{Dense, "vocab_size", [](ModelSpec* m) { m->vocab_size = 0; }, "at least 1, got 0"},
        BadField{Dense, "hidden_size", [](ModelSpec* m) { m->hidden_size = -1; }, "at least 1"},
        BadField{Dense, "num_layers", [](ModelSpec* m) { m->num_layers = 0; }, "at least 1"},
        BadField{Dense, "num_heads", [](ModelSpec* m) { m->num_heads = 0; }, "at least 1"},
        BadField{Dense, "num_kv_heads", [](ModelSpec* m) { m->num_kv_heads = 3; },
                 "3 does not divide num_heads 4"},
        BadField{Dense, "head_dim", [](ModelSpec* m) { m->head_dim = 0; }, "at least 1"},
        BadField{MoeMla, "mla.kv_lora_rank", [](ModelSpec* m) { m->mla.kv_lora_rank = 0; },
                 "at least 1"},
        BadField{MoeMla, "mla.q_lora_rank", [](ModelSpec* m) { m->mla.q_lora_rank = -2; },
                 "at least 0"},
        BadField{Dense, "rope_theta", [](ModelSpec* m) { m->rope_theta = 0; }, "positive"},
        BadField{MoeMla, "moe.experts_per_token",
                 [](ModelSpec* m) { m->moe.experts_per_token = 9; },
                 "exceeds moe.num_routed_experts 8"},
        BadField{MoeMla, "moe.expert_intermediate_size",
                 [](ModelSpec* m) { m->moe.expert_intermediate_size = 0; }, "at least 1"},
        BadField{MoeMla, "moe.first_dense_layers",
                 [](ModelSpec* m) { m->moe.first_dense_layers = 4; }, "no MoE layer"},
        BadField{MoeMla, "moe.n_group", [](ModelSpec* m) { m->moe.n_group = 3; },
                 "3 does not divide moe.num_routed_experts 8"},
        BadField{MoeMla, "moe.topk_group",
                 [](ModelSpec* m) {
                   m->moe.n_group = 4;
                   m->moe.topk_group = 5;
                 },
                 "exceeds moe.n_group 4"},
        BadField{MoeMla, "moe.experts_per_token",
                 [](ModelSpec* m) {
                   m->moe.n_group = 8;
                   m->moe.topk_group = 1;
                 },
                 "exceeds the 1 experts"},
        BadField{Dense, "intermediate_size", [](ModelSpec* m) { m->intermediate_size = 0; },
                 "at least 1"}));

TEST(ModelSpecTest, ExampleMessageFromTheSpec) {
  ModelSpec m = Dense();
  m.num_heads = 32;
  m.num_kv_heads = 6;
  EXPECT_EQ(m.Validate().message(), "field 'num_kv_heads': 6 does not divide num_heads 32");
}

TEST(ModelSpecTest, DenseModelRejectsStrayMoeSettings) {
  ModelSpec m = Dense();
  m.moe.experts_per_token = 2;
  Status s = m.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("moe.experts_per_token"), std::string::npos);
}

TEST(ModelSpecTest, AllMoeModelNeedsNoDenseFfnSize) {
  ModelSpec m = MoeMla();
  m.moe.first_dense_layers = 0;
  m.intermediate_size = 0;
  EXPECT_TRUE(m.Validate().ok()) << m.Validate().ToString();
}

}  // namespace
}  // namespace shardscope
