// Engine profiles: the scheduler defaults and serving-path terms of a serving
// engine at a stated version (vLLM 0.6, SGLang 0.4, TensorRT-LLM 0.17), each
// value taken from the engine's own source or documentation (engine_profile.cc
// cites them; docs/configuration.md, "Engine profiles"). An experiment's
// `engine: {name, version}` starts its scheduler from them; its own
// `scheduler:` keys and `engine:` terms then override. Pure functions.
#ifndef SHARDSCOPE_CONFIG_ENGINE_PROFILE_H_
#define SHARDSCOPE_CONFIG_ENGINE_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/serving.h"
#include "core/status.h"
#include "model/model.h"

namespace shardscope {

// The engines that have a profile: vllm, sglang, trtllm.
const std::vector<std::string>& EngineNames();
// The versions of `name` that have a profile ("0.6"); empty for an unknown engine.
const std::vector<std::string>& EngineVersions(const std::string& name);
// The profile version `version` selects for `name`: itself or a release of it
// ("0.6.3" → "0.6"); empty (the default) → the latest profiled. Fails naming
// the versions that have a profile.
StatusOr<std::string> ResolveEngineVersion(const std::string& name, const std::string& version);

// What an engine's defaults depend on that it works out itself.
struct EngineInputs {
  int64_t max_model_len = 0;       // the model's context (max_position_embeddings)
  int64_t tp = 1;                  // tensor-parallel size
  double device_memory_bytes = 0;  // usable memory of one device
  // The experiment's own scheduler.chunked_prefill and num_scheduler_steps,
  // where given: vLLM's default token budget follows them.
  std::optional<bool> chunked_prefill;
  std::optional<int64_t> num_scheduler_steps;
};

// The scheduler defaults of `engine` (name and version resolved).
SchedulerSpec EngineSchedulerDefaults(const EngineSpec& engine, const EngineInputs& in);
// Its serving-path terms (0 where no component measurement is published).
ServingPathSpec EngineServingPath(const EngineSpec& engine);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_ENGINE_PROFILE_H_
