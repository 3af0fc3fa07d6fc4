#include "runtime/cpu/cpu_backend.h"

#include "runtime/cpu/cpu_kernels.h"

namespace shardscope::runtime {

std::unique_ptr<Backend> NewCpuBackend() { return NewKernelsBackend("cpu", NewCpuKernels()); }

std::vector<BackendFactory> RegisteredBackends() { return {{"cpu", NewCpuBackend}}; }

}  // namespace shardscope::runtime
