// CCL-Bench workload cards: the YAML a CCL-Bench trace directory carries (model, data,
// hardware, parallel plan, framework). ReadWorkloadCard turns one into trace metadata in
// the layout RunInfo reads (docs/trace_format.md, "Metadata"), so a foreign trace gets
// batch size, dtype, peak FLOP/s and link bandwidths for its metrics. Hardware named by a
// card (nvidia_a100, tpu_v6e, ...) takes its figures from our hardware zoo; the card's own
// figures (devices per node, memory, network bandwidths) win over the zoo's. Stateless.
#ifndef SHARDSCOPE_ANALYSIS_WORKLOAD_CARD_H_
#define SHARDSCOPE_ANALYSIS_WORKLOAD_CARD_H_

#include <yaml-cpp/yaml.h>

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/status.h"

namespace shardscope::analysis {

// Reads the card at `path`. Errors name the file and the dotted field ("card.yaml: field
// 'workload.data.batch_size': expected an integer, got 'many'"). `hardware_dir` is the
// hardware zoo (cluster/cluster_yaml.h DefaultHardwareDir() when empty).
StatusOr<nlohmann::json> ReadWorkloadCard(const std::string& path,
                                          const std::string& hardware_dir = "");
// The same from a parsed card; `file` names it in errors.
StatusOr<nlohmann::json> WorkloadCardToMetadata(const YAML::Node& card, const std::string& file,
                                                const std::string& hardware_dir = "");

// The zoo cluster a card's `xpu_spec.model` names ("nvidia_a100" -> "a100-sxm"), or ""
// when none matches.
std::string ZooNameForCardHardware(const std::string& model);

// Fills what `metadata` lacks from `card`, key by key (objects merge recursively): the
// trace's own metadata wins, the card fills gaps. When `metadata` keeps its figures under
// "experiment" (our store's layout), the card fills that object, so RunInfo still finds
// the trace's own figures first; a trace's run.batch_size / run.sequence_length also
// shadow the card's workload ones.
void MergeMissingMetadata(nlohmann::json* metadata, const nlohmann::json& card);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_WORKLOAD_CARD_H_
