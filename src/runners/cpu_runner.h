// The CPU executor as a runner (backend "cpu"): real ranks over MPI (runners/cpu_run.h).
// In a build without MPI or OpenBLAS, Supports() says so and Run() fails the
// same way.
#ifndef SHARDSCOPE_RUNNERS_CPU_RUNNER_H_
#define SHARDSCOPE_RUNNERS_CPU_RUNNER_H_

#include <memory>

#include "run/runner.h"
#include "runners/cpu_run.h"

namespace shardscope::runners {

// What only the CPU backend reports: the measured generations and the tokens.
class CpuRunDetail : public run::RunDetail {
 public:
  explicit CpuRunDetail(runtime::CpuRunResult cpu) : cpu(std::move(cpu)) {}
  const runtime::CpuRunResult cpu;
};

class CpuRunner : public run::Runner {
 public:
  // Reads the fault to inject from SHARDSCOPE_FAULT (tests; docs/runtime.md,
  // "Faults"); fails on a malformed one.
  static StatusOr<std::unique_ptr<CpuRunner>> Create(const run::RunOptions& options);
  explicit CpuRunner(runtime::FaultSpec fault) : fault_(std::move(fault)) {}

  std::string_view name() const override { return "cpu"; }
  Status Supports(const Experiment& experiment) const override;
  // Under mpirun this process is one rank: ranks other than 0 return a result
  // with report = false.
  StatusOr<run::RunResult> Run(const Experiment& experiment,
                               const run::RunOptions& options) override;

 private:
  const runtime::FaultSpec fault_;
};

}  // namespace shardscope::runners

#endif  // SHARDSCOPE_RUNNERS_CPU_RUNNER_H_
