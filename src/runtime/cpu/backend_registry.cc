#include "runtime/cpu/backend_registry.h"

namespace shardscope::runtime {

std::vector<BackendFactory> RegisteredBackends() { return {{"cpu", NewCpuBackend}}; }

}  // namespace shardscope::runtime
