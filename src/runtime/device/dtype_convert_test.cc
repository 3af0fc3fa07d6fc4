#include "runtime/device/dtype_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace shardscope::runtime {
namespace {

TEST(DTypeConvertTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(1.0f + 0x1.0p-8f)), 1.0f);  // tie → even
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(1.0f + 0x1.8p-8f)), 1.0f + 0x1.0p-7f);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::max()))));
}

TEST(DTypeConvertTest, HalfCoversNormalsSubnormalsAndOverflow) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7bff);    // the largest half
  EXPECT_EQ(FloatToF16(65520.0f), 0x7c00);    // rounds to inf
  EXPECT_EQ(FloatToF16(0x1.0p-24f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToF16(0x1.0p-25f), 0x0000);  // a tie with zero → even
  EXPECT_EQ(FloatToF16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(FloatToF16(0x1.ffcp-15f), 0x0400);  // a tie rounds up into the normals
  EXPECT_EQ(F16ToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(F16ToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(FloatToF16(1.0f + 0x1.0p-11f), 0x3c00);  // tie → even
  EXPECT_EQ(FloatToF16(1.0f + 0x1.8p-11f), 0x3c01);
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::numeric_limits<float>::quiet_NaN()))));
  // Every half survives the round trip through fp32.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = F16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToF16(f), h) << std::hex << h;
  }
}

TEST(DTypeConvertTest, BuffersConvertBothWays) {
  const std::vector<float> v = {0.5f, -1.25f, 3.0f};
  std::vector<uint16_t> h(3);
  std::vector<float> back(3);
  for (DType d : {DType::kBf16, DType::kFp16}) {
    ASSERT_TRUE(FromFloat(v.data(), 3, d, h.data()).ok());
    ASSERT_TRUE(ToFloat(d, h.data(), 3, back.data()).ok());
    EXPECT_EQ(back, v) << DTypeName(d);
  }
  EXPECT_EQ(FromFloat(v.data(), 3, DType::kInt8, h.data()).code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(IsStorageDType(DType::kFp8));
  EXPECT_EQ(RoundTo(DType::kBf16, 3.14159f), 3.140625f);
}

}  // namespace
}  // namespace shardscope::runtime
