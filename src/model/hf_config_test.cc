#include "model/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model_yaml.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

// meta-llama/Llama-3.1-8B config.json, as published.
constexpr char kLlama31_8B[] = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

// deepseek-ai/DeepSeek-V3 config.json, as published (auto_map left out).
constexpr char kDeepSeekV3[] = R"({
  "architectures": ["DeepseekV3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "aux_loss_alpha": 0.001,
  "bos_token_id": 0,
  "eos_token_id": 1,
  "ep_size": 1,
  "first_k_dense_replace": 3,
  "hidden_act": "silu",
  "hidden_size": 7168,
  "initializer_range": 0.02,
  "intermediate_size": 18432,
  "kv_lora_rank": 512,
  "max_position_embeddings": 163840,
  "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048,
  "moe_layer_freq": 1,
  "n_group": 8,
  "n_routed_experts": 256,
  "n_shared_experts": 1,
  "norm_topk_prob": true,
  "num_attention_heads": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 61,
  "num_key_value_heads": 128,
  "num_nextn_predict_layers": 1,
  "pretraining_tp": 1,
  "q_lora_rank": 1536,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                          "quant_method": "fp8", "weight_block_size": [128, 128]},
  "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                   "type": "yarn"},
  "rope_theta": 10000,
  "routed_scaling_factor": 2.5,
  "scoring_func": "sigmoid",
  "seq_aux": true,
  "tie_word_embeddings": false,
  "topk_group": 4,
  "topk_method": "noaux_tc",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1",
  "use_cache": true,
  "v_head_dim": 128,
  "vocab_size": 129280
})";

// deepseek-ai/DeepSeek-V2-Lite config.json (auto_map left out).
constexpr char kDeepSeekV2Lite[] = R"({
  "architectures": ["DeepseekV2ForCausalLM"],
  "attention_bias": false,
  "first_k_dense_replace": 1,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "intermediate_size": 10944,
  "kv_lora_rank": 512,
  "max_position_embeddings": 163840,
  "model_type": "deepseek_v2",
  "moe_intermediate_size": 1408,
  "moe_layer_freq": 1,
  "n_group": 1,
  "n_routed_experts": 64,
  "n_shared_experts": 2,
  "norm_topk_prob": false,
  "num_attention_heads": 16,
  "num_experts_per_tok": 6,
  "num_hidden_layers": 27,
  "num_key_value_heads": 16,
  "q_lora_rank": null,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                   "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                   "type": "yarn"},
  "rope_theta": 10000,
  "routed_scaling_factor": 1.0,
  "scoring_func": "softmax",
  "tie_word_embeddings": false,
  "topk_group": 1,
  "topk_method": "greedy",
  "torch_dtype": "bfloat16",
  "v_head_dim": 128,
  "vocab_size": 102400
})";

// mistralai/Mixtral-8x7B-v0.1 config.json.
constexpr char kMixtral[] = R"({
  "architectures": ["MixtralForCausalLM"],
  "attention_dropout": 0.0,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 32000
})";

// Qwen/Qwen2.5-32B config.json.
constexpr char kQwen25_32B[] = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 5120,
  "intermediate_size": 27648,
  "max_position_embeddings": 131072,
  "max_window_layers": 64,
  "model_type": "qwen2",
  "num_attention_heads": 40,
  "num_hidden_layers": 64,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_sliding_window": false,
  "vocab_size": 152064
})";

// meta-llama/Llama-3.1-405B config.json.
constexpr char kLlama31_405B[] = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 16384,
  "initializer_range": 0.02,
  "intermediate_size": 53248,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 128,
  "num_hidden_layers": 126,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256
})";

