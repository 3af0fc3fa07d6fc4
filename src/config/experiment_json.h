// JSON form of a fully resolved Experiment (model, cluster, plan, workload,
// claims), in SI units. Written into trace metadata and `--json` outputs so a
// run can be reproduced from its record alone.
#ifndef SHARDSCOPE_CONFIG_EXPERIMENT_JSON_H_
#define SHARDSCOPE_CONFIG_EXPERIMENT_JSON_H_

#include <nlohmann/json_fwd.hpp>

#include "config/experiment.h"

namespace shardscope {

nlohmann::json ModelToJson(const ModelSpec& model);
nlohmann::json ClusterToJson(const ClusterSpec& cluster);
nlohmann::json ExperimentToJson(const Experiment& experiment);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_EXPERIMENT_JSON_H_
