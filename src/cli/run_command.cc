// `shardscope run`: parse flags, create each experiment's runner from the
// registry, run, print the results (runners/run_output.h).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.h"
#include "cli/experiments_arg.h"
#include "runners/registry.h"
#include "runners/run_output.h"
#include "trace/trace_store.h"

namespace shardscope::cli {
namespace {

// SIGINT, SIGTERM or SIGHUP while experiments run: a flag the runners poll
// between phases (run::RunOptions::cancelled), so the run stops cleanly and
// leaves nothing in the store. The previous handlers come back on destruction.
volatile sig_atomic_t g_interrupted = 0;

class InterruptFlag {
 public:
  InterruptFlag() {
    g_interrupted = 0;
    struct sigaction sa = {};
    sa.sa_handler = [](int sig) { g_interrupted = sig; };
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &sa, &previous_[i]);
  }
  ~InterruptFlag() {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;

  static bool raised() { return g_interrupted != 0; }

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[std::size(kSignals)];
};

struct RunFlags {
  ExperimentsArg experiments;
  std::string backend;  // empty: each experiment's own
  bool json = false;
  std::string mpirun_args;  // backend cpu: split at spaces
  run::RunOptions run;
  bool no_trace = false;
  std::string trace_compression;  // empty: each experiment's own
};

std::vector<std::string> SplitAtSpaces(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

void PrintResults(const std::vector<run::RunResult>& results, bool json) {
  if (json) {
    std::cout << runners::RunResultsJson(results).dump(2) << "\n";
  } else {
    std::cout << runners::RunResultsText(results);
  }
}

int RunRun(RunFlags f) {
  auto selected = LoadSelectedExperiments(f.experiments);
  if (!selected.ok()) return ReportError(selected.status());
  if (!f.trace_compression.empty()) {
    auto c = ParseTraceCompression(f.trace_compression);
    if (!c.ok()) return ReportError(c.status().WithPrefix("--trace-compression"));
    for (Experiment& e : *selected) e.trace_compression = *c;
  }
  run::RunOptions& options = f.run;
  options.config_path = f.experiments.config;
  options.write_trace = !f.no_trace;
  options.mpirun_args = SplitAtSpaces(f.mpirun_args);
  if (options.write_trace && options.trace_file.empty()) {
    Status root = trace::TraceStore(options.trace_root).CheckRoot();
    if (!root.ok()) return ReportError(root.WithPrefix("--out"));
  }
  // Every experiment's backend must exist and support it before any runs.
  auto created = runners::CreateRunnersFor(&*selected, f.backend, options);
  if (!created.ok()) return ReportError(created.status());
  runners::RunnerSet& runners = *created;
  InterruptFlag interrupt;
  options.cancelled = &InterruptFlag::raised;
  const bool tty = isatty(STDERR_FILENO);
  std::vector<run::RunResult> results;
  for (size_t i = 0; i < selected->size(); ++i) {
    const Experiment& e = (*selected)[i];
    run::RunOptions o = options;
    if (tty) {
      o.progress = [&, i](const std::string& what) {
        std::cerr << fmt::format("\r\033[K[{}/{}] {}: {}", i + 1, selected->size(), e.name, what)
                  << std::flush;
      };
    } else {
      // A log, not a terminal: a line every 10 s of a long run, none for short ones.
      const auto start = std::chrono::steady_clock::now();
      auto next = start + std::chrono::seconds(10);
      o.progress = [&, i, start, next](const std::string& what) mutable {
        const auto now = std::chrono::steady_clock::now();
        if (now < next) return;
        next = now + std::chrono::seconds(10);
        std::cerr << fmt::format("[{}/{}] {}: {} ({:.0f} s)\n", i + 1, selected->size(), e.name,
                                 what, std::chrono::duration<double>(now - start).count());
      };
    }
    auto r = runners.at(std::string(RunnerKindName(e.backend)))->Run(e, o);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    if (!r.ok()) {
      // The experiments that ran before are in the store: say what they gave.
      if (!results.empty()) PrintResults(results, f.json);
      return ReportError(r.status().WithPrefix(fmt::format("experiment '{}'", e.name)));
    }
    if (!r->report) return kExitOk;  // a CPU rank under mpirun: rank 0 reports
    results.push_back(std::move(*r));
  }
  PrintResults(results, f.json);
  return kExitOk;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand(
      "run",
      "Run experiments (sim: simulate; cpu: real ranks over MPI), write traces, print TTFT/TPOT");
  cmd->add_option("--config", f->experiments.config, "experiments YAML file")->required();
  cmd->add_option("--experiment", f->experiments.experiment, "only this experiment (or sweep)")
      ->check(NonEmpty());
  AddSkipInvalidFlag(cmd, &f->experiments);
  cmd->add_option("--backend", f->backend, "sim, cpu or cuda (default: each experiment's)");
  cmd->add_option("--out", f->run.trace_root, "trace store root (default: traces)");
  cmd->add_option("--calibration", f->run.calibration_file,
                  "efficiency table (YAML/JSON) replacing the defaults (docs/sim.md)");
  cmd->add_option("--algorithm", f->run.allreduce,
                  "collective algorithm: auto (the experiment's, else NCCL-like choice), ring, "
                  "tree, hierarchical, nvls, nvls_tree");
  cmd->add_option("--protocol", f->run.protocol,
                  "NCCL protocol: auto (the experiment's, else NCCL-like choice), ll, ll128, "
                  "simple");
  cmd->add_option("--all-to-all", f->run.all_to_all,
                  "MoE all-to-all of both phases: auto (the experiment's), nccl, hierarchical, "
                  "low_latency");
  cmd->add_option("--decode-steps", f->run.max_decode_steps,
                  "simulate only the first N decode steps (stated in the summary and trace; "
                  "default: all, up to 1024)")
      ->check(WholeNumber(0, 1'000'000'000));
  cmd->add_flag("--no-trace", f->no_trace, "do not write traces (summary only)");
  cmd->add_option("--trace-compression", f->trace_compression,
                  "none or gzip (trace_{timestamp}.trace.gz, written on parallel threads; "
                  "default: each experiment's trace_compression)");
  cmd->add_option("--hostfile", f->run.hostfile,
                  "backend cpu: mpirun host file, to place ranks on several nodes")
      ->check(CLI::ExistingFile);
  cmd->add_option("--mpirun-args", f->mpirun_args,
                  "backend cpu: more mpirun options, e.g. \"--map-by node\" (split at spaces)");
  cmd->add_option("--hang-timeout", f->run.hang_timeout_seconds,
                  "backend cpu: end the job as hung when a rank waits on its peers and no rank "
                  "starts an op for this many seconds (default 300; 0: never)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_flag("--json", f->json, "print JSON instead of text");
  cmd->callback([f, exit_code] { *exit_code = RunRun(*f); });
}

}  // namespace shardscope::cli
