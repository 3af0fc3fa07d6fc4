// A runner runs an experiment on one of the user's `backend:` choices and
// returns one RunResult: the simulator ("sim"), the CPU executor over MPI
// ("cpu"), later CUDA. runners/registry.h creates them by backend name. (The
// device-level op interface a runner's ranks compute on is runtime::Backend.)
// Not thread-safe; one Run at a time.
#ifndef SHARDSCOPE_RUN_RUNNER_H_
#define SHARDSCOPE_RUN_RUNNER_H_

#include <string_view>

#include "config/experiment.h"
#include "core/status.h"
#include "run/run_result.h"

namespace shardscope::run {

class Runner {
 public:
  virtual ~Runner() = default;
  // The backend name it runs ("sim", "cpu"), as in Experiment::backend.
  virtual std::string_view name() const = 0;
  // Ok when this build can run `experiment` with this runner; otherwise why not
  // (e.g. kUnimplemented for a backend built without its dependencies).
  virtual Status Supports(const Experiment& experiment) const = 0;
  // Runs `experiment`; writes its trace unless options.write_trace is false.
  virtual StatusOr<RunResult> Run(const Experiment& experiment, const RunOptions& options) = 0;
};

}  // namespace shardscope::run

#endif  // SHARDSCOPE_RUN_RUNNER_H_
