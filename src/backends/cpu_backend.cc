#include "backends/cpu_backend.h"

#include <algorithm>

namespace shardscope::backends {

StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(const run::RunOptions&) {
  ASSIGN_OR_RETURN(runtime::FaultSpec fault, runtime::FaultSpecFromEnv());
  return std::make_unique<CpuBackend>(std::move(fault));
}

Status CpuBackend::Supports(const Experiment& experiment) const {
  RETURN_IF_ERROR(runtime::CpuBackendBuilt(experiment));
  // The ranks run on this machine's cores: a GPU or TPU cluster would label the
  // trace and the simulated comparison with hardware that did not run.
  const DeviceSpec& device = experiment.cluster.device;
  if (device.kind != DeviceKind::kCpu) {
    return InvalidArgument(
        "experiment '{}': backend cpu runs on this machine's CPU cores, but its hardware '{}' "
        "is a {} cluster ({}); use a cpu cluster such as hardware: local-cpu",
        experiment.name, experiment.cluster.name, DeviceKindName(device.kind), device.name);
  }
  return Status::Ok();
}

StatusOr<run::RunResult> CpuBackend::Run(const Experiment& e, const run::RunOptions& o) {
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

}  // namespace shardscope::backends
