// Creates the runners (run/runner.h) by backend name: "sim" (the simulator)
// and "cpu" (the CPU executor over MPI). "cuda" is known but not built yet
// (issue 14); any other name is an error that lists the known ones. The one
// place that knows which backends this build has.
#ifndef SHARDSCOPE_RUNNERS_REGISTRY_H_
#define SHARDSCOPE_RUNNERS_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "run/runner.h"

namespace shardscope::runners {

// Every backend name the registry knows, in the order of its messages.
const std::vector<std::string_view>& KnownRunners();

// The backend `name` for runs with `options` (which it validates: e.g. the
// simulator's all-reduce algorithm). kUnimplemented for "cuda",
// kInvalidArgument for an unknown name.
StatusOr<std::unique_ptr<run::Runner>> CreateRunner(std::string_view name,
                                                    const run::RunOptions& options);

// Runners by backend name.
using RunnerSet = std::map<std::string, std::unique_ptr<run::Runner>, std::less<>>;

// The runners `experiments` run on — each one's own, or `override` when not
// empty (which then also sets each Experiment::backend) — created once per name
// and checked to support every experiment before any runs. Errors name the
// experiment. What `shardscope run` and Python's run() do first.
StatusOr<RunnerSet> CreateRunnersFor(std::vector<Experiment>* experiments,
                                     std::string_view override, const run::RunOptions& options);

}  // namespace shardscope::runners

#endif  // SHARDSCOPE_RUNNERS_REGISTRY_H_
