#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/experiment_json.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "run/latency.h"
#include "run/run_recorder.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/sim_setup.h"
#include "sim/topology.h"
#include "sim/trace_emitter.h"

namespace shardscope::sim {
namespace {

using nlohmann::json;

// Busy figures of one phase from its timings.
PhaseFigures Figures(const PhaseProgram& program, const PhaseResult& r,
                     const std::vector<double>& rank_start) {
  PhaseFigures f;
  f.phase = program.phase;
  f.step = program.step;
  f.start = rank_start.empty() ? 0 : *std::min_element(rank_start.begin(), rank_start.end());
  f.end = *std::max_element(r.rank_end.begin(), r.rank_end.end());
  std::vector<std::pair<double, double>> comm, compute;
  for (const RankProgram& rp : program.ranks) {
    comm.clear();
    compute.clear();
    // Timings alone (op i has id i): the Ops themselves stay out of the cache.
    for (const OpTiming& t : r.timings[rp.rank]) {
      if (t.end <= t.start) continue;
      (t.comm ? comm : compute).emplace_back(t.comm ? t.post : t.start, t.end);
    }
    for (const auto& [s, e] : compute) f.compute += e - s;  // one compute stream: disjoint
    std::sort(comm.begin(), comm.end());
    // Union of comm intervals, and the part of it no compute op covers.
    double cur_s = -1, cur_e = -1;
    size_t ci = 0;
    auto exposed_of = [&](double s, double e) {
      double covered = 0;
      while (ci < compute.size() && compute[ci].second <= s) ++ci;
      for (size_t j = ci; j < compute.size() && compute[j].first < e; ++j) {
        covered += std::min(e, compute[j].second) - std::max(s, compute[j].first);
      }
      return (e - s) - covered;
    };
    for (const auto& [s, e] : comm) {
      if (s > cur_e) {
        if (cur_e > cur_s) {
          f.comm += cur_e - cur_s;
          f.exposed += exposed_of(cur_s, cur_e);
        }
        cur_s = s;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    if (cur_e > cur_s) {
      f.comm += cur_e - cur_s;
      f.exposed += exposed_of(cur_s, cur_e);
    }
  }
  return f;
}

// The bounds as the report reads them (docs/trace_format.md, metadata `sim.bounds`).
json BoundsJson(const Bounds& b) {
  json j = {{"ttft_s", b.ttft.seconds()},
            {"ttft_dominant", BoundKindName(b.ttft.dominant())},
            {"total_s", b.total},
            {"tps", b.tps},
            {"prefill_tokens_per_s", b.prefill_tokens_per_s},
            {"dominant", BoundKindName(b.total_dominant)}};
  if (b.has_decode) {
    j["tpot_s"] = b.tpot.seconds();
    j["tpot_dominant"] = BoundKindName(b.tpot.dominant());
    j["decode_tokens_per_s"] = b.decode_tokens_per_s;
  }
  return j;
}

}  // namespace

std::vector<std::string> ActiveTerms(const Experiment& experiment, const Calibration& calibration) {
  // The request and response overheads act on served runs only.
  std::vector<std::string> out = calibration.terms.Active(experiment.serving.has_value());
  const Workload& w = experiment.workload;
  if (w.LmHeadDType() != w.dtype) {
    out.push_back(fmt::format("lm_head_dtype {}", DTypeName(w.LmHeadDType())));
  }
  if (w.EmbeddingDType() != w.dtype) {
    out.push_back(fmt::format("embedding_dtype {}", DTypeName(w.EmbeddingDType())));
  }
  if (experiment.precision.given()) {
    const Precision p = PrecisionOf(experiment);
    std::string schemes;
    for (const std::string& s : experiment.precision.schemes)
      schemes += (schemes.empty() ? "" : "+") + s;
    out.push_back(fmt::format(
        "precision {}: weights {} ({}), GEMM inputs {} ({}), GEMMs in {}{}, activations {}, "
        "KV {}, all-reduce {}",
        schemes.empty() ? "custom" : schemes, p.WeightName(), ScalesName(p.weight_scales),
        DTypeName(p.gemm_inputs), ScalesName(p.input_scales), DTypeName(p.GemmDType()),
        p.GemmDType() != DType::kFp8 ? std::string()
        : p.weight_scales.kind == ScaleKind::kBlock && calibration.fp8_block_gemm
            ? fmt::format(" on the block-scaled curve ({:.3g} of the FP8 peak, half at {:.3g} "
                          "rows and K = {:.3g})",
                          calibration.fp8_block_gemm->flops, calibration.fp8_block_gemm->half_rows,
                          calibration.fp8_block_gemm->half_k)
            : fmt::format(" at {:.3g} of the peak's efficiency",
                          experiment.cluster.device.fp8_gemm_efficiency),
        DTypeName(p.activations), DTypeName(p.kv_cache), DTypeName(p.all_reduce)));
  }
  return out;
}

json SimOptionsToJson(const SimOptions& o) {
  return {{"calibration_file", o.calibration_file},
          {"allreduce_algorithm", AlgorithmName(o.allreduce)},
          {"max_decode_steps", o.max_decode_steps}};
}

namespace {

// Host time before a phase's kernels (0 without the calibration's terms):
// the scheduler's iteration, a graph replay for decode steps, and the cold
// start before the first (prefill). It is inside the phase's window (TTFT,
// TPOT) and trace span, before its first op. Returns each rank's start after it.
std::vector<double> DelayedStarts(const OverheadTerms& terms, Phase phase,
                                  const std::vector<double>& begin, const PhaseProgram& program) {
  const double host = terms.IterationSeconds(phase == Phase::kDecode) +
                      (phase == Phase::kPrefill ? terms.cold_start : 0.0);
  if (host <= 0 && terms.iteration_overhead_per_op <= 0) return begin;
  std::vector<double> out = begin;
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] +=
        host + (r < program.ranks.size() ? terms.PerOpSeconds(program.ranks[r].ops.size()) : 0.0);
  }
  return out;
}

// Sets the run's decode steps and those simulated; returns the tokens each
// request gains after the prefill's first. A speculative step yields
// TokensPerStep() of them on average (deterministic-fractional: the run takes
// ⌈tokens / per-step⌉ steps).
int64_t CountDecodeSteps(const Experiment& experiment, const SimOptions& options,
                         SimResult* result) {
  const int64_t decode_tokens = std::max<int64_t>(experiment.workload.tokens_to_generate - 1, 0);
  result->decode_steps = decode_tokens;
  if (experiment.speculative.enabled()) {
    result->decode_steps = static_cast<int64_t>(std::ceil(
        static_cast<double>(decode_tokens) / experiment.speculative.TokensPerStep() - 1e-9));
  }
  result->decode_steps_simulated = options.max_decode_steps >= 0
                                       ? std::min(result->decode_steps, options.max_decode_steps)
                                       : result->decode_steps;
  return decode_tokens;
}

// Opens the run's trace and writes its header. The trace records the run as
// simulated: with truncated decode, a run of fewer generated tokens (the
// metadata keeps the requested count).
Status OpenTrace(const Experiment& experiment, const Placement& placement,
                 const ProgramBuilder& builder, const SimOptions& options,
                 const std::string& calibration_source, SimResult* result,
                 std::unique_ptr<run::RunRecorder>* recorder,
                 std::unique_ptr<TraceEmitter>* emitter) {
  Experiment recorded = experiment;
  recorded.workload.tokens_to_generate = result->decode_steps_simulated + 1;
  json sim_meta = {{"options", SimOptionsToJson(options)},
                   {"calibration", calibration_source},
                   {"requested_tokens_to_generate", experiment.workload.tokens_to_generate},
                   {"simulated_decode_steps", result->decode_steps_simulated}};
  if (options.bounds) sim_meta["bounds"] = BoundsJson(*options.bounds);
  const json meta = run::RunMetadata(recorded, placement, "sim", sim_meta);
  ASSIGN_OR_RETURN(
      *recorder, run::RunRecorder::Open(experiment, meta, options.trace_root, options.trace_file));
  result->trace_path = (*recorder)->trace_path();
  result->metadata_path = (*recorder)->metadata_path();
  *emitter = std::make_unique<TraceEmitter>((*recorder)->writer(), experiment, placement);
  if (!builder.all_replicas().empty()) (*emitter)->SetExpertReplicas(&builder.all_replicas());
  (*emitter)->WriteHeader(PlanMemory(experiment, placement));
  return Status::Ok();
}

// Adds one simulated phase's ops and busy figures to the run's.
void AddPhase(const PhaseProgram& program, const PhaseResult& r, const std::vector<double>& start,
              SimResult* result) {
  result->ops += r.ops;
  result->transfers += r.transfers;
  PhaseFigures f = Figures(program, r, start);
  result->compute_seconds += f.compute;
  result->comm_seconds += f.comm;
  result->exposed_comm_seconds += f.exposed;
  result->phases.push_back(f);
}

// The run's TTFT, TPOT, total time and throughputs from its latency over all
// decode steps (`whole`).
void SetRunFigures(const Experiment& experiment, int64_t decode_tokens, run::Latency whole,
                   SimResult* result) {
  const int64_t d = result->decode_steps;
  int64_t run_steps = d;
  if (experiment.speculative.enabled() && decode_tokens > 0 && whole.decode_steps > 0) {
    // TPOT per generated token, not per step: the decode time over the tokens.
    whole.decode_seconds = whole.tpot * static_cast<double>(d);
    whole.tpot = whole.decode_seconds / static_cast<double>(decode_tokens);
    whole.decode_steps = decode_tokens;
    run_steps = decode_tokens;
  }
  result->ttft = whole.ttft;
  result->tpot = whole.tpot;
  result->total = run::ExtrapolatedRunSeconds(whole, run_steps);
  const run::Throughput throughput = run::ComputeThroughput(
      whole, experiment.workload.batch_size, experiment.workload.sequence_length, result->total);
  result->throughput = throughput;
  result->prefill_tokens_per_s = throughput.prefill_tokens_per_s;
  result->decode_tokens_per_s = throughput.decode_tokens_per_s;
  result->tps = throughput.tps;
}

}  // namespace

StatusOr<SimResult> SimulateExperiment(const Experiment& experiment, const SimOptions& options) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(experiment));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(experiment, placement));
  ASSIGN_OR_RETURN(std::unique_ptr<const SimSetup> setup,
                   MakeSimSetup(experiment, options.calibration_file));
  const Calibration& calibration = setup->calibration;
  Engine engine(placement, setup->compute, setup->topology,
                setup->EngineOptionsFor(options.allreduce, placement.world_size()));
  // Decode steps under CUDA graphs replay their kernels: no launch per kernel.
  const OverheadTerms& terms = calibration.terms;
  std::optional<Engine> replay_engine;
  if (terms.cuda_graphs) {
    replay_engine.emplace(placement, setup->replay_compute, setup->topology,
                          setup->EngineOptionsFor(options.allreduce, placement.world_size()));
  }
  auto engine_of = [&](Phase phase) -> Engine& {
    return phase == Phase::kDecode && replay_engine ? *replay_engine : engine;
  };

  SimResult result;
  result.calibration_source = calibration.source;
  result.terms = ActiveTerms(experiment, calibration);
  const int64_t decode_tokens = CountDecodeSteps(experiment, options, &result);

  std::unique_ptr<run::RunRecorder> recorder;
  std::unique_ptr<TraceEmitter> emitter;
  if (options.write_trace) {
    RETURN_IF_ERROR(OpenTrace(experiment, placement, builder, options, calibration.source, &result,
                              &recorder, &emitter));
  }

  std::vector<double> start(placement.world_size(), 0.0);
  std::vector<double> decode_start;
  run::LatencyWindows<double> windows;  // per-rank phase windows, seconds
  // The prefill program, and the decode program: built once, then updated in
  // place from step to step; while its ops stay the same (only their costs
  // change), the engine reuses its dependency graph too.
  std::optional<PhaseProgram> prefill, decode;
  UpdatedOps updated;  // what each Update changed, for the engine to read again
  auto simulate = [&](Phase phase, int64_t step,
                      const PhaseProgram** program) -> StatusOr<PhaseResult> {
    bool same_ops = false;
    if (phase == Phase::kDecode && decode) {
      RETURN_IF_ERROR(builder.Update(*decode, step, &same_ops, &updated));
    } else {
      ASSIGN_OR_RETURN(PhaseProgram built, builder.Build(phase, step));
      (phase == Phase::kPrefill ? prefill : decode) = std::move(built);
    }
    *program = phase == Phase::kPrefill ? &*prefill : &*decode;
    const std::vector<double> begin = DelayedStarts(terms, phase, start, **program);
    Engine& e = engine_of(phase);
    return same_ops ? e.RunSameGraph(**program, begin, &updated) : e.Run(**program, begin);
  };
  auto run_phase = [&](Phase phase, int64_t step) -> Status {
    if (options.cancelled && options.cancelled()) {
      return Cancelled("interrupted; the simulation stopped and left no trace");
    }
    if (options.progress) {
      options.progress(phase == Phase::kPrefill ? std::string("prefill")
                                                : fmt::format("decode step {}/{}", step + 1,
                                                              result.decode_steps_simulated));
    }
    const PhaseProgram* simulated = nullptr;
    ASSIGN_OR_RETURN(PhaseResult r, simulate(phase, step, &simulated));
    const PhaseProgram& program = *simulated;
    AddPhase(program, r, start, &result);
    if (emitter) emitter->WritePhase(program, r, start);
    for (size_t rank = 0; rank < r.rank_end.size(); ++rank) {
      if (phase == Phase::kPrefill) {
        windows.AddPrefill(start[rank], r.rank_end[rank]);
      } else {
        windows.AddDecodeStep(static_cast<int32_t>(step), r.rank_end[rank]);
      }
    }
    start = r.rank_end;
    engine_of(phase).Recycle(std::move(r));
    return Status::Ok();
  };
  RETURN_IF_ERROR(run_phase(Phase::kPrefill, 0));
  prefill.reset();
  decode_start = start;
  for (int64_t k = 0; k < result.decode_steps_simulated; ++k) {
    RETURN_IF_ERROR(run_phase(Phase::kDecode, k));
  }
  if (result.decode_steps_simulated > 0 && emitter) emitter->WriteDecodeSpans(decode_start, start);
  const run::Latency latency = windows.Compute();
  result.latency = latency;  // the simulated (and traced) steps, as the analyzer sees them
  run::Latency whole = latency;
  const int64_t n = result.decode_steps_simulated, d = result.decode_steps;
  if (n > 0 && n < d) {
    // A decode step's time is affine in its context length (docs/bounds.md), so
    // the mean over all d steps lies on the line through the simulated steps'
    // mean (at step (n − 1)/2) and the last step, simulated here off the trace.
    if (options.progress) options.progress(fmt::format("decode step {}/{} (the last)", d, d));
    if (options.cancelled && options.cancelled()) {
      return Cancelled("interrupted; the simulation stopped and left no trace");
    }
    const PhaseProgram* last = nullptr;
    ASSIGN_OR_RETURN(PhaseResult r, simulate(Phase::kDecode, d - 1, &last));
    result.ops += r.ops;
    result.transfers += r.transfers;
    result.last_step_seconds = *std::max_element(r.rank_end.begin(), r.rank_end.end()) -
                               *std::max_element(start.begin(), start.end());
    const double x0 = 0.5 * static_cast<double>(n - 1), x1 = static_cast<double>(d - 1);
    const double mid = 0.5 * static_cast<double>(d - 1);
    whole.tpot = latency.tpot + (result.last_step_seconds - latency.tpot) * (mid - x0) / (x1 - x0);
    whole.decode_seconds = whole.tpot * static_cast<double>(d);
    whole.decode_steps = d;
  }
  SetRunFigures(experiment, decode_tokens, whole, &result);
  // Asked again before the trace is kept: Ctrl-C during the last phase or while the
  // trace was written leaves nothing either.
  if (options.cancelled && options.cancelled()) {
    return Cancelled("interrupted; the simulation stopped and left no trace");
  }
  if (recorder) RETURN_IF_ERROR(recorder->Close());
  return result;
}

}  // namespace shardscope::sim
