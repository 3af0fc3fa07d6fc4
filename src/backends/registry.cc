#include "backends/registry.h"

#include <fmt/ranges.h>

#include "backends/cpu_backend.h"
#include "backends/sim_backend.h"

namespace shardscope::backends {

const std::vector<std::string_view>& KnownBackends() {
  static const std::vector<std::string_view> names = {"sim", "cpu", "cuda"};
  return names;
}

StatusOr<std::unique_ptr<run::Backend>> CreateBackend(std::string_view name,
                                                      const run::RunOptions& options) {
  if (name == "sim") {
    ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> b, SimBackend::Create(options));
    return std::unique_ptr<run::Backend>(std::move(b));
  }
  if (name == "cpu") {
    ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> b, CpuBackend::Create(options));
    return std::unique_ptr<run::Backend>(std::move(b));
  }
  if (name == "cuda") {
    return Unimplemented("backend cuda: built without CUDA backend; see issue 14");
  }
  return InvalidArgument("unknown backend '{}' (known: {})", name,
                         fmt::join(KnownBackends(), ", "));
}

StatusOr<BackendSet> CreateBackendsFor(std::vector<Experiment>* experiments,
                                       std::string_view override, const run::RunOptions& options) {
  BackendSet backends;
  for (Experiment& e : *experiments) {
    if (!override.empty()) {
      ASSIGN_OR_RETURN(e.backend, ParseBackend(override));
    }
    const std::string name(BackendName(e.backend));
    if (!backends.contains(name)) {
      auto b = CreateBackend(name, options);
      if (!b.ok()) return b.status().WithPrefix(fmt::format("experiment '{}'", e.name));
      backends[name] = std::move(*b);
    }
    RETURN_IF_ERROR(backends[name]->Supports(e));
  }
  return backends;
}

}  // namespace shardscope::backends
