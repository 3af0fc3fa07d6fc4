#include "serve/replica_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardscope::serve {
namespace {

SchedulerSpec Spec(int64_t budget, int64_t seqs, bool chunked = true) {
  SchedulerSpec s;
  s.max_num_batched_tokens = budget;
  s.max_num_seqs = seqs;
  s.block_size = 4;
  s.chunked_prefill = chunked;
  return s;
}

ServedRequest Request(int64_t id, int64_t prompt, int64_t output) {
  ServedRequest r;
  r.id = id;
  r.prompt = prompt;
  r.output = output;
  return r;
}

// Runs iterations until nothing is left; returns the iterations' token counts.
std::vector<int64_t> Drain(ReplicaScheduler& s, std::vector<ServedRequest*>* finished) {
  std::vector<int64_t> tokens;
  double t = 0;
  while (s.HasWork()) {
    Iteration it = s.Schedule();
    tokens.push_back(it.prefill_tokens() + static_cast<int64_t>(it.decode.size()));
    s.Complete(it, t += 1, nullptr, finished);
  }
  return tokens;
}

TEST(ReplicaSchedulerTest, ChunksPromptsToTheTokenBudgetAndMixesInDecodes) {
  ReplicaScheduler s(Spec(8, 4), 100);
  ServedRequest a = Request(0, 10, 3), b = Request(1, 6, 2);
  s.Add(&a);
  s.Add(&b);
  Iteration first = s.Schedule();  // a's first 8 tokens
  ASSERT_EQ(first.prefill.size(), 1u);
  EXPECT_EQ(first.prefill[0].second, 8);
  std::vector<ServedRequest*> done;
  s.Complete(first, 1, nullptr, &done);
  Iteration second = s.Schedule();  // a's last 2, then 6 of b
  ASSERT_EQ(second.prefill.size(), 2u);
  EXPECT_EQ(second.prefill[0].second, 2);
  EXPECT_EQ(second.prefill[1].second, 6);
  s.Complete(second, 2, nullptr, &done);
  EXPECT_EQ(a.generated, 1);
  EXPECT_EQ(b.generated, 1);
  EXPECT_DOUBLE_EQ(a.first_token, 2);
  Iteration third = s.Schedule();  // both decode
  EXPECT_EQ(third.decode.size(), 2u);
  EXPECT_DOUBLE_EQ(third.decode_context_mean(), (10 + 6) / 2.0);
  s.Complete(third, 3, nullptr, &done);
  ASSERT_EQ(done.size(), 1u);  // b had 2 tokens to give
  EXPECT_EQ(done[0], &b);
  EXPECT_EQ(s.used_blocks(), a.blocks);
}

TEST(ReplicaSchedulerTest, PreemptsTheLatestAdmittedAndRecomputesIt) {
  // 6 blocks of 4 tokens: two 8-token prompts fit, their growth does not.
  ReplicaScheduler s(Spec(64, 4), 6);
  ServedRequest a = Request(0, 8, 8), b = Request(1, 8, 8);
  s.Add(&a);
  s.Add(&b);
  std::vector<ServedRequest*> done;
  std::vector<double> itl;
  double t = 0;
  int64_t preempted = 0;
  while (s.HasWork()) {
    Iteration it = s.Schedule();
    preempted += it.preempted;
    s.Complete(it, t += 1, &itl, &done);
    EXPECT_LE(s.used_blocks(), 6);
  }
  EXPECT_GT(preempted, 0);
  EXPECT_EQ(a.preemptions, 0);  // the first admitted keeps its cache
  EXPECT_GT(b.preemptions, 0);
  EXPECT_EQ(a.generated, 8);
  EXPECT_EQ(b.generated, 8);
  EXPECT_EQ(s.used_blocks(), 0);
  EXPECT_EQ(done.size(), 2u);
}

TEST(ReplicaSchedulerTest, WithoutChunkingPromptsPrefillWholeInIterationsOfTheirOwn) {
  ReplicaScheduler s(Spec(8, 4, /*chunked=*/false), 100);
  ServedRequest a = Request(0, 20, 2), b = Request(1, 4, 2);
  s.Add(&a);
  s.Add(&b);
  std::vector<ServedRequest*> done;
  // a (20 tokens) alone beyond the budget; then b; then both decode.
  EXPECT_EQ(Drain(s, &done), (std::vector<int64_t>{20, 4, 2}));
}

TEST(ReplicaSchedulerTest, MaxNumSeqsLimitsTheRunningSet) {
  ReplicaScheduler s(Spec(1000, 2), 100);
  std::vector<ServedRequest> r = {Request(0, 4, 3), Request(1, 4, 3), Request(2, 4, 3)};
  for (ServedRequest& x : r) s.Add(&x);
  Iteration it = s.Schedule();
  EXPECT_EQ(it.prefill.size(), 2u);
  EXPECT_EQ(s.waiting(), 1);
}

TEST(ReplicaSchedulerTest, PrefillOnlyInstancesReleaseAfterTheFirstToken) {
  ReplicaScheduler s(Spec(64, 4), 100, /*prefill_only=*/true);
  ServedRequest a = Request(0, 8, 5);
  s.Add(&a);
  std::vector<ServedRequest*> done;
  Iteration it = s.Schedule();
  s.Complete(it, 1, nullptr, &done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(a.generated, 1);
  EXPECT_FALSE(a.done());
  EXPECT_FALSE(s.HasWork());
  EXPECT_EQ(s.used_blocks(), 0);
  // A decode instance takes it with its cache and decodes at once.
  ReplicaScheduler d(Spec(64, 4), 100);
  a.blocks = 0;
  d.AddWithCache(&a);
  Iteration step = d.Schedule();
  EXPECT_TRUE(step.prefill.empty());
  ASSERT_EQ(step.decode.size(), 1u);
  EXPECT_EQ(d.used_blocks(), d.BlocksFor(9));
}

TEST(ReplicaSchedulerTest, CanEverFitCountsTheCachedTokens) {
  ReplicaScheduler s(Spec(64, 4), 3);  // 12 tokens
  EXPECT_TRUE(s.CanEverFit(8, 5));     // 12 cached at most
  EXPECT_FALSE(s.CanEverFit(8, 6));
}

// Speculative decoding at 1.75 expected tokens per step (k = 1 draft: 2
// verify tokens per step), deterministic-fractional: after a prefill that yields
// token 1, the steps emit ⌊credit⌋ of a credit growing by 1.75 each step:
// 1 (.75 left), 2 (.5), 2 (.25), 2 (0) → 8 tokens after 4 steps, the last
// clamped to the output. Tokens of one step arrive together: ITL 0 between them.
TEST(ReplicaSchedulerTest, SpeculativeStepsEmitTheExpectedTokensWithCarriedFractions) {
  ReplicaScheduler s(Spec(64, 4), 100);
  s.SetSpeculative(1.75, 2);
  ServedRequest a = Request(0, 8, 9);
  s.Add(&a);
  std::vector<ServedRequest*> done;
  std::vector<double> itl;
  std::vector<int64_t> generated;
  for (double t = 1; s.HasWork(); t += 1) {
    Iteration it = s.Schedule();
    if (!it.decode.empty()) {
      EXPECT_EQ(it.prefill_tokens(), 0);
      EXPECT_LE(a.blocks * 4, 8 + 9);  // KV for the verified tokens, never past the request
    }
    s.Complete(it, t, &itl, &done);
    generated.push_back(a.generated);
  }
  EXPECT_EQ(generated, (std::vector<int64_t>{1, 2, 4, 6, 8, 9}));
  EXPECT_EQ(itl, (std::vector<double>{1, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(a.computed, 8 + 8);  // the last token is sampled, never fed back
  ASSERT_EQ(done.size(), 1u);
  EXPECT_DOUBLE_EQ(a.finish, 6);
}

}  // namespace
}  // namespace shardscope::serve
