#include "model/hf_config.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/checked_int.h"
#include "core/small_file.h"
#include "model/model_yaml.h"

namespace shardscope {
namespace {

using Json = nlohmann::json;

// Typed access to the top level of one config.json; errors name the file and field.
// Null values count as absent (HF writes e.g. "q_lora_rank": null).
class HfFields {
 public:
  HfFields(const Json& json, std::string file) : json_(json), file_(std::move(file)) {}

  bool Has(const char* key) const { return json_.contains(key) && !json_[key].is_null(); }
  bool HasObject(const char* key) const { return Has(key) && json_[key].is_object(); }
  // True when `key` holds a non-empty list.
  bool HasNonEmptyList(const char* key) const {
    return Has(key) && json_[key].is_array() && !json_[key].empty();
  }
  // The fields of the object at `key` (check HasObject first); errors name both keys.
  HfFields Sub(const char* key) const {
    return HfFields(json_[key], fmt::format("{}: field '{}'", file_, key));
  }

  Status Required(const char* key, double* out) const {
    if (!Has(key)) return Missing(key);
    return Optional(key, out);
  }
  Status Required(const char* key, int64_t* out) const {
    if (!Has(key)) return Missing(key);
    return Optional(key, out);
  }
  Status Optional(const char* key, int64_t* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = json_[key];
    if (const std::optional<int64_t> n = JsonToInt64(v)) {
      *out = *n;
      return Status::Ok();
    }
    return WrongType(key, "an integer");
  }
  Status Optional(const char* key, double* out) const {
    if (!Has(key)) return Status::Ok();
    if (!json_[key].is_number()) return WrongType(key, "a number");
    *out = json_[key].get<double>();
    return Status::Ok();
  }
  Status Optional(const char* key, bool* out) const {
    if (!Has(key)) return Status::Ok();
    if (!json_[key].is_boolean()) return WrongType(key, "true or false");
    *out = json_[key].get<bool>();
    return Status::Ok();
  }
  Status Optional(const char* key, std::string* out) const {
    if (!Has(key)) return Status::Ok();
    if (!json_[key].is_string()) return WrongType(key, "a string");
    *out = json_[key].get<std::string>();
    return Status::Ok();
  }

  Status Error(const char* key, std::string_view problem) const {
    return InvalidArgument("{}: field '{}': {}", file_, key, problem);
  }

 private:
  Status Missing(const char* key) const { return Error(key, "is required but missing"); }
  Status WrongType(const char* key, std::string_view expected) const {
    return Error(key, fmt::format("expected {}, got {}", expected, json_[key].dump()));
  }

