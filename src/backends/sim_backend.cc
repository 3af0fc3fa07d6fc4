#include "backends/sim_backend.h"

namespace shardscope::backends {

StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(const run::RunOptions& options) {
  RETURN_IF_ERROR(sim::ParseAlgorithm(options.allreduce).status());
  return std::make_unique<SimBackend>();
}

StatusOr<run::RunResult> SimBackend::Run(const Experiment& e, const run::RunOptions& o) {
  sim::SimOptions so;
  so.calibration_file = o.calibration_file;
  ASSIGN_OR_RETURN(so.allreduce, sim::ParseAlgorithm(o.allreduce));
  so.max_decode_steps = o.max_decode_steps;
  so.write_trace = o.write_trace;
  so.trace_root = o.trace_root;
  so.trace_file = o.trace_file;
  so.progress = o.progress;
  so.cancelled = o.cancelled;
  ASSIGN_OR_RETURN(sim::RunReport report, sim::BuildRunReport(e, so));
  run::RunResult r;
  r.experiment = e.name;
  r.backend = "sim";
  r.ranks = e.parallel.world_size();
  r.latency = report.sim.latency;
  r.throughput = report.sim.throughput;
  r.trace_path = report.sim.trace_path;
  r.metadata_path = report.sim.metadata_path;
  r.detail = std::make_shared<const SimRunDetail>(std::move(report));
  return r;
}

}  // namespace shardscope::backends
