// The CPU backend behind the Backend seam: the OpenBLAS kernels (NewCpuKernels)
// computing in fp32, tensors stored in their own dtype in host memory, ops
// timed by the host clock. And the registry of every backend this build has,
// which the op harness walks (cpu/backend_ops_test.cc).
#ifndef SHARDSCOPE_RUNTIME_CPU_CPU_BACKEND_H_
#define SHARDSCOPE_RUNTIME_CPU_CPU_BACKEND_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

// NewCpuBackend() is declared in runtime/device/backend.h.

// The backends of this build by name ("cpu"; a CUDA build adds "cuda"); the
// reference backend is not among them (it is what they are compared with).
struct BackendFactory {
  std::string_view name;
  std::function<std::unique_ptr<Backend>()> create;
};
std::vector<BackendFactory> RegisteredBackends();

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_CPU_CPU_BACKEND_H_
