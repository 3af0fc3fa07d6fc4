#include "runtime/device/dtype_convert.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace shardscope::runtime {
float Bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

float F16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant · 2^−24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToBf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

uint16_t FloatToF16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;   // NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;  // ≥ 65520 rounds to infinity
  if (abs < 0x38800000) {                       // below 2^−14: subnormal (or zero)
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: · 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t h = (((abs >> 23) - 112) << 10) | ((abs & 0x7fffff) >> 13);
  const uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent
  return sign | static_cast<uint16_t>(h);
}

bool IsStorageDType(DType dtype) {
  return dtype == DType::kFp32 || dtype == DType::kBf16 || dtype == DType::kFp16;
}

Status ToFloat(DType dtype, const void* src, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kFp32:
      if (src != dst) std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return Status::Ok();
    case DType::kBf16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFloat(s[i]);
      return Status::Ok();
    }
    case DType::kFp16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToFloat(s[i]);
      return Status::Ok();
    }
    case DType::kTf32:
    case DType::kFp8:
    case DType::kInt8:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
      break;
  }
  return Unimplemented("not implemented: {} tensors in the runtime", DTypeName(dtype));
}

Status FromFloat(const float* src, int64_t n, DType dtype, void* dst) {
  switch (dtype) {
    case DType::kFp32:
      if (src != dst) std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return Status::Ok();
    case DType::kBf16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = FloatToBf16(src[i]);
      return Status::Ok();
    }
    case DType::kFp16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = FloatToF16(src[i]);
      return Status::Ok();
    }
    case DType::kTf32:
    case DType::kFp8:
    case DType::kInt8:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
      break;
  }
  return Unimplemented("not implemented: {} tensors in the runtime", DTypeName(dtype));
}

float RoundTo(DType dtype, float f) {
  switch (dtype) {
    case DType::kBf16:
      return Bf16ToFloat(FloatToBf16(f));
    case DType::kFp16:
      return F16ToFloat(FloatToF16(f));
    default:
      return f;
  }
}

}  // namespace shardscope::runtime
