// SimulateExperiment: the simulator backend end to end. Builds the Program of
// every phase (prefill, then decode steps 0 … G−2), runs each on the Engine —
// rank r starts phase k+1 when it has finished phase k; a phase's network
// traffic never overlaps another phase's — writes the trace and its metadata
// into the trace store (backend "sim") and returns the summary figures.
// The same experiment and options always give byte-identical traces.
#ifndef SHARDSCOPE_SIM_SIMULATOR_H_
#define SHARDSCOPE_SIM_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "estimate/bounds.h"
#include "run/latency.h"
#include "sim/calibration.h"
#include "sim/collectives.h"

namespace shardscope::sim {

struct SimOptions {
  std::string calibration_file;  // empty: the device family's defaults (calibration.h)
  Algorithm allreduce = Algorithm::kAuto;
  // Simulate only the first N decode steps (−1: all G−1). The trace then
  // records a run of N+1 generated tokens and says so in its metadata; the last
  // step is simulated too (off the trace) and TPOT, run time and throughput
  // interpolate step time linearly in context between them.
  int64_t max_decode_steps = -1;
  bool write_trace = true;
  std::string trace_root = "traces";
  // Non-empty: write the trace to this file (no metadata file) instead of the
  // store. Store traces differ only in the store's timestamp field; this path
  // gives fully byte-identical files for identical runs.
  std::string trace_file;
  // Called with a short status line before each phase (progress display).
  std::function<void(const std::string&)> progress;
  // Asked before each phase: true stops the run with kCancelled, no trace left.
  std::function<bool()> cancelled;
  // The experiment's physical bounds, recorded in the trace metadata (sim.bounds) for
  // the report; null: not recorded. Not owned.
  const Bounds* bounds = nullptr;
};

nlohmann::json SimOptionsToJson(const SimOptions& options);

struct PhaseFigures {
  Phase phase = Phase::kPrefill;
  int64_t step = 0;
  double start = 0;    // earliest rank start, seconds
  double end = 0;      // latest rank end
  double compute = 0;  // Σ over ranks of compute busy time
  double comm = 0;     // Σ over ranks of the union of comm intervals
  double exposed = 0;  // Σ over ranks of comm time not overlapped by compute
};

// TTFT, TPOT and throughput are run/latency.h's over the per-rank phase
// windows, as the analyzer computes them over the trace.
struct SimResult {
  run::Latency latency;
  run::Throughput throughput;
  double ttft = 0;  // seconds: prefill end (last rank)
  double tpot = 0;  // mean decode step of the run (interpolated when truncated); 0 without decode
  // Steps of the run: G − 1, or ⌈(G − 1) / tokens per step⌉ under speculative
  // decoding (whose tpot is then per generated token: decode time / (G − 1)).
  int64_t decode_steps = 0;
  int64_t decode_steps_simulated = 0;
  double total = 0;                 // ttft + decode_steps · tpot (extrapolated when truncated)
  double last_step_seconds = 0;     // truncated runs: the last decode step, simulated apart
  double prefill_tokens_per_s = 0;  // batch · prompt / ttft
  double decode_tokens_per_s = 0;   // batch / tpot
  double tps = 0;                   // the seeds' TPS: batch · prompt / total
  double compute_seconds = 0;       // Σ over ranks and phases
  double comm_seconds = 0;
  double exposed_comm_seconds = 0;
  double comm_fraction() const {
    return comm_seconds + compute_seconds > 0 ? comm_seconds / (comm_seconds + compute_seconds) : 0;
  }
  int64_t ops = 0;        // ops simulated
  int64_t transfers = 0;  // network transfers simulated
  std::vector<PhaseFigures> phases;
  std::string calibration_source;
  // The fidelity terms that were on (ActiveTerms); empty: none.
  std::vector<std::string> terms;
  std::string trace_path;  // empty without write_trace
  std::string metadata_path;
};

// The fidelity terms on for `experiment` under `calibration`, for run
// summaries: the calibration's overhead terms (OverheadTerms::Active; the
// request and response overheads for served experiments only) and the
// vocabulary matrices' own dtypes where they differ from the model's.
std::vector<std::string> ActiveTerms(const Experiment& experiment, const Calibration& calibration);

// Fails with a clear message on an invalid plan, a deadlocked program, a bad
// calibration file or an I/O error; the backend of `experiment` is ignored.
StatusOr<SimResult> SimulateExperiment(const Experiment& experiment, const SimOptions& options);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_SIMULATOR_H_
