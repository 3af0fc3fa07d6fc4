#include "model/model_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/params.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

constexpr char kTinyGqa[] = R"(
name: t
vocab_size: 512
hidden_size: 256
num_layers: 2
num_heads: 4
num_kv_heads: 2
intermediate_size: 512
)";

constexpr char kTinyMoe[] = R"(
name: m
vocab_size: 512
hidden_size: 256
num_layers: 3
num_heads: 4
attention: mla
mla: {kv_lora_rank: 64, qk_nope_head_dim: 32, qk_rope_head_dim: 16, v_head_dim: 32}
intermediate_size: 512
moe:
  num_routed_experts: 8
  experts_per_token: 2
  expert_intermediate_size: 128
  first_dense_layers: 1
  router: sigmoid_bias
  n_group: 4
  topk_group: 2
)";

StatusOr<ModelSpec> Parse(const std::string& text, const std::string& experiment = "") {
  StatusOr<YAML::Node> node = ParseYaml(text, "m.yaml");
  if (!node.ok()) return node.status();
  return ModelFromYaml(*node, YamlContext{"m.yaml", experiment, ""});
}

// Parses `base` with extra lines appended (new keys only: duplicates are YAML errors).
Status ParseWith(const std::string& base, const std::string& extra) {
  return Parse(base + extra).status();
}

TEST(ModelYamlTest, EnumNamesRoundTrip) {
  for (auto k : {AttentionKind::kGqa, AttentionKind::kMla})
    EXPECT_EQ(*ParseAttentionKind(AttentionKindName(k)), k);
  for (auto a : {Activation::kSwiGlu, Activation::kGelu})
    EXPECT_EQ(*ParseActivation(ActivationName(a)), a);
  for (auto r : {RouterKind::kSoftmax, RouterKind::kSigmoidBias})
    EXPECT_EQ(*ParseRouterKind(RouterKindName(r)), r);
  for (auto n : {NormKind::kRmsNorm, NormKind::kLayerNorm})
    EXPECT_EQ(*ParseNormKind(NormKindName(n)), n);
  EXPECT_EQ(AttentionKindName(AttentionKind::kMla), "mla");
  EXPECT_EQ(RouterKindName(RouterKind::kSigmoidBias), "sigmoid_bias");
  StatusOr<RouterKind> bad = ParseRouterKind("sigmoid");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("softmax or sigmoid_bias"), std::string::npos);
  EXPECT_FALSE(ParseAttentionKind("mha").ok());
  EXPECT_FALSE(ParseActivation("relu").ok());
  EXPECT_FALSE(ParseNormKind("batchnorm").ok());
}

TEST(ModelYamlTest, ParsesGqaWithDefaults) {
  StatusOr<ModelSpec> m = Parse(kTinyGqa);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name, "t");
  EXPECT_EQ(m->attention, AttentionKind::kGqa);
  EXPECT_EQ(m->num_kv_heads, 2);
  EXPECT_EQ(m->head_dim, 64);  // hidden_size / num_heads
  EXPECT_EQ(m->activation, Activation::kSwiGlu);
  EXPECT_EQ(m->norm, NormKind::kRmsNorm);
  EXPECT_EQ(m->dtype, DType::kBf16);
  EXPECT_FALSE(m->is_moe());
}

TEST(ModelYamlTest, ParsesMlaAndMoe) {
  StatusOr<ModelSpec> m = Parse(kTinyMoe);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->attention, AttentionKind::kMla);
  EXPECT_EQ(m->num_kv_heads, 4);  // MLA convention: one K/V per head
  EXPECT_EQ(m->head_dim, 0);
  EXPECT_EQ(m->mla.q_lora_rank, 0);
  EXPECT_EQ(m->mla.kv_lora_rank, 64);
  EXPECT_EQ(m->moe.router, RouterKind::kSigmoidBias);
  EXPECT_EQ(m->moe.n_group, 4);
  EXPECT_EQ(m->moe.topk_group, 2);
  EXPECT_EQ(m->moe.moe_layer_freq, 1);
  EXPECT_EQ(m->NumMoeLayers(), 2);
  EXPECT_TRUE(m->moe.norm_topk_prob);  // the sigmoid router's default
  EXPECT_EQ(m->moe.routed_scaling_factor, 1.0);
}

