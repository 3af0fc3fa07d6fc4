// Serving mechanisms of today's engines that change a step's work rather than
// the plan: speculative decoding (DeepSeek-V3's multi-token prediction, or a
// separate draft model) and two-batch overlap; and the expert-load file that EPLB balances for
// (docs/configuration.md, "Mechanisms"; the models in docs/sim.md). Plain
// value types.
#ifndef SHARDSCOPE_CONFIG_MECHANISMS_H_
#define SHARDSCOPE_CONFIG_MECHANISMS_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace shardscope {

class YamlMap;  // core/yaml_reader.h

// kMtp: the model's own multi-token-prediction modules draft; kDraft: a
// separate (smaller) draft model, as vLLM's and TensorRT-LLM's draft-target
// speculative decoding run it.
enum class SpeculativeMethod { kNone, kMtp, kDraft };

// Draft tokens per step a draft model may draft (its passes are numbered in
// Op::draft's 8 bits).
inline constexpr int64_t kMaxDraftPasses = 254;

// Speculative decoding: each decode step drafts `draft_tokens` (k) tokens per
// request and verifies them in one forward pass of k + 1 tokens per request.
struct SpeculativeSpec {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int64_t draft_tokens = 0;
  // acceptance[i]: probability that draft token i + 1 is accepted when tokens
  // 1 … i were (one per draft token).
  std::vector<double> acceptance;
  // kDraft: the draft model (a dense model of the target's vocabulary) and its
  // tensor-parallel size (1, or 0: the target's tp; vLLM's
  // speculative_draft_tensor_parallel_size).
  ModelSpec draft_model;
  int64_t draft_tp = 0;

  bool enabled() const { return method != SpeculativeMethod::kNone; }
  bool mtp() const { return method == SpeculativeMethod::kMtp; }
  bool draft() const { return method == SpeculativeMethod::kDraft; }
  // The draft's tensor-parallel size beside a target split over `tp` ranks.
  int64_t DraftTp(int64_t tp) const { return draft_tp > 0 ? draft_tp : tp; }
  // Expected tokens a request gains per step: 1 + Σ_i Π_{j≤i} acceptance[j]
  // (the verify pass always yields one; 1 when disabled).
  double TokensPerStep() const;
  bool operator==(const SpeculativeSpec&) const = default;
};

// Resolves the model reference at `key` of `map` (`draft_model:`) as the
// experiment's `model:` key does; errors name that field.
using ModelResolver = std::function<StatusOr<ModelSpec>(const YamlMap& map, std::string_view key)>;

// Reads `speculative:` from an experiment's map (none: disabled); `tp` is the
// target's tensor-parallel size. Errors name the field: a method other than
// mtp or draft, k < 1, acceptance not in [0, 1] or not one per draft token,
// MTP on a model without MTP modules, an unknown draft model, a draft whose
// vocabulary differs from the target's or that is MoE, a draft tensor-parallel
// size other than 1 or tp, or one that does not divide the draft's heads.
StatusOr<SpeculativeSpec> ReadSpeculative(const YamlMap& experiment, const ModelSpec& model,
                                          int64_t tp, const ModelResolver& resolve_model);

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
