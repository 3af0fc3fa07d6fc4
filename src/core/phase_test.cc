#include "core/phase.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(PhaseTest, NamesParseBackAndNoneHasNoName) {
  for (Phase p : {Phase::kPrefill, Phase::kDecode}) EXPECT_EQ(ParsePhase(PhaseName(p)), p);
  EXPECT_EQ(PhaseName(Phase::kPrefill), "prefill");
  EXPECT_EQ(PhaseName(Phase::kDecode), "decode");
  EXPECT_EQ(PhaseName(Phase::kNone), "");
  EXPECT_EQ(ParsePhase(""), std::nullopt);
  EXPECT_EQ(ParsePhase("Prefill"), std::nullopt);
}

}  // namespace
}  // namespace shardscope
