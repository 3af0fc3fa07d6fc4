// Validate: simulates an experiment and sets the simulated run beside a
// measured trace of the same experiment (`shardscope validate`) — end to end
// (TTFT, TPOT, throughputs, from the analyzer's metrics on both traces), per
// phase, and per op kind within each phase (time per rank, per decode step,
// and share of the phase) — with the signed error (simulated − measured) /
// measured. Both sides go through the same importers and analyzer, so they
// are measured the same way. Given several measured traces (repeated runs of
// the experiment), each row's measured value is their mean, with the smallest
// and largest beside it: on a host whose speed moves from run to run, the
// simulator predicts the expected run, not any one.
#ifndef SHARDSCOPE_CALIBRATE_VALIDATE_H_
#define SHARDSCOPE_CALIBRATE_VALIDATE_H_

#include <optional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope::calibrate {

struct ValidateOptions {
  std::string calibration_file;  // empty: the device family's defaults
  // Where the simulated trace goes; empty: a temporary file, removed after.
  std::string sim_trace;
  // MoE: simulate with the measured run's split of tokens per layer
  // (measured_routing.h) instead of the experiment's routing distribution.
  bool measured_routing = true;
};

struct ValidationRow {
  std::string scope;  // "run", "prefill", "decode"
  std::string name;   // "ttft", "phase time", or an op kind ("ffn_up", "all_reduce.tp")
  std::string unit;   // "s", "tokens/s", "share"
  std::optional<double> simulated, measured;  // measured: the mean over the runs having it
  std::optional<double> measured_min, measured_max;
  int runs = 0;  // measured runs having the row
  // (simulated − measured) / measured; nullopt when either is missing or measured is 0.
  std::optional<double> error() const;
};

struct ValidationResult {
  std::string experiment;
  std::vector<std::string> measured_traces;
  std::string calibration;         // the simulator's calibration source
  std::vector<std::string> terms;  // fidelity terms on (sim::ActiveTerms); empty: none
  std::string routing;             // how the simulated run was routed, when taken from the trace
  std::vector<ValidationRow> rows;
  std::vector<std::string> warnings;  // e.g. the trace names another experiment
};

// `measured_traces`: one or more runs of the experiment. A MoE's measured
// routing is read from the first. Errors: none given; the simulator's (invalid
// plan, bad calibration file); the analyzer's on a measured trace (missing,
// malformed; naming the file).
StatusOr<ValidationResult> ValidateExperiment(const Experiment& experiment,
                                              const std::vector<std::string>& measured_traces,
                                              const ValidateOptions& options);

// Markdown table (format "md") or CSV ("csv").
StatusOr<std::string> RenderValidation(const ValidationResult& result, const std::string& format);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_VALIDATE_H_
