#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/experiments_arg.h"
#include "report/plan_report.h"

namespace shardscope::cli {
namespace {

struct PlanOptions {
  ExperimentsArg experiments;
  bool json = false;
};

// Builds every report before printing, so a failure prints nothing.
int RunPlan(const PlanOptions& o) {
  auto selected = LoadSelection(o.experiments);
  if (!selected.ok()) return ReportError(selected.status());
  std::vector<PlanReport> reports;
  for (const Experiment& e : selected->experiments) {
    auto r = BuildPlanReport(e);
    if (!r.ok()) return ReportError(r.status());
    reports.push_back(std::move(*r));
  }
  auto searches = DescribeSearches(o.experiments, selected->searches);
  if (!searches.ok()) return ReportError(searches.status());
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : reports) out.push_back(PlanReportJson(r));
    for (const auto& d : *searches) out.push_back(d);
    std::cout << out.dump(2) << "\n";
  } else {
    for (size_t i = 0; i < reports.size(); ++i) {
      std::cout << (i ? "\n" : "") << PlanReportText(reports[i]);
    }
    if (!searches->empty() && !reports.empty()) std::cout << "\n";
    for (const auto& d : *searches) std::cout << SearchDescriptionText(d);
  }
  return kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand(
      "plan", "Placement, groups, memory per rank, op counts, FLOPs, bytes and traffic per phase");
  cmd->add_option("--config", opts->experiments.config, "experiments YAML file")->required();
  cmd->add_option("--experiment", opts->experiments.experiment, "only this experiment (or sweep)")
      ->check(NonEmpty());
  AddSkipInvalidFlag(cmd, &opts->experiments);
  cmd->add_flag("--json", opts->json, "print JSON instead of text");
  cmd->callback([opts, exit_code] { *exit_code = RunPlan(*opts); });
}

}  // namespace shardscope::cli
