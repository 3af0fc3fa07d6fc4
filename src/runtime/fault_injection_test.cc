// Fault specs: parsing (and its errors), matching an op, and each mode's effect.
#include "runtime/fault_injection.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <stdexcept>

namespace shardscope::runtime {
namespace {

Op AttentionOp(int32_t id, int32_t layer) {
  Op op;
  op.id = id;
  op.kind = OpKind::kAttention;
  op.layer = layer;
  return op;
}

TEST(FaultSpecTest, ParsesNamesIdsPhasesAndModes) {
  auto by_name = ParseFaultSpec("rank=1,op=L1.attention,mode=kill");
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(by_name->rank, 1);
  EXPECT_EQ(by_name->op, "L1.attention");
  EXPECT_EQ(by_name->op_id, -1);
  EXPECT_EQ(by_name->phase_index, -1);
  EXPECT_EQ(by_name->mode, FaultMode::kKill);

  auto by_id = ParseFaultSpec("op=17,rank=0,phase=decode:2");
  ASSERT_TRUE(by_id.ok()) << by_id.status().message();
  EXPECT_EQ(by_id->op_id, 17);
  EXPECT_EQ(by_id->phase_index, 3);  // decode step 2
  EXPECT_EQ(by_id->mode, FaultMode::kError);
  EXPECT_EQ(FaultSpecToString(*by_id), "rank=0,op=17,phase=decode:2,mode=error");

  auto prefill = ParseFaultSpec("rank=2,op=embedding,phase=prefill,mode=throw");
  ASSERT_TRUE(prefill.ok());
  EXPECT_EQ(prefill->phase_index, 0);
  EXPECT_EQ(FaultSpecToString(*prefill), "rank=2,op=embedding,phase=prefill,mode=throw");

  auto none = ParseFaultSpec("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->active());
  EXPECT_EQ(FaultSpecToString(*none), "");
}

TEST(FaultSpecTest, MalformedSpecsNameTheVariableAndTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"rank=1", "fields 'rank' and 'op' are required"},
      {"rank=x,op=1", "field 'rank': expected a non-negative integer, got 'x'"},
      {"rank=1,op=2,mode=explode",
       "field 'mode': expected one of error, throw, exit, abort, kill, hang"},
      {"rank=1,op=2,phase=decode", "field 'phase': expected prefill or decode:K"},
      {"rank=1,op=2,when=now", "unknown field 'when'"},
      {"rank=1,op", "expected key=value, got 'op'"},
  };
  for (const auto& [text, expected] : cases) {
    auto s = ParseFaultSpec(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(s.status().message().find("SHARDSCOPE_FAULT"), std::string::npos) << text;
    EXPECT_NE(s.status().message().find(expected), std::string::npos) << s.status().message();
  }
}

TEST(FaultSpecTest, MatchesTheRankTheOpAndThePhase) {
  auto spec = ParseFaultSpec("rank=1,op=L1.attention,phase=prefill");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->Matches(1, 0, AttentionOp(5, 1)));
  EXPECT_FALSE(spec->Matches(0, 0, AttentionOp(5, 1)));  // another rank
  EXPECT_FALSE(spec->Matches(1, 1, AttentionOp(5, 1)));  // decode step 0
  EXPECT_FALSE(spec->Matches(1, 0, AttentionOp(5, 0)));  // L0.attention
  auto by_id = ParseFaultSpec("rank=1,op=5");
  ASSERT_TRUE(by_id.ok());
  EXPECT_TRUE(by_id->Matches(1, 4, AttentionOp(5, 0)));  // any phase
  EXPECT_FALSE(by_id->Matches(1, 0, AttentionOp(6, 0)));
}

TEST(FaultSpecTest, EachModeFailsItsWay) {
  FaultSpec spec;
  spec.rank = 0;
  spec.mode = FaultMode::kError;
  EXPECT_EQ(InjectFault(spec).message(), "injected fault");
  spec.mode = FaultMode::kThrow;
  EXPECT_THROW((void)InjectFault(spec), std::runtime_error);
  spec.mode = FaultMode::kExit;
  EXPECT_EXIT((void)InjectFault(spec), ::testing::ExitedWithCode(3), "");
  spec.mode = FaultMode::kAbort;
  EXPECT_EXIT((void)InjectFault(spec), ::testing::KilledBySignal(SIGABRT), "");
  spec.mode = FaultMode::kKill;
  EXPECT_EXIT((void)InjectFault(spec), ::testing::KilledBySignal(SIGKILL), "");
}

}  // namespace
}  // namespace shardscope::runtime