// Qwen/Qwen3-235B-A22B config.json.
constexpr char kQwen3_235B[] = R"({
  "architectures": ["Qwen3MoeForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 94,
  "mlp_only_layers": [],
  "model_type": "qwen3_moe",
  "moe_intermediate_size": 1536,
  "norm_topk_prob": true,
  "num_attention_heads": 64,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 94,
  "num_key_value_heads": 4,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// Writes `text` to <scratch>/<dir>/config.json and returns the file's path.
std::string WriteConfig(const std::string& dir, const std::string& text) {
  static testing::ScratchDir scratch("shardscope_hf");
  std::filesystem::path d = std::filesystem::path(scratch.path()) / dir;
  std::filesystem::create_directories(d);
  std::ofstream(d / "config.json") << text;
  return (d / "config.json").string();
}

// Every field that shapes performance or memory must agree.
void ExpectSameModel(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.attention, b.attention);
  EXPECT_EQ(a.mla, b.mla);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.o_bias, b.o_bias);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.mlp_bias, b.mlp_bias);
  EXPECT_EQ(a.moe.num_routed_experts, b.moe.num_routed_experts);
  EXPECT_EQ(a.moe.experts_per_token, b.moe.experts_per_token);
  EXPECT_EQ(a.moe.num_shared_experts, b.moe.num_shared_experts);
  EXPECT_EQ(a.moe.expert_intermediate_size, b.moe.expert_intermediate_size);
  EXPECT_EQ(a.moe.first_dense_layers, b.moe.first_dense_layers);
  EXPECT_EQ(a.moe.moe_layer_freq, b.moe.moe_layer_freq);
  EXPECT_EQ(a.moe.router, b.moe.router);
  EXPECT_EQ(a.moe.n_group, b.moe.n_group);
  EXPECT_EQ(a.moe.topk_group, b.moe.topk_group);
  EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.num_mtp_layers, b.num_mtp_layers);
  // Nothing else differs but the name and description.
  ModelSpec b_renamed = b;
  b_renamed.name = a.name;
  b_renamed.description = a.description;
  EXPECT_TRUE(a == b_renamed);
}

struct HfCase {
  const char* zoo_name;
  const char* json;
};

class HfMatchesZooTest : public ::testing::TestWithParam<HfCase> {};

