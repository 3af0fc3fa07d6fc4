// The registry of every compute backend this build has, which the op harness
// (cpu/backend_ops_test.cc) and bench/backend_ops_bench walk. It lives beside
// the CPU backend, today the only one.
#ifndef SHARDSCOPE_RUNTIME_CPU_BACKEND_REGISTRY_H_
#define SHARDSCOPE_RUNTIME_CPU_BACKEND_REGISTRY_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

// The backends of this build by name ("cpu"; a CUDA build adds "cuda"); the
// reference backend is not among them (it is what they are compared with).
struct BackendFactory {
  std::string_view name;
  std::function<std::unique_ptr<Backend>()> create;
};
std::vector<BackendFactory> RegisteredBackends();

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_CPU_BACKEND_REGISTRY_H_
