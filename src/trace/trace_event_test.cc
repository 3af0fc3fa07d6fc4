#include "trace/trace_event.h"

#include <gtest/gtest.h>

namespace shardscope::trace {
namespace {

// The analyzer's per-dimension metrics are listed none, tp, pp, sp, dp, ep, as
// before Dim became one enum in mesh order (outputs stay byte-identical).
TEST(TraceEventTest, DimListOrderIsTheReportedOrderAndPositionsInvertIt) {
  std::string names;
  for (size_t i = 0; i < kDimListOrder.size(); ++i) {
    EXPECT_EQ(DimPosition(kDimListOrder[i]), i);
    names += std::string(DimName(kDimListOrder[i])) + ",";
  }
  EXPECT_EQ(names, ",tp,pp,sp,dp,ep,");
}

TEST(TraceEventTest, CategoryNamesRoundTrip) {
  for (Category c : {Category::kCompute, Category::kComm, Category::kOther}) {
    EXPECT_EQ(ParseCategory(CategoryName(c)), c);
  }
  EXPECT_EQ(ParseCategory("gpu"), std::nullopt);
}

}  // namespace
}  // namespace shardscope::trace