TEST_P(HfMatchesZooTest, ConfigJsonEqualsZooYaml) {
  std::string path = WriteConfig(GetParam().zoo_name, GetParam().json);
  StatusOr<ModelSpec> hf = ModelFromHfConfig(path);
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  EXPECT_EQ(hf->name, GetParam().zoo_name);  // named after the directory
  StatusOr<ModelSpec> zoo = LoadZooModel(GetParam().zoo_name, DefaultModelsDir());
  ASSERT_TRUE(zoo.ok()) << zoo.status().ToString();
  ExpectSameModel(*hf, *zoo);
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, HfMatchesZooTest,
    ::testing::Values(HfCase{"llama-3.1-8b", kLlama31_8B}, HfCase{"deepseek-v3", kDeepSeekV3},
                      HfCase{"deepseek-v2-lite", kDeepSeekV2Lite}, HfCase{"mixtral-8x7b", kMixtral},
                      HfCase{"qwen2.5-32b", kQwen25_32B}, HfCase{"llama-3.1-405b", kLlama31_405B},
                      HfCase{"qwen3-235b-a22b", kQwen3_235B}),
    [](const auto& info) {
      std::string name = info.param.zoo_name;
      for (char& c : name)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(HfConfigTest, ReadsADirectoryHoldingConfigJson) {
  std::string path = WriteConfig("Llama-3.1-8B", kLlama31_8B);
  StatusOr<ModelSpec> m = ModelFromHfConfig(std::filesystem::path(path).parent_path().string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name, "Llama-3.1-8B");
  EXPECT_EQ(m->num_kv_heads, 8);
  EXPECT_EQ(m->head_dim, 128);
}

TEST(HfConfigTest, DefaultsFollowTransformers) {
  // No num_key_value_heads (= heads), no head_dim (= hidden / heads), no tie flag (false).
  StatusOr<ModelSpec> m = ModelFromHfConfigText(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_hidden_layers": 2,
          "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 1000,
          "head_dim": null, "dtype": "float16"})",
      "mini.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->num_kv_heads, 8);
  EXPECT_EQ(m->head_dim, 64);
  EXPECT_FALSE(m->tie_embeddings);
  EXPECT_EQ(m->dtype, DType::kFp16);
  EXPECT_FALSE(m->qkv_bias);
}

TEST(HfConfigTest, ReadsRopeScalingAndRoutingScales) {
  StatusOr<ModelSpec> l = ModelFromHfConfigText(kLlama31_8B, "l.json");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->rope_scaling.kind, RopeScalingKind::kLlama3);
  EXPECT_EQ(l->rope_scaling.factor, 8.0);
  EXPECT_EQ(l->rope_scaling.original_max_positions, 8192);
  EXPECT_EQ(l->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(l->norm_eps, 1e-5);  // rms_norm_eps
  StatusOr<ModelSpec> v3 = ModelFromHfConfigText(kDeepSeekV3, "v3.json");
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  EXPECT_EQ(v3->rope_scaling.kind, RopeScalingKind::kYarn);  // older key "type"
  EXPECT_EQ(v3->rope_scaling.factor, 40.0);
  EXPECT_EQ(v3->rope_scaling.mscale_all_dim, 1.0);
  EXPECT_EQ(v3->moe.routed_scaling_factor, 2.5);
  EXPECT_TRUE(v3->moe.norm_topk_prob);
  EXPECT_EQ(v3->norm_eps, 1e-6);
  StatusOr<ModelSpec> v2 = ModelFromHfConfigText(kDeepSeekV2Lite, "v2.json");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_FALSE(v2->moe.norm_topk_prob);
  EXPECT_EQ(v2->rope_scaling.mscale, 0.707);
  StatusOr<ModelSpec> mx = ModelFromHfConfigText(kMixtral, "mx.json");
  ASSERT_TRUE(mx.ok());
  EXPECT_TRUE(mx->moe.norm_topk_prob);
  EXPECT_EQ(mx->rope_scaling.kind, RopeScalingKind::kNone);

  std::string dynamic = kLlama31_8B;
  dynamic.replace(dynamic.find("\"llama3\""), 8, "\"dynamic\"");
  StatusOr<ModelSpec> d = ModelFromHfConfigText(dynamic, "d.json");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("d.json: field 'rope_scaling': field 'rope_type'"),
            std::string::npos)
      << d.status().message();
  EXPECT_NE(d.status().message().find("'dynamic'"), std::string::npos) << d.status().message();
  std::string no_factor = kLlama31_8B;
  no_factor.erase(no_factor.find("\"factor\": 8.0, "), 15);
  StatusOr<ModelSpec> nf = ModelFromHfConfigText(no_factor, "nf.json");
  ASSERT_FALSE(nf.ok());
  EXPECT_NE(nf.status().message().find("field 'factor': is required"), std::string::npos)
      << nf.status().message();
}

TEST(HfConfigTest, QwenHasImplicitQkvBiasAndLlamaAttentionBiasCoversO) {
  StatusOr<ModelSpec> q = ModelFromHfConfigText(kQwen25_32B, "q.json");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_FALSE(q->o_bias);
  std::string llama = kLlama31_8B;
  llama.replace(llama.find("\"attention_bias\": false"), 23, "\"attention_bias\": true");
  StatusOr<ModelSpec> l = ModelFromHfConfigText(llama, "l.json");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->qkv_bias);
  EXPECT_TRUE(l->o_bias);
}

TEST(HfConfigTest, UnknownArchitectureNamesItAndTheFile) {
  std::string path = WriteConfig("gpt2", R"({"architectures": ["GPT2LMHeadModel"]})");
  StatusOr<ModelSpec> m = ModelFromHfConfig(path);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("unsupported architecture 'GPT2LMHeadModel'"),
            std::string::npos)
      << m.status().message();
}

TEST(HfConfigTest, MissingFieldNamesItAndTheFile) {
  std::string text = kDeepSeekV3;
  text.erase(text.find("\"kv_lora_rank\": 512,"), 20);
  std::string path = WriteConfig("no-kv-lora", text);
  StatusOr<ModelSpec> m = ModelFromHfConfig(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), path + ": field 'kv_lora_rank': is required but missing");

  StatusOr<ModelSpec> no_arch = ModelFromHfConfigText(R"({"hidden_size": 8})", "x.json");
  ASSERT_FALSE(no_arch.ok());
  EXPECT_NE(no_arch.status().message().find("field 'architectures'"), std::string::npos);
}

