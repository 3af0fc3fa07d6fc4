// Experiments as every command and backend starts from them: loaded from YAML
// (config/experiment_loader.h) and each plan validated against its model and
// cluster (ValidatePlan, placement.h). The loader itself only reads; checking a
// plan is this layer's job.
#ifndef SHARDSCOPE_PLAN_PLAN_LOADER_H_
#define SHARDSCOPE_PLAN_PLAN_LOADER_H_

#include <string>
#include <vector>

#include "config/experiment_loader.h"
#include "core/status.h"

namespace shardscope {

// Validates every experiment's plan; the first problem names the file, the
// experiment and the field.
Status ValidateExperiments(const std::vector<Experiment>& experiments);

// LoadExperiments, then ValidateExperiments.
StatusOr<std::vector<Experiment>> LoadValidExperiments(const std::string& path,
                                                       const LoaderOptions& options = {});

// ExperimentsFromYaml, then ValidateExperiments.
StatusOr<std::vector<Experiment>> ValidExperimentsFromYaml(const YAML::Node& root,
                                                           const std::string& path,
                                                           const LoaderOptions& options = {});

}  // namespace shardscope

#endif  // SHARDSCOPE_PLAN_PLAN_LOADER_H_
