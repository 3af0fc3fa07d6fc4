#include "plan/plan_loader.h"

#include <fmt/format.h>

#include "core/yaml_reader.h"
#include "plan/placement.h"

namespace shardscope {
namespace {

// The problems of the invalid plans, in order; `valid`, when given, marks
// which experiments passed.
std::vector<Status> PlanProblems(const std::vector<Experiment>& all, std::vector<bool>* valid) {
  std::vector<Status> invalid;
  for (const Experiment& e : all) {
    Status s = ValidatePlan(e);
    if (valid != nullptr) valid->push_back(s.ok());
    if (!s.ok()) invalid.push_back(std::move(s));
  }
  return invalid;
}

Status AllProblems(const std::vector<Status>& invalid, size_t total) {
  if (invalid.size() == 1) return invalid.front();
  std::string text = fmt::format("{} of {} experiments are invalid:", invalid.size(), total);
  for (const Status& s : invalid) text += "\n  " + s.message();
  return Status(invalid.front().code(), text);
}

StatusOr<std::vector<Experiment>> KeepValid(std::vector<Experiment> all,
                                            std::vector<Status>* skipped) {
  std::vector<bool> valid;
  std::vector<Status> invalid = PlanProblems(all, &valid);
  if (invalid.empty()) return all;
  if (skipped == nullptr || invalid.size() == all.size()) return AllProblems(invalid, all.size());
  std::vector<Experiment> kept;
  for (size_t i = 0; i < all.size(); ++i) {
    if (valid[i]) kept.push_back(std::move(all[i]));
  }
  for (Status& s : invalid) skipped->push_back(std::move(s));
  return kept;
}

}  // namespace

Status ValidateExperiments(const std::vector<Experiment>& experiments) {
  std::vector<Status> invalid = PlanProblems(experiments, nullptr);
  return invalid.empty() ? Status::Ok() : AllProblems(invalid, experiments.size());
}

StatusOr<std::vector<Experiment>> LoadValidExperiments(const std::string& path,
                                                       const LoaderOptions& options,
                                                       std::vector<Status>* skipped) {
  ASSIGN_OR_RETURN(std::vector<Experiment> all, LoadExperiments(path, options));
  return KeepValid(std::move(all), skipped);
}

StatusOr<std::vector<Experiment>> ValidExperimentsFromYaml(const YAML::Node& root,
                                                           const std::string& path,
                                                           const LoaderOptions& options,
                                                           std::vector<Status>* skipped) {
  ASSIGN_OR_RETURN(std::vector<Experiment> all, ExperimentsFromYaml(root, path, options));
  return KeepValid(std::move(all), skipped);
}

}  // namespace shardscope