TEST(HfConfigTest, WrongTypeNamesTheField) {
  std::string text = kLlama31_8B;
  text.replace(text.find("\"hidden_size\": 4096"), 19, "\"hidden_size\": \"4096\"");
  StatusOr<ModelSpec> m = ModelFromHfConfigText(text, "t.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "t.json: field 'hidden_size': expected an integer, got \"4096\"");
  StatusOr<ModelSpec> d = ModelFromHfConfigText(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1,
          "num_attention_heads": 1, "intermediate_size": 8, "vocab_size": 8,
          "torch_dtype": "float64"})",
      "d.json");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("field 'torch_dtype'"), std::string::npos);
}

TEST(HfConfigTest, MalformedJsonNamesFileAndByte) {
  std::string path = WriteConfig("broken", "{\"architectures\": [\"LlamaForCausalLM\"],, }");
  StatusOr<ModelSpec> m = ModelFromHfConfig(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find(path + ": malformed JSON at byte 40"), std::string::npos)
      << m.status().message();
  EXPECT_FALSE(ModelFromHfConfigText("[1, 2]", "a.json").ok());
}

TEST(HfConfigTest, MissingFileIsNotFound) {
  testing::ScratchDir dir;
  StatusOr<ModelSpec> m = ModelFromHfConfig(dir.File("nowhere/config.json"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

TEST(HfConfigTest, UnsupportedRouterIsAnError) {
  std::string text = kDeepSeekV3;
  text.replace(text.find("\"noaux_tc\""), 10, "\"greedy\"");
  StatusOr<ModelSpec> m = ModelFromHfConfigText(text, "r.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("field 'scoring_func': 'sigmoid' with topk_method "
                                      "'greedy' is not supported"),
            std::string::npos)
      << m.status().message();
}

TEST(HfConfigTest, InvalidShapesFailValidation) {
  std::string text = kLlama31_8B;
  text.replace(text.find("\"num_key_value_heads\": 8"), 24, "\"num_key_value_heads\": 6");
  StatusOr<ModelSpec> m = ModelFromHfConfigText(text, "v.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "v.json: field 'num_kv_heads': 6 does not divide num_heads 32");
}

TEST(HfConfigTest, SupportedArchitecturesAreListed) {
  EXPECT_EQ(SupportedHfArchitectures().size(), 7u);
}

// Qwen3-MoE: QK norms always; every layer MoE only when decoder_sparse_step is 1 and
// no layer is listed in mlp_only_layers (other layouts are refused, not approximated).
TEST(HfConfigTest, Qwen3MoeLayouts) {
  StatusOr<ModelSpec> q = ModelFromHfConfigText(kQwen3_235B, "q.json");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(q->qk_norm);
  EXPECT_EQ(q->head_dim, 128);  // not hidden / heads (64)
  EXPECT_EQ(q->moe.num_shared_experts, 0);
  EXPECT_TRUE(q->moe.norm_topk_prob);
  EXPECT_EQ(q->NumMoeLayers(), 94);

  std::string text = kQwen3_235B;
  text.replace(text.find("\"mlp_only_layers\": []"), 21, "\"mlp_only_layers\": [0]");
  StatusOr<ModelSpec> dense0 = ModelFromHfConfigText(text, "d.json");
  ASSERT_FALSE(dense0.ok());
  EXPECT_EQ(dense0.status().message(),
            "d.json: field 'mlp_only_layers': is not supported (dense layers among MoE layers)");
  text = kQwen3_235B;
  text.replace(text.find("\"decoder_sparse_step\": 1"), 24, "\"decoder_sparse_step\": 2");
  StatusOr<ModelSpec> sparse = ModelFromHfConfigText(text, "s.json");
  ASSERT_FALSE(sparse.ok());
  EXPECT_EQ(sparse.status().message(),
            "s.json: field 'decoder_sparse_step': 2 is not supported (1)");
}

}  // namespace
}  // namespace shardscope
