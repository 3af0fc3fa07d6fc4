#include "runners/cpu_runner.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "program/program_builder.h"

namespace shardscope::runners {
namespace {

// `name` with each layer number ("L12") written "L<n>", so that the names of a
// model's layers collapse into one list.
std::string LayerPattern(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const bool starts = name[i] == 'L' && (i == 0 || name[i - 1] == '.') && i + 1 < name.size() &&
                        std::isdigit(static_cast<unsigned char>(name[i + 1]));
    if (!starts) {
      out += name[i];
      continue;
    }
    out += "L<n>";
    while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
  }
  return out;
}

// A fault's op that the rank never runs would never fire and say nothing: the op
// (by name or id) must be in the rank's Program of the fault's phase (prefill and
// decode step 0 when it names none), and that phase must be in the run.
Status CheckFaultOp(const runtime::FaultSpec& f, const Experiment& e) {
  const int64_t decode_steps = std::max<int64_t>(e.workload.tokens_to_generate - 1, 0);
  if (f.phase_index > decode_steps) {
    return InvalidArgument(
        "{}: experiment '{}': phase decode:{} never runs (the run has {} decode steps{})",
        runtime::kFaultEnvVar, e.name, f.phase_index - 1, decode_steps,
        decode_steps > 0 ? fmt::format(": decode:0 to decode:{}", decode_steps - 1) : "");
  }
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, placement));
  std::vector<std::pair<Phase, int64_t>> phases;
  if (f.phase_index <= 0) phases.emplace_back(Phase::kPrefill, 0);
  if (f.phase_index < 0 && decode_steps > 0) phases.emplace_back(Phase::kDecode, 0);
  if (f.phase_index > 0) phases.emplace_back(Phase::kDecode, f.phase_index - 1);
  std::vector<std::string> names;  // layer patterns, in order of first appearance
  std::set<std::string> seen;
  size_t max_ops = 0;
  for (const auto& [phase, step] : phases) {
    ASSIGN_OR_RETURN(PhaseProgram program, builder.Build(phase, step));
    const auto& ops = program.ranks.at(static_cast<size_t>(f.rank)).ops;
    max_ops = std::max(max_ops, ops.size());
    for (const Op& op : ops) {
      if (f.op_id >= 0 ? op.id == f.op_id : OpName(op) == f.op) return Status::Ok();
      const std::string pattern = LayerPattern(OpName(op));
      if (seen.insert(pattern).second) names.push_back(pattern);
    }
  }
  const std::string where =
      f.phase_index < 0
          ? std::string(decode_steps > 0 ? "prefill or decode" : "prefill")
          : (f.phase_index == 0 ? "prefill" : fmt::format("decode step {}", f.phase_index - 1));
  return InvalidArgument(
      "{}: experiment '{}': rank {} runs no op {} in {} (its ops: ids 0 to {}; names {}, "
      "L<n> for layers 0 to {})",
      runtime::kFaultEnvVar, e.name, f.rank,
      f.op_id >= 0 ? std::to_string(f.op_id) : "'" + f.op + "'", where,
      static_cast<int64_t>(max_ops) - 1, fmt::join(names, ", "), e.model.num_layers - 1);
}

}  // namespace

StatusOr<std::unique_ptr<CpuRunner>> CpuRunner::Create(const run::RunOptions& options) {
  // The rank count is the experiment's world size: a second -np made mpirun fail with
  // a message of its own ("error: error: …").
  for (const std::string& arg : options.mpirun_args) {
    for (const char* flag : {"-np", "-n", "--np", "--n", "-c"}) {
      if (arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0) {
        return InvalidArgument(
            "--mpirun-args: '{}' sets the number of ranks, which is each experiment's world size "
            "(its parallel plan); leave it out",
            arg);
      }
    }
  }
  ASSIGN_OR_RETURN(runtime::FaultSpec fault, runtime::FaultSpecFromEnv());
  return std::make_unique<CpuRunner>(std::move(fault));
}

Status CpuRunner::Supports(const Experiment& experiment) const {
  RETURN_IF_ERROR(runtime::CpuRunnerBuilt(experiment));
  // The ranks run on this machine's cores: a GPU or TPU cluster would label the
  // trace and the simulated comparison with hardware that did not run.
  const DeviceSpec& device = experiment.cluster.device;
  if (device.kind != DeviceKind::kCpu) {
    return InvalidArgument(
        "experiment '{}': backend cpu runs on this machine's CPU cores, but its hardware '{}' "
        "is a {} cluster ({}); use a cpu cluster such as hardware: local-cpu",
        experiment.name, experiment.cluster.name, DeviceKindName(device.kind), device.name);
  }
  // Refused here, before mpirun starts, rather than by every rank (exit 1).
  if (experiment.model.norm != NormKind::kRmsNorm) {
    return Unimplemented(
        "experiment '{}': not implemented: LayerNorm in the CPU executor (model '{}'); backend "
        "sim simulates it",
        experiment.name, experiment.model.name);
  }
  if (experiment.model.qk_norm) {
    return Unimplemented(
        "experiment '{}': not implemented: per-head q/k norms (qk_norm) in the CPU executor "
        "(model '{}'); backend sim simulates them",
        experiment.name, experiment.model.name);
  }
  // A fault on a rank the job does not have would never fire and say nothing.
  if (fault_.active() && fault_.rank >= experiment.parallel.world_size()) {
    return InvalidArgument("{}: experiment '{}': rank {} does not exist (the job has {} ranks)",
                           runtime::kFaultEnvVar, experiment.name, fault_.rank,
                           experiment.parallel.world_size());
  }
  if (fault_.active()) RETURN_IF_ERROR(CheckFaultOp(fault_, experiment));
  return Status::Ok();
}

StatusOr<run::RunResult> CpuRunner::Run(const Experiment& e, const run::RunOptions& o) {
  runtime::CpuRunOptions co;
  co.config_path = o.config_path;
  co.trace_root = o.trace_root;
  co.trace_file = o.trace_file;
  co.write_trace = o.write_trace;
  co.hostfile = o.hostfile;
  co.mpirun_args = o.mpirun_args;
  co.hang_timeout_seconds = o.hang_timeout_seconds;
  co.shardscope_binary = o.worker_binary;
  co.fault = fault_;
  if (o.progress) o.progress("running on CPU ranks…");
  ASSIGN_OR_RETURN(runtime::CpuRunResult cpu, runtime::RunCpuExperiment(e, co));
  run::RunResult r;
  r.experiment = e.name;
  r.backend = "cpu";
  r.report = cpu.root;
  r.ranks = cpu.ranks;
  // The ranks computed TTFT and TPOT with run/latency.h over the traced generation.
  r.latency.has_prefill = cpu.ttft_seconds > 0;
  r.latency.ttft = cpu.ttft_seconds;
  r.latency.tpot = cpu.tpot_seconds;
  r.latency.decode_steps = std::max<int64_t>(e.workload.tokens_to_generate - 1, 0);
  r.latency.has_decode = cpu.tpot_seconds > 0;
  r.latency.decode_seconds = cpu.tpot_seconds * static_cast<double>(r.latency.decode_steps);
  double mean = 0;
  for (double g : cpu.generation_seconds)
    mean += g / static_cast<double>(cpu.generation_seconds.size());
  r.throughput =
      run::ComputeThroughput(r.latency, e.workload.batch_size, e.workload.sequence_length, mean);
  r.trace_path = cpu.trace_path;
  r.metadata_path = cpu.metadata_path;
  r.detail = std::make_shared<const CpuRunDetail>(std::move(cpu));
  return r;
}

}  // namespace shardscope::runners
