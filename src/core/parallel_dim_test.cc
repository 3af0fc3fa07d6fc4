#include "core/parallel_dim.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(ParallelDimTest, NamesParseBackInMeshOrder) {
  const char* const kNames[] = {"tp", "sp", "ep", "dp", "pp"};
  for (int i = 0; i < kNumDims; ++i) {
    const Dim d = static_cast<Dim>(i);
    EXPECT_EQ(DimName(d), kNames[i]);
    StatusOr<Dim> parsed = ParseDim(DimName(d));
    ASSERT_TRUE(parsed.ok()) << DimName(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(DimName(Dim::kNone), "");
}

TEST(ParallelDimTest, UnknownDimensionNamesTheChoices) {
  EXPECT_EQ(ParseDim("xp").status().message(),
            "unknown parallelism dimension 'xp' (expected tp, sp, ep, dp or pp)");
  EXPECT_FALSE(ParseDim("").ok());  // kNone has no name to parse
}

}  // namespace
}  // namespace shardscope
