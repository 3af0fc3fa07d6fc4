#include <unistd.h>

#include <iostream>

#include "cli/cli.h"
#include "config/experiment_loader.h"
#include "sim/run_report.h"

namespace shardscope::cli {
namespace {

struct RunOptions {
  std::string config;
  std::string experiment;
  std::string backend;  // empty: each experiment's own
  std::string out = "traces";
  std::string calibration;
  std::string algorithm = "auto";
  int64_t decode_steps = -1;
  bool no_trace = false;
  bool json = false;
};

int RunRun(const RunOptions& o) {
  auto all = LoadExperiments(o.config);
  if (!all.ok()) return ReportError(all.status());
  auto selected = SelectExperiments(std::move(*all), o.experiment, o.config);
  if (!selected.ok()) return ReportError(selected.status());
  auto algorithm = sim::ParseAlgorithm(o.algorithm);
  if (!algorithm.ok()) return ReportError(algorithm.status());
  // Every experiment must have a backend that exists before any runs.
  for (Experiment& e : *selected) {
    if (!o.backend.empty()) {
      auto b = ParseBackend(o.backend);
      if (!b.ok()) return ReportError(b.status());
      e.backend = *b;
    }
    if (e.backend != Backend::kSim) {
      return ReportError(Unimplemented(
          "experiment '{}': backend '{}' is not implemented yet (only 'sim' runs; use --backend "
          "sim)",
          e.name, BackendName(e.backend)));
    }
  }
  const bool tty = isatty(STDERR_FILENO);
  std::vector<sim::RunReport> reports;
  for (size_t i = 0; i < selected->size(); ++i) {
    const Experiment& e = (*selected)[i];
    sim::SimOptions so;
    so.calibration_file = o.calibration;
    so.allreduce = *algorithm;
    so.max_decode_steps = o.decode_steps;
    so.write_trace = !o.no_trace;
    so.trace_root = o.out;
    if (tty) {
      so.progress = [&, i](const std::string& what) {
        std::cerr << fmt::format("\r\033[K[{}/{}] {}: {}", i + 1, selected->size(), e.name, what)
                  << std::flush;
      };
    }
    auto r = sim::BuildRunReport(e, so);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    if (!r.ok()) return ReportError(r.status().WithPrefix(fmt::format("experiment '{}'", e.name)));
    reports.push_back(std::move(*r));
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : reports) out.push_back(sim::RunReportJson(r));
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << sim::RunReportText(reports);
  }
  return kExitOk;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run experiments (backend sim: simulate), write traces, print TTFT/TPOT/throughput");
  cmd->add_option("--config", opts->config, "experiments YAML file")->required();
  cmd->add_option("--experiment", opts->experiment, "only this experiment (or sweep)");
  cmd->add_option("--backend", opts->backend, "sim, cpu or cuda (default: each experiment's)");
  cmd->add_option("--out", opts->out, "trace store root (default: traces)");
  cmd->add_option("--calibration", opts->calibration,
                  "efficiency table (YAML/JSON) replacing the defaults (docs/sim.md)");
  cmd->add_option("--algorithm", opts->algorithm,
                  "all-reduce algorithm: auto (NCCL-like choice), ring, tree, hierarchical");
  cmd->add_option("--decode-steps", opts->decode_steps,
                  "simulate only the first N decode steps (stated in the summary and trace)");
  cmd->add_flag("--no-trace", opts->no_trace, "do not write traces (summary only)");
  cmd->add_flag("--json", opts->json, "print JSON instead of text");
  cmd->callback([opts, exit_code] { *exit_code = RunRun(*opts); });
}

}  // namespace shardscope::cli
