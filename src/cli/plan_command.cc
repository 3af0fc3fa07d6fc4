#include <iostream>

#include "cli/cli.h"
#include "plan/plan_loader.h"
#include "report/plan_report.h"

namespace shardscope::cli {
namespace {

struct PlanOptions {
  std::string config;
  std::string experiment;
  bool json = false;
};

// Builds every report before printing, so a failure prints nothing.
int RunPlan(const PlanOptions& o) {
  auto all = LoadValidExperiments(o.config);
  if (!all.ok()) return ReportError(all.status());
  auto selected = SelectExperiments(std::move(*all), o.experiment, o.config);
  if (!selected.ok()) return ReportError(selected.status());
  std::vector<PlanReport> reports;
  for (const Experiment& e : *selected) {
    auto r = BuildPlanReport(e);
    if (!r.ok()) return ReportError(r.status());
    reports.push_back(std::move(*r));
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : reports) out.push_back(PlanReportJson(r));
    std::cout << out.dump(2) << "\n";
  } else {
    for (size_t i = 0; i < reports.size(); ++i) {
      std::cout << (i ? "\n" : "") << PlanReportText(reports[i]);
    }
  }
  return kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand(
      "plan", "Placement, groups, memory per rank, op counts, FLOPs, bytes and traffic per phase");
  cmd->add_option("--config", opts->config, "experiments YAML file")->required();
  cmd->add_option("--experiment", opts->experiment, "only this experiment (or sweep)");
  cmd->add_flag("--json", opts->json, "print JSON instead of text");
  cmd->callback([opts, exit_code] { *exit_code = RunPlan(*opts); });
}

}  // namespace shardscope::cli
