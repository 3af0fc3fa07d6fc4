#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/experiments_arg.h"
#include "report/plan_report.h"

namespace shardscope::cli {
namespace {

struct CheckOptions {
  ExperimentsArg experiments;
  bool json = false;
  bool strict = false;
};

// Exit code with --strict when a claim is impossible or a plan does not fit.
constexpr int kExitClaimsFail = 3;

int RunCheck(const CheckOptions& o) {
  auto selected = LoadSelection(o.experiments);
  if (!selected.ok()) return ReportError(selected.status());
  std::vector<CheckReport> reports;
  for (const Experiment& e : selected->experiments) {
    auto r = BuildCheckReport(e);
    if (!r.ok()) return ReportError(r.status());
    reports.push_back(std::move(*r));
  }
  auto searches = DescribeSearches(o.experiments, selected->searches);
  if (!searches.ok()) return ReportError(searches.status());
  bool ok = true;
  for (const auto& r : reports) ok = ok && r.all_possible() && r.memory.Fits();
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : reports) out.push_back(CheckReportJson(r));
    for (const auto& d : *searches) out.push_back(d);
    std::cout << out.dump(2) << "\n";
  } else {
    for (size_t i = 0; i < reports.size(); ++i) {
      std::cout << (i ? "\n" : "") << CheckReportText(reports[i]);
    }
    if (!searches->empty() && !reports.empty()) std::cout << "\n";
    for (const auto& d : *searches) std::cout << SearchDescriptionText(d);
  }
  return o.strict && !ok ? kExitClaimsFail : kExitOk;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand(
      "check", "Memory fit, physical bounds on TTFT/TPOT/throughput, and each claim's verdict");
  cmd->add_option("--config", opts->experiments.config, "experiments YAML file")->required();
  cmd->add_option("--experiment", opts->experiments.experiment, "only this experiment (or sweep)")
      ->check(NonEmpty());
  AddSkipInvalidFlag(cmd, &opts->experiments);
  cmd->add_flag("--json", opts->json, "print JSON instead of text");
  cmd->add_flag("--strict", opts->strict,
                "exit with 3 when a claim is impossible or a plan does not fit in memory");
  cmd->callback([opts, exit_code] { *exit_code = RunCheck(*opts); });
}

}  // namespace shardscope::cli
