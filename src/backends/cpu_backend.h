// The CPU executor as a run backend: real ranks over MPI (backends/cpu_run.h).
// In a build without MPI or OpenBLAS, Supports() says so and Run() fails the
// same way.
#ifndef SHARDSCOPE_BACKENDS_CPU_BACKEND_H_
#define SHARDSCOPE_BACKENDS_CPU_BACKEND_H_

#include <memory>

#include "backends/cpu_run.h"
#include "run/backend.h"

namespace shardscope::backends {

// What only the CPU backend reports: the measured generations and the tokens.
class CpuRunDetail : public run::RunDetail {
 public:
  explicit CpuRunDetail(runtime::CpuRunResult cpu) : cpu(std::move(cpu)) {}
  const runtime::CpuRunResult cpu;
};

class CpuBackend : public run::Backend {
 public:
  // Reads the fault to inject from SHARDSCOPE_FAULT (tests; docs/runtime.md,
  // "Faults"); fails on a malformed one.
  static StatusOr<std::unique_ptr<CpuBackend>> Create(const run::RunOptions& options);
  explicit CpuBackend(runtime::FaultSpec fault) : fault_(std::move(fault)) {}

  std::string_view name() const override { return "cpu"; }
  Status Supports(const Experiment& experiment) const override;
  // Under mpirun this process is one rank: ranks other than 0 return a result
  // with report = false.
  StatusOr<run::RunResult> Run(const Experiment& experiment,
                               const run::RunOptions& options) override;

 private:
  const runtime::FaultSpec fault_;
};

}  // namespace shardscope::backends

#endif  // SHARDSCOPE_BACKENDS_CPU_BACKEND_H_
