// Element types of weights, activations and caches (the compute dtypes), and of
// what the runtime only moves (token ids, timestamps, packed bytes), with their
// sizes and names.
#ifndef SHARDSCOPE_CORE_DTYPE_H_
#define SHARDSCOPE_CORE_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope {

// kFp32 … kInt8: number formats a model computes or stores in (configs name
// them). kInt32, kInt64, kUint8: integer and byte elements of the data plane
// (token ids, clock readings, opaque bytes); never a model's or experiment's dtype.
enum class DType { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kInt32, kInt64, kUint8 };

// Bytes per element (tf32 is stored as fp32).
int64_t DTypeSize(DType dtype);
// "fp32", …, "int8", "int32", "int64", "uint8".
std::string_view DTypeName(DType dtype);
// True for the compute dtypes (fp32, tf32, bf16, fp16, fp8, int8).
bool IsComputeDType(DType dtype);
// A compute dtype by name: "fp32"/"float32", "tf32", "bf16"/"bfloat16",
// "fp16"/"float16", "fp8", "int8". The data-plane names (int32, int64, uint8)
// are refused like any unknown name: no config field means them.
StatusOr<DType> ParseDType(std::string_view name);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_DTYPE_H_
