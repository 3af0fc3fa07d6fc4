#include "model/model_yaml.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/enum_names.h"

namespace shardscope {
namespace {

// Re-roots a Validate error ("field 'x': ...") at the map's own path and file.
Status ValidationError(const Status& status, const YamlContext& ctx) {
  std::string message = status.message();
  const std::string_view kField = "field '";
  if (!ctx.path.empty() && message.starts_with(kField)) {
    message.insert(kField.size(), ctx.path + ".");
  }
  YamlContext root{ctx.file, ctx.experiment, ""};
  std::string where = root.Where();
  return Status(status.code(), where.empty() ? message : where + ": " + message);
}

// Reads an optional enum-valued key through its parser.
template <typename Enum, typename Parse>
Status OptionalEnum(const YamlMap& map, std::string_view key, Parse parse, Enum* out) {
  std::string text;
  RETURN_IF_ERROR(map.Optional(key, &text));
  if (!map.Has(key)) return Status::Ok();
  StatusOr<Enum> parsed = parse(text);
  if (!parsed.ok()) return map.context().Child(key).Error(parsed.status().message());
  *out = *parsed;
  return Status::Ok();
}

Status ReadMla(const YamlMap& map, MlaSpec* mla) {
  RETURN_IF_ERROR(map.CheckKeys(
      {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}));
  RETURN_IF_ERROR(map.OptionalAtLeast("q_lora_rank", 0, &mla->q_lora_rank));
  RETURN_IF_ERROR(map.RequiredAtLeast("kv_lora_rank", 1, &mla->kv_lora_rank));
  RETURN_IF_ERROR(map.RequiredAtLeast("qk_nope_head_dim", 1, &mla->qk_nope_head_dim));
  RETURN_IF_ERROR(map.RequiredAtLeast("qk_rope_head_dim", 0, &mla->qk_rope_head_dim));
  RETURN_IF_ERROR(map.RequiredAtLeast("v_head_dim", 1, &mla->v_head_dim));
  return Status::Ok();
}

Status ReadMoe(const YamlMap& map, MoeSpec* moe) {
  RETURN_IF_ERROR(
      map.CheckKeys({"num_routed_experts", "experts_per_token", "num_shared_experts",
                     "expert_intermediate_size", "first_dense_layers", "moe_layer_freq", "router",
                     "n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor"}));
  RETURN_IF_ERROR(map.RequiredAtLeast("num_routed_experts", 1, &moe->num_routed_experts));
  RETURN_IF_ERROR(map.RequiredAtLeast("experts_per_token", 1, &moe->experts_per_token));
  RETURN_IF_ERROR(map.OptionalAtLeast("num_shared_experts", 0, &moe->num_shared_experts));
  RETURN_IF_ERROR(
      map.RequiredAtLeast("expert_intermediate_size", 1, &moe->expert_intermediate_size));
  RETURN_IF_ERROR(map.OptionalAtLeast("first_dense_layers", 0, &moe->first_dense_layers));
  RETURN_IF_ERROR(map.OptionalAtLeast("moe_layer_freq", 1, &moe->moe_layer_freq));
  RETURN_IF_ERROR(OptionalEnum(map, "router", ParseRouterKind, &moe->router));
  RETURN_IF_ERROR(map.OptionalAtLeast("n_group", 1, &moe->n_group));
  RETURN_IF_ERROR(map.OptionalAtLeast("topk_group", 1, &moe->topk_group));
  // DeepSeek-V3's sigmoid router renormalises its top-k weights; softmax routers
  // differ by model (Mixtral does, DeepSeek-V2 does not), so they default to off.
  moe->norm_topk_prob = moe->router == RouterKind::kSigmoidBias;
  RETURN_IF_ERROR(map.Optional("norm_topk_prob", &moe->norm_topk_prob));
  RETURN_IF_ERROR(map.OptionalPositive("routed_scaling_factor", &moe->routed_scaling_factor));
  return Status::Ok();
}

Status ReadRopeScaling(const YamlMap& map, RopeScaling* rs) {
  RETURN_IF_ERROR(
      map.CheckKeys({"type", "factor", "original_max_position_embeddings", "low_freq_factor",
                     "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"}));
  std::string type;
  RETURN_IF_ERROR(map.Required("type", &type));
  StatusOr<RopeScalingKind> kind = ParseRopeScalingKind(type);
  if (!kind.ok()) return map.context().Child("type").Error(kind.status().message());
  rs->kind = *kind;
  if (rs->kind == RopeScalingKind::kNone) return Status::Ok();
  RETURN_IF_ERROR(map.Required("factor", &rs->factor));
  if (rs->kind != RopeScalingKind::kLinear) {
    RETURN_IF_ERROR(
        map.RequiredAtLeast("original_max_position_embeddings", 1, &rs->original_max_positions));
  }
  RETURN_IF_ERROR(map.OptionalPositive("low_freq_factor", &rs->low_freq_factor));
  RETURN_IF_ERROR(map.OptionalPositive("high_freq_factor", &rs->high_freq_factor));
  RETURN_IF_ERROR(map.OptionalPositive("beta_fast", &rs->beta_fast));
  RETURN_IF_ERROR(map.OptionalPositive("beta_slow", &rs->beta_slow));
  RETURN_IF_ERROR(map.Optional("mscale", &rs->mscale));
  RETURN_IF_ERROR(map.Optional("mscale_all_dim", &rs->mscale_all_dim));
  return Status::Ok();
}

constexpr auto kAttentionKindNames =
    MakeEnumNames<AttentionKind>({{AttentionKind::kGqa, "gqa"}, {AttentionKind::kMla, "mla"}});
constexpr auto kActivationNames =
    MakeEnumNames<Activation>({{Activation::kSwiGlu, "swiglu"}, {Activation::kGelu, "gelu"}});
constexpr auto kRouterKindNames = MakeEnumNames<RouterKind>(
    {{RouterKind::kSoftmax, "softmax"}, {RouterKind::kSigmoidBias, "sigmoid_bias"}});
constexpr auto kNormKindNames =
    MakeEnumNames<NormKind>({{NormKind::kRmsNorm, "rmsnorm"}, {NormKind::kLayerNorm, "layernorm"}});
constexpr auto kRopeScalingKindNames =
    MakeEnumNames<RopeScalingKind>({{RopeScalingKind::kNone, "none"},
                                    {RopeScalingKind::kLinear, "linear"},
                                    {RopeScalingKind::kLlama3, "llama3"},
                                    {RopeScalingKind::kYarn, "yarn"}});

}  // namespace

std::string_view AttentionKindName(AttentionKind kind) { return kAttentionKindNames.Name(kind); }
StatusOr<AttentionKind> ParseAttentionKind(std::string_view name) {
  return kAttentionKindNames.ParseOrError(name, "attention kind");
}

std::string_view ActivationName(Activation activation) { return kActivationNames.Name(activation); }
StatusOr<Activation> ParseActivation(std::string_view name) {
  return kActivationNames.ParseOrError(name, "activation");
}

std::string_view RouterKindName(RouterKind kind) { return kRouterKindNames.Name(kind); }
StatusOr<RouterKind> ParseRouterKind(std::string_view name) {
  return kRouterKindNames.ParseOrError(name, "router");
}

std::string_view NormKindName(NormKind kind) { return kNormKindNames.Name(kind); }
StatusOr<NormKind> ParseNormKind(std::string_view name) {
  return kNormKindNames.ParseOrError(name, "norm");
}

std::string_view RopeScalingKindName(RopeScalingKind kind) {
  return kRopeScalingKindNames.Name(kind);
}
StatusOr<RopeScalingKind> ParseRopeScalingKind(std::string_view name) {
  if (name == "default") return RopeScalingKind::kNone;
  if (std::optional<RopeScalingKind> kind = kRopeScalingKindNames.Parse(name)) return *kind;
  return InvalidArgument(
      "unknown rope scaling '{}' (expected none, linear, llama3 or yarn; dynamic and longrope "
      "are not supported)",
      name);
}

StatusOr<ModelSpec> ModelFromYaml(const YAML::Node& node, const YamlContext& ctx) {
  ASSIGN_OR_RETURN(YamlMap map, YamlMap::From(node, ctx));
  RETURN_IF_ERROR(map.CheckKeys({"name",
                                 "architecture",
                                 "description",
                                 "vocab_size",
                                 "hidden_size",
                                 "num_layers",
                                 "num_heads",
                                 "num_kv_heads",
                                 "head_dim",
                                 "attention",
                                 "mla",
                                 "qkv_bias",
                                 "o_bias",
                                 "qk_norm",
                                 "tie_embeddings",
                                 "activation",
                                 "norm",
                                 "norm_eps",
                                 "intermediate_size",
                                 "mlp_bias",
                                 "moe",
                                 "rope_theta",
                                 "rope_scaling",
                                 "max_position_embeddings",
                                 "dtype",
                                 "num_mtp_layers"}));
  ModelSpec m;
  RETURN_IF_ERROR(map.Optional("name", &m.name));
  RETURN_IF_ERROR(map.Optional("architecture", &m.architecture));
  RETURN_IF_ERROR(map.Optional("description", &m.description));
  RETURN_IF_ERROR(map.RequiredAtLeast("vocab_size", 1, &m.vocab_size));
  RETURN_IF_ERROR(map.RequiredAtLeast("hidden_size", 1, &m.hidden_size));
  RETURN_IF_ERROR(map.RequiredAtLeast("num_layers", 1, &m.num_layers));
  RETURN_IF_ERROR(map.RequiredAtLeast("num_heads", 1, &m.num_heads));
  RETURN_IF_ERROR(OptionalEnum(map, "attention", ParseAttentionKind, &m.attention));

  if (m.attention == AttentionKind::kMla) {
    // MLA widths live in `mla:`; per-head K/V keys would be ignored, so refuse them.
    for (std::string_view key : {"num_kv_heads", "head_dim"}) {
      if (map.Has(key)) {
        return map.context().Child(key).Error(
            "is not used with attention 'mla' (give the widths under 'mla')");
      }
    }
    if (!map.Has("mla"))
      return map.context().Child("mla").Error("is required with attention 'mla'");
    ASSIGN_OR_RETURN(YamlMap mla, map.Map("mla"));
    RETURN_IF_ERROR(ReadMla(mla, &m.mla));
    m.num_kv_heads = m.num_heads;
    m.head_dim = 0;
  } else {
    if (map.Has("mla")) {
      return map.context().Child("mla").Error(
          "is given but attention is 'gqa' (add attention: mla)");
    }
    m.num_kv_heads = m.num_heads;
    RETURN_IF_ERROR(map.OptionalAtLeast("num_kv_heads", 1, &m.num_kv_heads));
    if (map.Has("head_dim")) {
      RETURN_IF_ERROR(map.OptionalAtLeast("head_dim", 1, &m.head_dim));
    } else if (m.hidden_size % m.num_heads == 0) {
      m.head_dim = m.hidden_size / m.num_heads;  // the usual default, as in HF configs
    } else {
      return map.context()
          .Child("head_dim")
          .Error(fmt::format("is required: hidden_size {} is not a multiple of num_heads {}",
                             m.hidden_size, m.num_heads));
    }
  }

  RETURN_IF_ERROR(map.Optional("qkv_bias", &m.qkv_bias));
  RETURN_IF_ERROR(map.Optional("o_bias", &m.o_bias));
  RETURN_IF_ERROR(map.Optional("qk_norm", &m.qk_norm));
  RETURN_IF_ERROR(map.Optional("tie_embeddings", &m.tie_embeddings));
  RETURN_IF_ERROR(OptionalEnum(map, "activation", ParseActivation, &m.activation));
  RETURN_IF_ERROR(OptionalEnum(map, "norm", ParseNormKind, &m.norm));
  RETURN_IF_ERROR(map.OptionalPositive("norm_eps", &m.norm_eps));
  RETURN_IF_ERROR(map.OptionalAtLeast("intermediate_size", 0, &m.intermediate_size));
  RETURN_IF_ERROR(map.Optional("mlp_bias", &m.mlp_bias));
  if (map.Has("moe")) {
    ASSIGN_OR_RETURN(YamlMap moe, map.Map("moe"));
    RETURN_IF_ERROR(ReadMoe(moe, &m.moe));
  }
  RETURN_IF_ERROR(map.OptionalPositive("rope_theta", &m.rope_theta));
  if (map.Has("rope_scaling")) {
    ASSIGN_OR_RETURN(YamlMap rope_scaling, map.Map("rope_scaling"));
    RETURN_IF_ERROR(ReadRopeScaling(rope_scaling, &m.rope_scaling));
  }
  RETURN_IF_ERROR(map.OptionalAtLeast("max_position_embeddings", 0, &m.max_position_embeddings));
  RETURN_IF_ERROR(OptionalEnum(map, "dtype", ParseDType, &m.dtype));
  RETURN_IF_ERROR(map.OptionalAtLeast("num_mtp_layers", 0, &m.num_mtp_layers));

  Status valid = m.Validate();
  if (!valid.ok()) return ValidationError(valid, ctx);
  return m;
}

StatusOr<ModelSpec> LoadModelFile(const std::string& path) {
  ASSIGN_OR_RETURN(YAML::Node node, LoadYamlFile(path));
  ASSIGN_OR_RETURN(ModelSpec model, ModelFromYaml(node, YamlContext{path, "", ""}));
  if (model.name.empty()) model.name = std::filesystem::path(path).stem().string();
  return model;
}

std::vector<std::string> ListZooModels(const std::string& models_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(models_dir, ec);
  if (ec) return names;
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    if (entry.is_regular_file(ec) && p.extension() == ".yaml") names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<ModelSpec> LoadZooModel(std::string_view name, const std::string& models_dir) {
  std::vector<std::string> names = ListZooModels(models_dir);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return NotFound("model '{}' is not in the zoo {} (known: {})", name, models_dir,
                    fmt::join(names, ", "));
  }
  return LoadModelFile(
      (std::filesystem::path(models_dir) / (std::string(name) + ".yaml")).string());
}

std::string DefaultModelsDir() { return std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/models"; }

}  // namespace shardscope
