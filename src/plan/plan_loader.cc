#include "plan/plan_loader.h"

#include "plan/placement.h"

namespace shardscope {

Status ValidateExperiments(const std::vector<Experiment>& experiments) {
  for (const Experiment& e : experiments) RETURN_IF_ERROR(ValidatePlan(e));
  return Status::Ok();
}

StatusOr<std::vector<Experiment>> LoadValidExperiments(const std::string& path,
                                                       const LoaderOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Experiment> all, LoadExperiments(path, options));
  RETURN_IF_ERROR(ValidateExperiments(all));
  return all;
}

StatusOr<std::vector<Experiment>> ValidExperimentsFromYaml(const YAML::Node& root,
                                                           const std::string& path,
                                                           const LoaderOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Experiment> all, ExperimentsFromYaml(root, path, options));
  RETURN_IF_ERROR(ValidateExperiments(all));
  return all;
}

}  // namespace shardscope
