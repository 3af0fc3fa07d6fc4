#include "core/dtype.h"

#include <optional>

#include "core/enum_names.h"

namespace shardscope {
namespace {

// The names in enum order first, then the aliases the parser accepts.
constexpr auto kDTypeNames = MakeEnumNames<DType>({{DType::kFp32, "fp32"},
                                                   {DType::kTf32, "tf32"},
                                                   {DType::kBf16, "bf16"},
                                                   {DType::kFp16, "fp16"},
                                                   {DType::kFp8, "fp8"},
                                                   {DType::kInt8, "int8"},
                                                   {DType::kInt32, "int32"},
                                                   {DType::kInt64, "int64"},
                                                   {DType::kUint8, "uint8"},
                                                   {DType::kFp32, "float32"},
                                                   {DType::kFp32, "float"},
                                                   {DType::kBf16, "bfloat16"},
                                                   {DType::kFp16, "float16"},
                                                   {DType::kFp16, "half"},
                                                   {DType::kFp8, "float8"},
                                                   {DType::kFp8, "fp8_e4m3"}});

}  // namespace

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kInt64:
      return 8;
    case DType::kFp32:
    case DType::kTf32:
    case DType::kInt32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp8:
    case DType::kInt8:
    case DType::kUint8:
      return 1;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) { return kDTypeNames.Name(dtype); }

bool IsComputeDType(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
    case DType::kTf32:
    case DType::kBf16:
    case DType::kFp16:
    case DType::kFp8:
    case DType::kInt8:
      return true;
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
      return false;
  }
  return false;
}

StatusOr<DType> ParseDType(std::string_view name) {
  std::optional<DType> dtype = kDTypeNames.Parse(name);
  if (dtype && IsComputeDType(*dtype)) return *dtype;
  return InvalidArgument("unknown dtype '{}' (expected fp32, tf32, bf16, fp16, fp8 or int8)", name);
}

}  // namespace shardscope
