// Conversions between fp32 and the storage dtypes of the runtime — typed
// tensors (fp32, bf16, fp16) and checkpoint files: round to nearest even, NaN
// kept NaN, overflow to ±inf. Backends that compute in fp32 convert at the
// edges with these; the safetensors reader too. Pure functions.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_DTYPE_CONVERT_H_
#define SHARDSCOPE_RUNTIME_DEVICE_DTYPE_CONVERT_H_

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace shardscope::runtime {

float Bf16ToFloat(uint16_t bits);
float F16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
uint16_t FloatToF16(float value);

// True for the dtypes a typed tensor may store (fp32, bf16, fp16).
bool IsStorageDType(DType dtype);

// n elements of `dtype` at `src` → fp32 at `dst`, and back. Unimplemented for
// dtypes that are not storage dtypes.
Status ToFloat(DType dtype, const void* src, int64_t n, float* dst);
Status FromFloat(const float* src, int64_t n, DType dtype, void* dst);

// The value `f` takes once stored as `dtype` (fp32: itself).
float RoundTo(DType dtype, float f);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_DTYPE_CONVERT_H_
