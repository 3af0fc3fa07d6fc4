#include "core/dtype.h"

namespace shardscope {

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
    case DType::kTf32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp8:
    case DType::kInt8:
      return 1;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

StatusOr<DType> ParseDType(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "float") return DType::kFp32;
  if (name == "tf32") return DType::kTf32;
  if (name == "bf16" || name == "bfloat16") return DType::kBf16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFp16;
  if (name == "fp8" || name == "float8" || name == "fp8_e4m3") return DType::kFp8;
  if (name == "int8") return DType::kInt8;
  return InvalidArgument("unknown dtype '{}' (expected fp32, tf32, bf16, fp16, fp8 or int8)", name);
}

}  // namespace shardscope
