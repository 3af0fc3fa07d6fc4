// Serving mechanisms of today's engines that change a step's work rather than
// the plan: speculative decoding (DeepSeek-V3's multi-token prediction) and
// two-batch overlap; and the expert-load file that EPLB balances for
// (docs/configuration.md, "Mechanisms"; the models in docs/sim.md). Plain
// value types.
#ifndef SHARDSCOPE_CONFIG_MECHANISMS_H_
#define SHARDSCOPE_CONFIG_MECHANISMS_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace shardscope {

class YamlMap;  // core/yaml_reader.h

enum class SpeculativeMethod { kNone, kMtp };

// Speculative decoding: each decode step drafts `draft_tokens` (k) tokens per
// request and verifies them in one forward pass of k + 1 tokens per request.
struct SpeculativeSpec {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int64_t draft_tokens = 0;
  // acceptance[i]: probability that draft token i + 1 is accepted when tokens
  // 1 … i were (one per draft token).
  std::vector<double> acceptance;

  bool enabled() const { return method != SpeculativeMethod::kNone; }
  // Expected tokens a request gains per step: 1 + Σ_i Π_{j≤i} acceptance[j]
  // (the verify pass always yields one; 1 when disabled).
  double TokensPerStep() const;
  bool operator==(const SpeculativeSpec&) const = default;
};

// Reads `speculative:` from an experiment's map (none: disabled). Errors name
// the field: a method other than mtp, k < 1, acceptance not in [0, 1] or not
// one per draft token, MTP on a model without MTP modules.
StatusOr<SpeculativeSpec> ReadSpeculative(const YamlMap& experiment, const ModelSpec& model);

// Reads a measured per-expert load file (`parallelism.expert_load`): numbers
// separated by spaces or commas, one line of `experts` numbers for every MoE
// layer or one line per MoE layer (`moe_layers` lines); blank lines and lines
// starting with '#' skipped. Errors name the file and line.
StatusOr<std::vector<std::vector<double>>> ReadExpertLoadFile(const std::string& path,
                                                              int64_t experts, int64_t moe_layers);

std::string_view SpeculativeMethodName(SpeculativeMethod m);
nlohmann::json SpeculativeToJson(const SpeculativeSpec& spec);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_MECHANISMS_H_
