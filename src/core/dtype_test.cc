#include "core/dtype.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

constexpr DType kAll[] = {DType::kFp32, DType::kTf32,  DType::kBf16,  DType::kFp16, DType::kFp8,
                          DType::kInt8, DType::kInt32, DType::kInt64, DType::kUint8};

TEST(DTypeTest, SizesAndNames) {
  const int64_t sizes[] = {4, 4, 2, 2, 1, 1, 4, 8, 1};
  const char* names[] = {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int32", "int64", "uint8"};
  for (size_t i = 0; i < std::size(kAll); ++i) {
    EXPECT_EQ(DTypeSize(kAll[i]), sizes[i]) << names[i];
    EXPECT_EQ(DTypeName(kAll[i]), names[i]);
  }
}

TEST(DTypeTest, ParsesComputeDTypesAndAliases) {
  for (DType d : kAll) {
    if (!IsComputeDType(d)) continue;
    auto parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.ok()) << DTypeName(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(*ParseDType("bfloat16"), DType::kBf16);
  EXPECT_EQ(*ParseDType("float32"), DType::kFp32);
  EXPECT_EQ(*ParseDType("half"), DType::kFp16);
}

// The data-plane element types have names but are no config dtype: a model's
// or experiment's dtype field refuses them as it refuses any unknown name.
TEST(DTypeTest, DataPlaneTypesAreNotParsed) {
  EXPECT_FALSE(IsComputeDType(DType::kInt32));
  EXPECT_FALSE(IsComputeDType(DType::kInt64));
  EXPECT_FALSE(IsComputeDType(DType::kUint8));
  EXPECT_TRUE(IsComputeDType(DType::kInt8));
  for (const char* name : {"int32", "int64", "uint8", "int4", ""}) {
    auto parsed = ParseDType(name);
    ASSERT_FALSE(parsed.ok()) << name;
    EXPECT_EQ(parsed.status().message(), std::string("unknown dtype '") + name +
                                             "' (expected fp32, tf32, bf16, fp16, fp8 or int8)");
  }
}

}  // namespace
}  // namespace shardscope
