// Reads a Hugging Face config.json into a ModelSpec. Supported architectures:
// LlamaForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM, DeepseekV2ForCausalLM,
// DeepseekV3ForCausalLM (docs/models.md maps every field). nlohmann::json
// exceptions never escape: every failure is a Status that names the file.
#ifndef SHARDSCOPE_MODEL_HF_CONFIG_H_
#define SHARDSCOPE_MODEL_HF_CONFIG_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace shardscope {

// `path` is a config.json or a directory holding one. The model is named after the
// directory when the file is called config.json, else after the file's stem.
// Errors: NotFound (no file), InvalidArgument for malformed JSON (with the byte
// offset), an unsupported architecture, a missing or mistyped field (named), or a
// model that fails ModelSpec::Validate.
StatusOr<ModelSpec> ModelFromHfConfig(const std::string& path);

// The same from JSON text; `name` names the source in errors and the model.
StatusOr<ModelSpec> ModelFromHfConfigText(const std::string& text, const std::string& name);

// The `architectures` values ModelFromHfConfig accepts.
const std::vector<std::string>& SupportedHfArchitectures();

}  // namespace shardscope

#endif  // SHARDSCOPE_MODEL_HF_CONFIG_H_