TEST(ModelYamlTest, ParsesRopeScalingAndNamesItsErrors) {
  StatusOr<ModelSpec> m = Parse(std::string(kTinyGqa) +
                                "rope_scaling: {type: llama3, factor: 8, "
                                "original_max_position_embeddings: 8192}\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_EQ(m->rope_scaling.factor, 8.0);
  EXPECT_EQ(m->rope_scaling.low_freq_factor, 1.0);  // transformers' defaults
  EXPECT_EQ(m->rope_scaling.high_freq_factor, 4.0);
  Status s = ParseWith(kTinyGqa, "rope_scaling: {type: dynamic, factor: 2}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'rope_scaling.type': unknown rope scaling 'dynamic'"),
            std::string::npos)
      << s.message();
  s = ParseWith(kTinyGqa, "rope_scaling: {type: yarn, factor: 40}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rope_scaling.original_max_position_embeddings"), std::string::npos)
      << s.message();
  s = ParseWith(kTinyMoe, "  routed_scaling_factor: 0\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("moe.routed_scaling_factor': must be positive"), std::string::npos)
      << s.message();
}

TEST(ModelYamlTest, UnknownFieldIsNamed) {
  Status s = ParseWith(kTinyGqa, "hidden_szie: 3\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("m.yaml: field 'hidden_szie': unknown field"), std::string::npos)
      << s.message();
  s = ParseWith(kTinyMoe, "  top_k: 2\n");  // kTinyMoe ends inside `moe:`
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'moe.top_k': unknown field"), std::string::npos) << s.message();
}

TEST(ModelYamlTest, WrongTypeIsNamed) {
  Status s = Parse("vocab_size: many\nhidden_size: 8\nnum_layers: 1\nnum_heads: 1\n").status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'vocab_size': expected an integer, got 'many'"),
            std::string::npos)
      << s.message();
  s = ParseWith(kTinyGqa, "qkv_bias: 3\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'qkv_bias': expected true or false"), std::string::npos)
      << s.message();
  s = ParseWith(kTinyGqa, "activation: relu\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'activation': unknown activation 'relu'"), std::string::npos)
      << s.message();
  s = ParseWith(kTinyGqa, "moe: 3\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'moe': expected a map"), std::string::npos) << s.message();
}

TEST(ModelYamlTest, MissingFieldIsNamed) {
  Status s = Parse("vocab_size: 5\nhidden_size: 8\nnum_heads: 1\n").status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'num_layers': is required but missing"), std::string::npos)
      << s.message();
  s = Parse("vocab_size: 5\nhidden_size: 8\nnum_layers: 1\nnum_heads: 1\nattention: mla\n")
          .status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'mla': is required"), std::string::npos) << s.message();
}

TEST(ModelYamlTest, MisplacedAttentionKeysAreRejected) {
  Status s = ParseWith(kTinyGqa, "mla: {kv_lora_rank: 8}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'mla': is given but attention is 'gqa'"), std::string::npos);
  s = Parse(std::string(kTinyMoe) + "head_dim: 48\n").status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'head_dim': is not used with attention 'mla'"),
            std::string::npos);
}

TEST(ModelYamlTest, ValidationErrorsNameFileExperimentAndNestedPath) {
  StatusOr<YAML::Node> node = ParseYaml(
      "model:\n  vocab_size: 5\n  hidden_size: 96\n"
      "  num_layers: 1\n  num_heads: 32\n  num_kv_heads: 6\n"
      "  head_dim: 3\n  intermediate_size: 8\n",
      "e.yaml");
  ASSERT_TRUE(node.ok());
  Status s = ModelFromYaml((*node)["model"], YamlContext{"e.yaml", "exp1", "model"}).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "e.yaml: experiment 'exp1': field 'model.num_kv_heads': 6 does not divide "
            "num_heads 32");
}

TEST(ModelYamlTest, HeadDimRequiredWhenHiddenIsNotAMultipleOfHeads) {
  Status s = Parse(
                 "vocab_size: 5\nhidden_size: 10\nnum_layers: 1\nnum_heads: 3\n"
                 "intermediate_size: 8\n")
                 .status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field 'head_dim': is required"), std::string::npos);
}

TEST(ModelYamlTest, LoadModelFileNamesModelAfterFileAndReportsMissingFiles) {
  testing::ScratchDir scratch("shardscope_model_yaml");
  const std::string dir = scratch.path();
  std::string text = kTinyGqa;
  text.erase(text.find("name: t\n"), 8);
  std::ofstream(dir + "/my-model.yaml") << text;
  std::ofstream(dir + "/notes.txt") << "not a model";
  StatusOr<ModelSpec> m = LoadModelFile(dir + "/my-model.yaml");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name, "my-model");
  EXPECT_EQ(ListZooModels(dir), std::vector<std::string>{"my-model"});
  EXPECT_TRUE(ListZooModels(dir + "/absent").empty());

  StatusOr<ModelSpec> absent = LoadModelFile(dir + "/absent.yaml");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  StatusOr<ModelSpec> unknown = LoadZooModel("gpt-9", dir);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("known: my-model"), std::string::npos);
}

