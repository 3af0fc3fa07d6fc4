// The simulator as a runner (backend "sim"): simulates the experiment, computes its
// bounds, memory and claim rows (sim/run_report.h) and returns them as the
// RunResult's SimRunDetail; a served experiment (Experiment::serving) is
// simulated request by request (serve/) and returned as a ServeRunDetail. Deterministic: the same
// experiment and options give byte-identical traces.
#ifndef SHARDSCOPE_RUNNERS_SIM_RUNNER_H_
#define SHARDSCOPE_RUNNERS_SIM_RUNNER_H_

#include <memory>
#include <utility>

#include "run/runner.h"
#include "serve/serving_report.h"
#include "sim/run_report.h"

namespace shardscope::runners {

// What only the simulator reports: its figures beside bounds, memory and claims.
class SimRunDetail : public run::RunDetail {
 public:
  explicit SimRunDetail(sim::RunReport report) : report(std::move(report)) {}
  const sim::RunReport report;
};

// A served experiment's figures (serve/serving_report.h).
class ServeRunDetail : public run::RunDetail {
 public:
  explicit ServeRunDetail(serve::ServingReport report) : report(std::move(report)) {}
  const serve::ServingReport report;
};

// Decode steps simulated when RunOptions::max_decode_steps is −1 (docs/sim.md).
inline constexpr int64_t kDefaultMaxDecodeSteps = 1024;

class SimRunner : public run::Runner {
 public:
  // Fails on an unknown options.allreduce algorithm.
  static StatusOr<std::unique_ptr<SimRunner>> Create(const run::RunOptions& options);
  explicit SimRunner(int64_t max_decode_steps = -1) : max_decode_steps_(max_decode_steps) {}

  std::string_view name() const override { return "sim"; }
  // A served experiment with --decode-steps is an error naming the flag: a
  // served run simulates every token of every request, and has no fixed steps.
  Status Supports(const Experiment& experiment) const override;
  StatusOr<run::RunResult> Run(const Experiment& experiment,
                               const run::RunOptions& options) override;

 private:
  const int64_t max_decode_steps_;  // RunOptions::max_decode_steps at creation (−1: not set)
};

}  // namespace shardscope::runners

#endif  // SHARDSCOPE_RUNNERS_SIM_RUNNER_H_
