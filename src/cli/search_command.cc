#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "search/distributed.h"
#include "search/search_report.h"

namespace shardscope::cli {
namespace {

struct SearchOptions {
  std::string config;
  std::string experiment;
  std::string objective;  // empty: the experiment's search block, else throughput
  int64_t max_candidates = 0;
  int64_t top = 0;
  int64_t devices = 0;
  int64_t decode_steps = 0;
  double slo_ttft_ms = 0;
  double slo_tpot_ms = 0;
  std::string csv, json, write_best;
};

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return IoError("cannot write {}", path);
  return Status::Ok();
}

int RunSearchCommand(const SearchOptions& o) {
  auto ranks = search::SearchRanks::Start(nullptr, nullptr);
  if (!ranks.ok()) return ReportError(ranks.status());
  const bool lead = (*ranks)->rank() == 0;
  // Every rank runs the same steps so that all reach the gather; only rank 0 speaks.
  auto fail = [&](const Status& s) { return lead ? ReportError(s) : kExitBadInput; };
  auto input = search::LoadSearchInput(o.config, o.experiment);
  if (!input.ok()) return fail(input.status());
  search::SearchSpec& spec = input->spec;
  if (!o.objective.empty()) {
    auto obj = search::ParseObjective(o.objective);
    if (!obj.ok()) return fail(InvalidArgument("--objective: {}", obj.status().message()));
    spec.objective = *obj;
  }
  if (o.max_candidates > 0) spec.max_candidates = o.max_candidates;
  if (o.top > 0) spec.top = o.top;
  if (o.devices > 0) spec.max_devices = o.devices;
  if (o.decode_steps > 0) spec.decode_steps = o.decode_steps;
  if (o.slo_ttft_ms > 0) spec.slo.ttft_ms = o.slo_ttft_ms;
  if (o.slo_tpot_ms > 0) spec.slo.tpot_ms = o.slo_tpot_ms;
  auto result = search::RunSearch(input->experiment, spec, (*ranks)->mapper());
  if (!result.ok()) return fail(result.status());
  if (!lead) return result->ranked.empty() ? kExitBadInput : kExitOk;
  if (!o.csv.empty()) {
    if (Status s = WriteFile(o.csv, search::SearchReportCsv(*result)); !s.ok()) {
      return ReportError(s);
    }
  }
  if (!o.json.empty()) {
    if (Status s = WriteFile(o.json, search::SearchReportJson(*result).dump(2) + "\n"); !s.ok()) {
      return ReportError(s);
    }
  }
  if (result->ranked.empty()) {
    return ReportError(InvalidArgument("{}", search::SloMissMessage(*result)));
  }
  if (!o.write_best.empty()) {
    auto yaml = search::BestPlanYaml(*result, input->experiment_yaml);
    if (!yaml.ok()) return ReportError(yaml.status());
    if (Status s = WriteFile(o.write_best, *yaml); !s.ok()) return ReportError(s);
  }
  std::cout << search::SearchReportText(*result);
  return kExitOk;
}

}  // namespace

void AddSearchCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<SearchOptions>();
  auto* cmd = app.add_subcommand(
      "search",
      "The best parallel plan for an experiment's model, cluster and workload: every plan "
      "family enumerated, pruned by memory and bounds, simulated, ranked (docs/search.md)");
  cmd->add_option("--config", opts->config, "experiments YAML file")->required();
  cmd->add_option("--experiment", opts->experiment, "the experiment to search")
      ->required()
      ->check(NonEmpty());
  cmd->add_option("--objective", opts->objective, "throughput (default), ttft, tpot or cost");
  // Each number is checked: 0 or a negative one used to mean "the default" silently.
  cmd->add_option("--max-candidates", opts->max_candidates,
                  "refuse a space larger than this (default 20000)")
      ->check(Positive());
  cmd->add_option("--top", opts->top, "rows of the ranked table (default 10)")->check(Positive());
  cmd->add_option("--devices", opts->devices, "device budget (default: the cluster's devices)")
      ->check(Positive());
  cmd->add_option("--decode-steps", opts->decode_steps,
                  "decode steps simulated per plan, the rest extrapolated (default 1)")
      ->check(WholeNumber(1, 1'000'000'000));
  cmd->add_option("--slo-ttft-ms", opts->slo_ttft_ms, "time-to-first-token target")
      ->check(Positive());
  cmd->add_option("--slo-tpot-ms", opts->slo_tpot_ms, "time-per-output-token target")
      ->check(Positive());
  cmd->add_option("--csv", opts->csv, "write every evaluated plan as CSV")->check(NonEmpty());
  cmd->add_option("--json", opts->json, "write every evaluated plan as JSON")->check(NonEmpty());
  cmd->add_option("--write-best", opts->write_best,
                  "write the best plan as a ready experiments YAML file")
      ->check(NonEmpty());
  cmd->callback([opts, exit_code] { *exit_code = RunSearchCommand(*opts); });
}

}  // namespace shardscope::cli
