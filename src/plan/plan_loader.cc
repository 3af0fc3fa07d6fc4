#include "plan/plan_loader.h"

#include <fmt/format.h>

#include "plan/placement.h"

namespace shardscope {
namespace {

// Keeps the valid experiments; the others' problems go to `invalid`.
std::vector<Experiment> SplitValid(std::vector<Experiment> all, std::vector<Status>* invalid) {
  std::vector<Experiment> valid;
  for (Experiment& e : all) {
    Status s = ValidatePlan(e);
    if (s.ok()) {
      valid.push_back(std::move(e));
    } else {
      invalid->push_back(std::move(s));
    }
  }
  return valid;
}

Status AllProblems(const std::vector<Status>& invalid, size_t total) {
  if (invalid.size() == 1) return invalid.front();
  std::string text = fmt::format("{} of {} experiments are invalid:", invalid.size(), total);
  for (const Status& s : invalid) text += "\n  " + s.message();
  return Status(invalid.front().code(), text);
}

StatusOr<std::vector<Experiment>> KeepValid(std::vector<Experiment> all,
                                            std::vector<Status>* skipped) {
  const size_t total = all.size();
  std::vector<Status> invalid;
  std::vector<Experiment> valid = SplitValid(std::move(all), &invalid);
  if (invalid.empty()) return valid;
  if (skipped == nullptr || valid.empty()) return AllProblems(invalid, total);
  for (Status& s : invalid) skipped->push_back(std::move(s));
  return valid;
}

}  // namespace

Status ValidateExperiments(const std::vector<Experiment>& experiments) {
  std::vector<Status> invalid;
  for (const Experiment& e : experiments) {
    Status s = ValidatePlan(e);
    if (!s.ok()) invalid.push_back(std::move(s));
  }
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