  const Json& json_;
  std::string file_;
};

Status ReadDtype(const Json& json, const HfFields& f, ModelSpec* m) {
  // Newer transformers write "dtype", older "torch_dtype".
  const char* key = f.Has("dtype") ? "dtype" : "torch_dtype";
  std::string name;
  RETURN_IF_ERROR(f.Optional(key, &name));
  if (!name.empty()) {
    StatusOr<DType> dtype = ParseDType(name);
    if (!dtype.ok()) return f.Error(key, dtype.status().message());
    m->dtype = *dtype;
  }
  // DeepSeek-V3 ships block-quantised FP8 weights while torch_dtype says bfloat16.
  if (json.contains("quantization_config") && json["quantization_config"].is_object()) {
    const Json& q = json["quantization_config"];
    if (q.contains("quant_method") && q["quant_method"] == "fp8") m->dtype = DType::kFp8;
  }
  return Status::Ok();
}

// `rope_scaling`: {"rope_type" or "type", "factor", …}; null or absent means none.
Status ReadRopeScaling(const HfFields& f, ModelSpec* m) {
  if (!f.Has("rope_scaling")) return Status::Ok();
  if (!f.HasObject("rope_scaling")) return f.Error("rope_scaling", "expected an object");
  HfFields rs = f.Sub("rope_scaling");
  const char* type_key = rs.Has("rope_type") ? "rope_type" : "type";
  std::string type;
  if (!rs.Has(type_key)) return rs.Error("rope_type", "is required but missing");
  RETURN_IF_ERROR(rs.Optional(type_key, &type));
  StatusOr<RopeScalingKind> kind = ParseRopeScalingKind(type);
  if (!kind.ok()) return rs.Error(type_key, kind.status().message());
  RopeScaling& r = m->rope_scaling;
  r.kind = *kind;
  if (r.kind == RopeScalingKind::kNone) return Status::Ok();
  RETURN_IF_ERROR(rs.Required("factor", &r.factor));
  if (r.kind != RopeScalingKind::kLinear) {
    RETURN_IF_ERROR(rs.Required("original_max_position_embeddings", &r.original_max_positions));
  }
  RETURN_IF_ERROR(rs.Optional("low_freq_factor", &r.low_freq_factor));
  RETURN_IF_ERROR(rs.Optional("high_freq_factor", &r.high_freq_factor));
  RETURN_IF_ERROR(rs.Optional("beta_fast", &r.beta_fast));
  RETURN_IF_ERROR(rs.Optional("beta_slow", &r.beta_slow));
  RETURN_IF_ERROR(rs.Optional("mscale", &r.mscale));
  return rs.Optional("mscale_all_dim", &r.mscale_all_dim);
}

Status ReadCommon(const HfFields& f, ModelSpec* m) {
  RETURN_IF_ERROR(f.Required("vocab_size", &m->vocab_size));
  RETURN_IF_ERROR(f.Required("hidden_size", &m->hidden_size));
  RETURN_IF_ERROR(f.Required("num_hidden_layers", &m->num_layers));
  RETURN_IF_ERROR(f.Required("num_attention_heads", &m->num_heads));
  RETURN_IF_ERROR(f.Required("intermediate_size", &m->intermediate_size));
  m->tie_embeddings = false;  // the default of every supported config class
  RETURN_IF_ERROR(f.Optional("tie_word_embeddings", &m->tie_embeddings));
  RETURN_IF_ERROR(f.Optional("rope_theta", &m->rope_theta));
  RETURN_IF_ERROR(f.Optional("max_position_embeddings", &m->max_position_embeddings));
  RETURN_IF_ERROR(ReadRopeScaling(f, m));
  m->activation = Activation::kSwiGlu;  // all supported MLPs are gated (gate, up, down)
  m->norm = NormKind::kRmsNorm;
  RETURN_IF_ERROR(f.Optional("rms_norm_eps", &m->norm_eps));
  return Status::Ok();
}

Status ReadGqa(const HfFields& f, ModelSpec* m) {
  m->attention = AttentionKind::kGqa;
  m->num_kv_heads = m->num_heads;
  RETURN_IF_ERROR(f.Optional("num_key_value_heads", &m->num_kv_heads));
  if (m->num_heads > 0 && m->hidden_size % m->num_heads == 0)
    m->head_dim = m->hidden_size / m->num_heads;
  RETURN_IF_ERROR(f.Optional("head_dim", &m->head_dim));
  if (m->head_dim == 0) {
    return f.Error("head_dim", fmt::format("is required: hidden_size {} is not a multiple of "
                                           "num_attention_heads {}",
                                           m->hidden_size, m->num_heads));
  }
  return Status::Ok();
}

Status ReadDeepseek(const HfFields& f, bool v3, ModelSpec* m) {
  m->attention = AttentionKind::kMla;
  m->num_kv_heads = m->num_heads;  // MLA convention of ModelSpec
  m->head_dim = 0;
  RETURN_IF_ERROR(f.Optional("q_lora_rank", &m->mla.q_lora_rank));  // null: direct q_proj
  RETURN_IF_ERROR(f.Required("kv_lora_rank", &m->mla.kv_lora_rank));
  RETURN_IF_ERROR(f.Required("qk_nope_head_dim", &m->mla.qk_nope_head_dim));
  RETURN_IF_ERROR(f.Required("qk_rope_head_dim", &m->mla.qk_rope_head_dim));
  RETURN_IF_ERROR(f.Required("v_head_dim", &m->mla.v_head_dim));
  RETURN_IF_ERROR(f.Optional("attention_bias", &m->qkv_bias));
  m->o_bias = m->qkv_bias;

  // n_routed_experts null: a dense DeepSeek model.
  RETURN_IF_ERROR(f.Optional("n_routed_experts", &m->moe.num_routed_experts));
  if (m->moe.num_routed_experts == 0) return Status::Ok();
  MoeSpec& moe = m->moe;
  RETURN_IF_ERROR(f.Required("num_experts_per_tok", &moe.experts_per_token));
  RETURN_IF_ERROR(f.Required("moe_intermediate_size", &moe.expert_intermediate_size));
  RETURN_IF_ERROR(f.Optional("n_shared_experts", &moe.num_shared_experts));
  RETURN_IF_ERROR(f.Optional("first_k_dense_replace", &moe.first_dense_layers));
  RETURN_IF_ERROR(f.Optional("moe_layer_freq", &moe.moe_layer_freq));
  // Defaults are those of transformers' DeepseekV2Config / DeepseekV3Config.
  std::string scoring = v3 ? "sigmoid" : "softmax";
  std::string topk_method = v3 ? "noaux_tc" : "greedy";
  RETURN_IF_ERROR(f.Optional("scoring_func", &scoring));
  RETURN_IF_ERROR(f.Optional("topk_method", &topk_method));
  if (scoring == "softmax") {
    moe.router = RouterKind::kSoftmax;
  } else if (scoring == "sigmoid" && topk_method == "noaux_tc") {
    moe.router = RouterKind::kSigmoidBias;
  } else {
    return f.Error("scoring_func", fmt::format("'{}' with topk_method '{}' is not supported "
                                               "(softmax, or sigmoid with noaux_tc)",
                                               scoring, topk_method));
  }
  moe.n_group = v3 ? 8 : 1;
  moe.topk_group = v3 ? 4 : 1;
  RETURN_IF_ERROR(f.Optional("n_group", &moe.n_group));
  RETURN_IF_ERROR(f.Optional("topk_group", &moe.topk_group));
  // transformers' defaults: V2 renormalises nothing and scales by 1; V3 does both.
  moe.norm_topk_prob = v3;
  moe.routed_scaling_factor = v3 ? 2.5 : 1.0;
  RETURN_IF_ERROR(f.Optional("norm_topk_prob", &moe.norm_topk_prob));
  RETURN_IF_ERROR(f.Optional("routed_scaling_factor", &moe.routed_scaling_factor));
  if (v3) RETURN_IF_ERROR(f.Optional("num_nextn_predict_layers", &m->num_mtp_layers));
  return Status::Ok();
}

// Qwen3 / Qwen3-MoE (transformers' Qwen3Attention, Qwen3MoeSparseMoeBlock): GQA with
// q_norm and k_norm on every head, `attention_bias` on q, k, v and o; MoE blocks of
// `num_experts` softmax-routed experts, no shared expert.
Status ReadQwen3(const HfFields& f, bool moe, ModelSpec* m) {
  RETURN_IF_ERROR(ReadGqa(f, m));
  if (!f.Has("head_dim")) m->head_dim = 128;  // Qwen3Config / Qwen3MoeConfig default
  RETURN_IF_ERROR(f.Optional("attention_bias", &m->qkv_bias));
  m->o_bias = m->qkv_bias;
  m->qk_norm = true;
  if (!moe) return Status::Ok();
  MoeSpec& e = m->moe;
  RETURN_IF_ERROR(f.Required("num_experts", &e.num_routed_experts));
  RETURN_IF_ERROR(f.Required("num_experts_per_tok", &e.experts_per_token));
  RETURN_IF_ERROR(f.Required("moe_intermediate_size", &e.expert_intermediate_size));
  e.num_shared_experts = 0;
  e.router = RouterKind::kSoftmax;  // gate: Linear(hidden, num_experts, bias=False), softmax
  e.norm_topk_prob = false;         // Qwen3MoeConfig default
  RETURN_IF_ERROR(f.Optional("norm_topk_prob", &e.norm_topk_prob));
  // Layer i is MoE when (i + 1) % decoder_sparse_step == 0 and i is not in
  // mlp_only_layers; only the every-layer case maps onto first_dense_layers/moe_layer_freq.
  int64_t step = 1;
  RETURN_IF_ERROR(f.Optional("decoder_sparse_step", &step));
  if (step != 1)
    return f.Error("decoder_sparse_step", fmt::format("{} is not supported (1)", step));
  if (f.HasNonEmptyList("mlp_only_layers")) {
    return f.Error("mlp_only_layers", "is not supported (dense layers among MoE layers)");
  }
  e.first_dense_layers = 0;
  e.moe_layer_freq = 1;
  return Status::Ok();
}

Status ReadArchitecture(const Json& json, const HfFields& f, const std::string& arch,
                        ModelSpec* m) {
  RETURN_IF_ERROR(ReadCommon(f, m));
  RETURN_IF_ERROR(ReadDtype(json, f, m));
  if (arch == "LlamaForCausalLM") {
    RETURN_IF_ERROR(ReadGqa(f, m));
    RETURN_IF_ERROR(f.Optional("attention_bias", &m->qkv_bias));  // q, k, v and o
    m->o_bias = m->qkv_bias;
    return f.Optional("mlp_bias", &m->mlp_bias);
  }
  if (arch == "Qwen2ForCausalLM") {
    m->qkv_bias = true;  // Qwen2Attention always has q/k/v biases, never an o_proj bias
    return ReadGqa(f, m);
  }
  if (arch == "MixtralForCausalLM") {
    RETURN_IF_ERROR(ReadGqa(f, m));
    m->moe.expert_intermediate_size = m->intermediate_size;  // every layer is MoE
    RETURN_IF_ERROR(f.Required("num_local_experts", &m->moe.num_routed_experts));
    RETURN_IF_ERROR(f.Required("num_experts_per_tok", &m->moe.experts_per_token));
    m->moe.router = RouterKind::kSoftmax;
    m->moe.norm_topk_prob = true;  // Mixtral always renormalises its top-2 weights
    return Status::Ok();
  }
  if (arch == "Qwen3ForCausalLM" || arch == "Qwen3MoeForCausalLM") {
    return ReadQwen3(f, arch == "Qwen3MoeForCausalLM", m);
  }
  if (arch == "DeepseekV2ForCausalLM") return ReadDeepseek(f, /*v3=*/false, m);
  if (arch == "DeepseekV3ForCausalLM") return ReadDeepseek(f, /*v3=*/true, m);
  return Status::Ok();  // unreachable: checked by the caller
}

}  // namespace

const std::vector<std::string>& SupportedHfArchitectures() {
  static const std::vector<std::string> kArchitectures = {
      "LlamaForCausalLM",   "Qwen2ForCausalLM",      "Qwen3ForCausalLM",     "Qwen3MoeForCausalLM",
      "MixtralForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"};
  return kArchitectures;
}

StatusOr<ModelSpec> ModelFromHfConfigText(const std::string& text, const std::string& name) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return InvalidArgument("{}: malformed JSON at byte {}: {}", name, e.byte, e.what());
  } catch (const Json::exception& e) {
    return InvalidArgument("{}: malformed JSON: {}", name, e.what());
  }
  if (!json.is_object()) return InvalidArgument("{}: expected a JSON object", name);
  HfFields f(json, name);

  std::string arch;
  if (!f.Has("architectures")) return f.Error("architectures", "is required but missing");
  const Json& archs = json["architectures"];
  if (!archs.is_array() || archs.empty() || !archs[0].is_string())
    return f.Error("architectures", "expected a list of architecture names, got " + archs.dump());
  arch = archs[0].get<std::string>();
  const auto& supported = SupportedHfArchitectures();
  if (std::find(supported.begin(), supported.end(), arch) == supported.end()) {
    return InvalidArgument("{}: unsupported architecture '{}' (supported: {})", name, arch,
                           fmt::join(supported, ", "));
  }

  ModelSpec m;
  m.name = name;
  m.architecture = arch;
  try {
    RETURN_IF_ERROR(ReadArchitecture(json, f, arch, &m));
  } catch (const Json::exception& e) {  // defensive: the readers check types first
    return InvalidArgument("{}: {}", name, e.what());
  }
  Status valid = m.Validate();
  if (!valid.ok()) return valid.WithPrefix(name);
  return m;
}

StatusOr<ModelSpec> ModelFromHfConfig(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "config.json";
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(file.string()));
  ASSIGN_OR_RETURN(ModelSpec m, ModelFromHfConfigText(text, file.string()));
  std::string dir = file.parent_path().filename().string();
  m.name = file.filename() == "config.json" && !dir.empty() ? dir : file.stem().string();
  m.description = "Hugging Face config " + file.string();
  return m;
}

}  // namespace shardscope
