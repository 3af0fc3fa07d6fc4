// Reading ModelSpecs from the zoo's YAML format (configs/models/*.yaml, or a
// `model:` map inline in an experiment). The keys mirror the ModelSpec field
// names; `mla:` and `moe:` are nested maps (docs/models.md lists every key).
// Unknown keys are errors, so a typo never silently falls back to a default.
#ifndef SHARDSCOPE_MODEL_MODEL_YAML_H_
#define SHARDSCOPE_MODEL_MODEL_YAML_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/yaml_reader.h"
#include "model/model.h"

namespace shardscope {

// Names as written in YAML ("gqa", "mla", "swiglu", "gelu", "softmax",
// "sigmoid_bias", "rmsnorm", "layernorm", "yarn", …) and their parsers; an unknown name is
// an error that lists the accepted ones.
std::string_view AttentionKindName(AttentionKind kind);
StatusOr<AttentionKind> ParseAttentionKind(std::string_view name);
std::string_view ActivationName(Activation activation);
StatusOr<Activation> ParseActivation(std::string_view name);
std::string_view RouterKindName(RouterKind kind);
StatusOr<RouterKind> ParseRouterKind(std::string_view name);
std::string_view NormKindName(NormKind kind);
StatusOr<NormKind> ParseNormKind(std::string_view name);
// "none", "linear", "llama3", "yarn" (also HF's rope_type / type values).
std::string_view RopeScalingKindName(RopeScalingKind kind);
StatusOr<RopeScalingKind> ParseRopeScalingKind(std::string_view name);

// Parses and validates one model map. Errors name ctx's file and experiment and
// the dotted field (ctx.path is the map's own path, e.g. "model" when inline).
StatusOr<ModelSpec> ModelFromYaml(const YAML::Node& node, const YamlContext& ctx);

// Loads one zoo file. A model without `name:` is named after the file's stem.
StatusOr<ModelSpec> LoadModelFile(const std::string& path);

// Names (file stems) of the *.yaml models in models_dir, sorted; empty when the
// directory does not exist or cannot be read.
std::vector<std::string> ListZooModels(const std::string& models_dir);

// Loads models_dir/<name>.yaml; NotFound lists the models that do exist.
StatusOr<ModelSpec> LoadZooModel(std::string_view name, const std::string& models_dir);

// The zoo in the source tree: <SHARDSCOPE_SOURCE_DIR>/configs/models.
std::string DefaultModelsDir();

}  // namespace shardscope

#endif  // SHARDSCOPE_MODEL_MODEL_YAML_H_
