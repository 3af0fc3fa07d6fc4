// The executor on the Backend seam: decode steps take no memory from the
// system (activations from the step arena, KV caches sized for the whole
// generation at prefill), and a second generation on the reused memory gives
// the same tokens.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include "plan/test_experiments.h"
#include "program/program_builder.h"
#include "runtime/local_communicator.h"

namespace shardscope::runtime {
namespace {

std::vector<int32_t> Tokens(const Executor& ex) {
  std::vector<int32_t> t;
  for (const SampleRecord& s : ex.samples()) t.push_back(s.token);
  return t;
}

void ExpectSteadyDecode(const std::string& model) {
  SCOPED_TRACE(model);
  constexpr int64_t kGenerate = 7;
  Experiment e = testing::ZooExperiment(model, "local-cpu", {}, 3, 16, kGenerate);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  auto builder = ProgramBuilder::Create(e, *pl);
  ASSERT_TRUE(builder.ok()) << builder.status().message();
  LocalCommunicator comm;
  std::unique_ptr<Backend> backend = NewCpuBackend();
  auto ex = Executor::Create(e, *pl, backend.get(), &comm);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  Executor& x = **ex;

  ASSERT_TRUE(x.Reset().ok());
  auto prefill = builder->Build(Phase::kPrefill, 0);
  ASSERT_TRUE(prefill.ok());
  ASSERT_TRUE(x.Run(*prefill).ok());
  auto step0 = builder->Build(Phase::kDecode, 0);
  ASSERT_TRUE(step0.ok());
  Status s = x.Run(*step0);
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t after_first = x.system_allocations();
  EXPECT_GT(after_first, 0);
  for (int64_t k = 1; k < kGenerate - 1; ++k) {
    auto step = builder->Build(Phase::kDecode, k);
    ASSERT_TRUE(step.ok());
    s = x.Run(*step);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(x.system_allocations(), after_first) << "decode step " << k;
  }
  const std::vector<int32_t> first = Tokens(x);
  EXPECT_EQ(first.size(), 3u * kGenerate);

  // Another generation on the memory of the first: the same tokens.
  s = RunGeneration(*builder, x);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Tokens(x), first);
}

TEST(ExecutorTest, DecodeStepsAfterTheFirstAllocateNothingDense) {
  ExpectSteadyDecode("tiny-dense");
}

// MoE routing changes the rows each expert gets from step to step; the expert
// buffers are sized for the most that can arrive, so the steps still allocate nothing.
TEST(ExecutorTest, DecodeStepsAfterTheFirstAllocateNothingMoeMla) {
  ExpectSteadyDecode("tiny-moe-mla");
}

}  // namespace
}  // namespace shardscope::runtime
