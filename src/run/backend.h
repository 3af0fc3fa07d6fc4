// A backend runs an experiment and returns one RunResult: the simulator, the
// CPU executor over MPI, later CUDA. backends/registry.h creates them by name.
// Not thread-safe; one Run at a time.
#ifndef SHARDSCOPE_RUN_BACKEND_H_
#define SHARDSCOPE_RUN_BACKEND_H_

#include <string_view>

#include "config/experiment.h"
#include "core/status.h"
#include "run/run_result.h"

namespace shardscope::run {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Ok when this build can run `experiment` on this backend; otherwise why not
  // (e.g. kUnimplemented for a backend built without its dependencies).
  virtual Status Supports(const Experiment& experiment) const = 0;
  // Runs `experiment`; writes its trace unless options.write_trace is false.
  virtual StatusOr<RunResult> Run(const Experiment& experiment, const RunOptions& options) = 0;
};

}  // namespace shardscope::run

#endif  // SHARDSCOPE_RUN_BACKEND_H_