// Every file in configs/models loads, validates, is named after its file and keeps
// the numbers its comments cite.
TEST(ZooTest, EveryModelLoadsAndValidates) {
  std::vector<std::string> names = ListZooModels(DefaultModelsDir());
  const std::vector<std::string> expected = {
      "deepseek-v2-lite", "deepseek-v3",  "llama-3.1-405b", "llama-3.1-70b", "qwen3-235b-a22b",
      "llama-3.1-8b",     "llama-3.2-1b", "mixtral-8x7b",   "qwen2.5-32b",   "seed-dense-16l",
      "seed-moe-61l",     "tiny-dense",   "tiny-moe-mla"};
  for (const std::string& name : expected) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    StatusOr<ModelSpec> m = LoadZooModel(name, DefaultModelsDir());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->name, name);
    EXPECT_TRUE(m->Validate().ok());
    EXPECT_FALSE(m->description.empty());
    EXPECT_GT(CountParameters(*m).total, 0);
  }
}

TEST(ZooTest, DeepSeekV3MatchesItsConfig) {
  StatusOr<ModelSpec> m = LoadZooModel("deepseek-v3", DefaultModelsDir());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->hidden_size, 7168);
  EXPECT_EQ(m->num_layers, 61);
  EXPECT_EQ(m->num_heads, 128);
  EXPECT_EQ(m->mla, (MlaSpec{1536, 512, 128, 64, 128}));
  EXPECT_EQ(m->intermediate_size, 18432);
  EXPECT_EQ(m->moe.num_routed_experts, 256);
  EXPECT_EQ(m->moe.experts_per_token, 8);
  EXPECT_EQ(m->moe.num_shared_experts, 1);
  EXPECT_EQ(m->moe.expert_intermediate_size, 2048);
  EXPECT_EQ(m->moe.first_dense_layers, 3);
  EXPECT_EQ(m->moe.router, RouterKind::kSigmoidBias);
  EXPECT_EQ(m->moe.n_group, 8);
  EXPECT_EQ(m->moe.topk_group, 4);
  EXPECT_EQ(m->vocab_size, 129280);
  EXPECT_FALSE(m->tie_embeddings);
  EXPECT_EQ(m->NumMoeLayers(), 58);
}

TEST(ZooTest, SeedMoeFollowsSeed003) {
  StatusOr<ModelSpec> m = LoadZooModel("seed-moe-61l", DefaultModelsDir());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->num_layers, 61);
  EXPECT_EQ(m->NumMoeLayers(), 58);
  EXPECT_EQ(m->num_heads * m->mla.v_head_dim, 7168);  // the seed's "128 x 56 = 7168"
  EXPECT_EQ(m->activation, Activation::kGelu);
  EXPECT_EQ(m->moe.num_routed_experts, 128);
  EXPECT_EQ(m->moe.experts_per_token, 2);
  EXPECT_EQ(m->moe.num_shared_experts, 0);
  // One expert: two 7168 x 18432 matrices = 528 MB in bf16 (the seed says 264 MB).
  EXPECT_EQ(ExpertParams(*m) * 2, 528'482'304);
}

TEST(ZooTest, TinyModelsHaveTheAgreedShapes) {
  StatusOr<ModelSpec> d = LoadZooModel("tiny-dense", DefaultModelsDir());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->num_layers, 2);
  EXPECT_EQ(d->hidden_size, 256);
  EXPECT_EQ(d->num_heads, 4);
  EXPECT_EQ(d->num_kv_heads, 2);
  EXPECT_EQ(d->head_dim, 64);
  EXPECT_EQ(d->intermediate_size, 512);
  EXPECT_EQ(d->vocab_size, 512);
  StatusOr<ModelSpec> m = LoadZooModel("tiny-moe-mla", DefaultModelsDir());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->mla, (MlaSpec{0, 64, 32, 16, 32}));
  EXPECT_EQ(m->moe.first_dense_layers, 1);
  EXPECT_EQ(m->moe.num_routed_experts, 8);
  EXPECT_EQ(m->moe.experts_per_token, 2);
  EXPECT_EQ(m->moe.num_shared_experts, 1);
  EXPECT_EQ(m->moe.expert_intermediate_size, 128);
  EXPECT_EQ(m->moe.router, RouterKind::kSigmoidBias);
  EXPECT_EQ(m->moe.n_group, 4);
  EXPECT_EQ(m->moe.topk_group, 2);
}

}  // namespace
}  // namespace shardscope
