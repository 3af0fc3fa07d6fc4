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

// Validates every experiment's plan. Each problem names the file, the
// experiment and the field; with several, the error lists them all
// ("3 of 12 experiments are invalid:" and one line each).
Status ValidateExperiments(const std::vector<Experiment>& experiments);

// LoadExperiments, then validation. With `skipped`, invalid experiments are
// left out and their problems appended there (an error only when none is
// valid); without, any invalid experiment is an error listing all of them.
StatusOr<std::vector<Experiment>> LoadValidExperiments(const std::string& path,
                                                       const LoaderOptions& options = {},
                                                       std::vector<Status>* skipped = nullptr);

// ExperimentsFromYaml, then validation as above.
StatusOr<std::vector<Experiment>> ValidExperimentsFromYaml(const YAML::Node& root,
                                                           const std::string& path,
                                                           const LoaderOptions& options = {},
                                                           std::vector<Status>* skipped = nullptr);

}  // namespace shardscope

#endif  // SHARDSCOPE_PLAN_PLAN_LOADER_H_
