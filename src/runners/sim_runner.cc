#include "runners/sim_runner.h"

namespace shardscope::runners {
namespace {

// A served workload: per-request figures; the run's latency holds the mean
// TTFT and TPOT, its throughput the output tokens per second.
StatusOr<run::RunResult> RunServed(const Experiment& e, const sim::SimOptions& options) {
  serve::ServeOptions so;
  so.sim = options;
  so.keep_requests = true;  // the per-request rows of `run --json`
  ASSIGN_OR_RETURN(serve::ServingResult served, serve::SimulateServing(e, so));
  run::RunResult r;
  r.experiment = e.name;
  r.backend = "sim";
  r.ranks = e.parallel.world_size();
  r.latency.ttft = served.metrics.ttft.mean;
  r.latency.tpot = served.metrics.tpot.mean;
  r.latency.has_prefill = served.metrics.ttft.count > 0;
  r.latency.has_decode = served.metrics.tpot.count > 0;
  r.throughput.decode_tokens_per_s = served.metrics.output_tokens_per_s;
  r.throughput.prefill_tokens_per_s = served.metrics.prompt_tokens_per_s;
  r.trace_path = served.trace_path;
  r.metadata_path = served.metadata_path;
  r.detail = std::make_shared<const ServeRunDetail>(serve::ServingReport{e, std::move(served)});
  return r;
}

Status ServedRejectsDecodeSteps(const Experiment& e, int64_t max_decode_steps) {
  if (!e.serving || max_decode_steps < 0) return Status::Ok();
  return InvalidArgument(
      "--decode-steps {}: experiment '{}' is a served workload, which simulates every token of "
      "every request; the flag applies to fixed batches only (leave it out)",
      max_decode_steps, e.name);
}

}  // namespace

StatusOr<std::unique_ptr<SimRunner>> SimRunner::Create(const run::RunOptions& options) {
  RETURN_IF_ERROR(sim::ParseAlgorithm(options.allreduce).status());
  RETURN_IF_ERROR(ParseProtocol(options.protocol).status());
  RETURN_IF_ERROR(ParseAllToAllKind(options.all_to_all).status());
  return std::make_unique<SimRunner>(options.max_decode_steps);
}

Status SimRunner::Supports(const Experiment& e) const {
  return ServedRejectsDecodeSteps(e, max_decode_steps_);
}

StatusOr<run::RunResult> SimRunner::Run(const Experiment& experiment, const run::RunOptions& o) {
  // --protocol and --all-to-all replace the experiment's `communication:`
  // choices (auto: keep them), so the engine, the bounds, the serving
  // simulator and the trace's metadata all see the same ones.
  ASSIGN_OR_RETURN(const Protocol protocol, ParseProtocol(o.protocol));
  ASSIGN_OR_RETURN(const AllToAllKind all_to_all, ParseAllToAllKind(o.all_to_all));
  Experiment overridden;
  if (protocol != Protocol::kAuto || all_to_all != AllToAllKind::kAuto) {
    overridden = experiment;
    if (protocol != Protocol::kAuto) overridden.communication.protocol = protocol;
    if (all_to_all != AllToAllKind::kAuto) {
      overridden.communication.prefill_all_to_all = all_to_all;
      overridden.communication.decode_all_to_all = all_to_all;
    }
  }
  const Experiment& e = overridden.name.empty() ? experiment : overridden;
  sim::SimOptions so;
  so.calibration_file = o.calibration_file;
  ASSIGN_OR_RETURN(so.allreduce, sim::ParseAlgorithm(o.allreduce));
  // Unless told otherwise, a generation longer than kDefaultMaxDecodeSteps
  // simulates that many steps and the last, and interpolates the rest (a step's
  // time is affine in its context length): a 100,000-token generation answers
  // in seconds instead of running for hours.
  so.max_decode_steps = o.max_decode_steps >= 0 ? o.max_decode_steps : kDefaultMaxDecodeSteps;
  so.write_trace = o.write_trace;
  so.trace_root = o.trace_root;
  so.trace_file = o.trace_file;
  so.progress = o.progress;
  so.cancelled = o.cancelled;
  RETURN_IF_ERROR(ServedRejectsDecodeSteps(e, o.max_decode_steps));
  if (e.serving) return RunServed(e, so);
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

}  // namespace shardscope::runners
