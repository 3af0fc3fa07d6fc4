// Numeric element types of weights, activations and caches, and their sizes.
#ifndef SHARDSCOPE_CORE_DTYPE_H_
#define SHARDSCOPE_CORE_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope {

enum class DType { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };

// Bytes per element (tf32 is stored as fp32).
int64_t DTypeSize(DType dtype);
std::string_view DTypeName(DType dtype);
// Accepts "fp32"/"float32", "tf32", "bf16"/"bfloat16", "fp16"/"float16", "fp8", "int8".
StatusOr<DType> ParseDType(std::string_view name);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_DTYPE_H_
