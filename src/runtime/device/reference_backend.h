// The reference backend: plain loops with double accumulation, no library, no
// tuning — the ground truth every backend's ops are compared with
// (cpu/backend_ops_test.cc). Host memory; slow by design.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_REFERENCE_BACKEND_H_
#define SHARDSCOPE_RUNTIME_DEVICE_REFERENCE_BACKEND_H_

#include <memory>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

std::unique_ptr<Backend> NewReferenceBackend();

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_REFERENCE_BACKEND_H_
