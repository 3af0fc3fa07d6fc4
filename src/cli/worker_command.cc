// `shardscope worker` (hidden): what mpirun starts on every rank of a
// backend-cpu run (runtime/cpu_run.h). It reloads the experiment by name from
// its YAML, checks it is the one the launcher meant, and runs this rank.
#include <iostream>

#include "cli/cli.h"
#include "plan/plan_loader.h"
#include "runners/cpu_run.h"

namespace shardscope::cli {
namespace {

struct WorkerOptions {
  std::string config, experiment, expect_digest, fault;
  std::string trace_compression;  // the launcher's --trace-compression, if given
  runtime::CpuRunOptions run;
  bool no_trace = false;
  int64_t warmup = -1, iterations = -1;
};

StatusOr<Experiment> FindExperiment(const WorkerOptions& o) {
  LoaderOptions only;
  only.only = o.experiment;  // the launcher validated the rest; read just this one
  ASSIGN_OR_RETURN(std::vector<Experiment> all, LoadValidExperiments(o.config, only));
  for (Experiment& e : all) {
    if (e.name != o.experiment) continue;
    e.backend = RunnerKind::kCpu;
    if (!o.trace_compression.empty()) {
      ASSIGN_OR_RETURN(e.trace_compression, ParseTraceCompression(o.trace_compression));
    }
    if (!o.expect_digest.empty() && runtime::ExperimentDigest(e) != o.expect_digest) {
      return Unimplemented(
          "not implemented: backend cpu for experiment '{}' changed in memory (command-line "
          "overrides other than --backend) or a different {} on this node: the ranks reload it "
          "from {}",
          o.experiment, o.config, o.config);
    }
    return e;
  }
  return NotFound("worker: no experiment '{}' in {}", o.experiment, o.config);
}

int RunWorker(WorkerOptions o) {
  auto e = FindExperiment(o);
  if (!e.ok()) return ReportError(e.status());
  auto fault = o.fault.empty() ? runtime::FaultSpecFromEnv() : runtime::ParseFaultSpec(o.fault);
  if (!fault.ok()) return ReportError(fault.status());
  o.run.fault = *fault;
  o.run.write_trace = !o.no_trace;
  if (o.warmup >= 0) o.run.warmup_iterations = o.warmup;
  if (o.iterations >= 0) o.run.measured_iterations = o.iterations;
  auto r = runtime::RunCpuWorker(*e, o.run);  // a multi-rank failure aborts the job
  if (!r.ok()) return ReportError(r.status());
  return kExitOk;
}

}  // namespace

void AddWorkerCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<WorkerOptions>();
  auto* cmd = app.add_subcommand("worker", "one rank of a backend-cpu run (started by mpirun)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--config", o->config)->required();
  cmd->add_option("--experiment", o->experiment)->required();
  cmd->add_option("--expect-digest", o->expect_digest);
  cmd->add_option("--result", o->run.result_file);
  cmd->add_option("--status-dir", o->run.status_dir);
  cmd->add_option("--trace-root", o->run.trace_root);
  cmd->add_option("--trace-file", o->run.trace_file);
  cmd->add_flag("--no-trace", o->no_trace);
  cmd->add_option("--trace-compression", o->trace_compression);
  cmd->add_option("--warmup", o->warmup);
  cmd->add_option("--iterations", o->iterations);
  cmd->add_option("--fault", o->fault);  // as SHARDSCOPE_FAULT
  cmd->callback([o, exit_code] { *exit_code = RunWorker(*o); });
}

}  // namespace shardscope::cli
