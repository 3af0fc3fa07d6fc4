#include "runners/registry.h"

#include <fmt/ranges.h>

#include "runners/cpu_runner.h"
#include "runners/sim_runner.h"

namespace shardscope::runners {

const std::vector<std::string_view>& KnownRunners() {
  static const std::vector<std::string_view> names = {"sim", "cpu", "cuda"};
  return names;
}

StatusOr<std::unique_ptr<run::Runner>> CreateRunner(std::string_view name,
                                                    const run::RunOptions& options) {
  if (name == "sim") {
    ASSIGN_OR_RETURN(std::unique_ptr<SimRunner> b, SimRunner::Create(options));
    return std::unique_ptr<run::Runner>(std::move(b));
  }
  if (name == "cpu") {
    ASSIGN_OR_RETURN(std::unique_ptr<CpuRunner> b, CpuRunner::Create(options));
    return std::unique_ptr<run::Runner>(std::move(b));
  }
  if (name == "cuda") {
    return Unimplemented("backend cuda: built without CUDA backend; see issue 14");
  }
  return InvalidArgument("unknown backend '{}' (known: {})", name, fmt::join(KnownRunners(), ", "));
}

StatusOr<RunnerSet> CreateRunnersFor(std::vector<Experiment>* experiments,
                                     std::string_view override, const run::RunOptions& options) {
  RunnerSet runners;
  for (Experiment& e : *experiments) {
    if (!override.empty()) {
      ASSIGN_OR_RETURN(e.backend, ParseRunnerKind(override));
    }
    const std::string name(RunnerKindName(e.backend));
    if (!runners.contains(name)) {
      auto b = CreateRunner(name, options);
      if (!b.ok()) return b.status().WithPrefix(fmt::format("experiment '{}'", e.name));
      runners[name] = std::move(*b);
    }
    RETURN_IF_ERROR(runners[name]->Supports(e));
  }
  return runners;
}

}  // namespace shardscope::runners
