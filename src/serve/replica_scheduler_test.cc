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
  ServedRequest a = Request(0, 6, 2), b = Request(1, 4, 2);
  s.Add(&a);
  s.Add(&b);
  std::vector<ServedRequest*> done;
  // a (6 tokens); b (4) does not fit the 2 left and waits; then both decode.
  EXPECT_EQ(Drain(s, &done), (std::vector<int64_t>{6, 4, 2}));
}

// SGLang's chunked_prefill_size (long_prompts: chunk): a prompt over what is
// left of the budget takes the rest and leads the next iteration with its next
// chunk; the same in iterations of their own and mixed with decodes.
TEST(ReplicaSchedulerTest, LongPromptsSplitIntoTheBudgetLeft) {
  for (const bool mixed : {false, true}) {
    SchedulerSpec spec = Spec(8, 4, /*chunked=*/false);
    spec.long_prompts = LongPrompts::kChunk;
    spec.mix_prompts_with_decodes = mixed;
    ReplicaScheduler s(spec, 100);
    ServedRequest a = Request(0, 20, 2), b = Request(1, 4, 2);
    s.Add(&a);
    s.Add(&b);
    std::vector<ServedRequest*> done;
    // a: 8, 8, then its last 4 beside b's 4 (both first tokens at t = 3);
    // then both decode their second token.
    EXPECT_EQ(Drain(s, &done), (std::vector<int64_t>{8, 8, 8, 2})) << mixed;
    EXPECT_DOUBLE_EQ(a.first_token, 3) << mixed;
    EXPECT_DOUBLE_EQ(b.first_token, 3) << mixed;
    EXPECT_EQ(done.size(), 2u);
    // A short prompt is split too when the batch's rest is short: 6 then 3 + 3 of 5.
    ReplicaScheduler t(spec, 100);
    ServedRequest c = Request(2, 6, 1), d = Request(3, 5, 1);
    t.Add(&c);
    t.Add(&d);
    done.clear();
    EXPECT_EQ(Drain(t, &done), (std::vector<int64_t>{8, 3})) << mixed;
    EXPECT_DOUBLE_EQ(d.first_token, 2) << mixed;
  }
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

// issue 33: TensorRT-LLM's guaranteed-no-evict admission. 6 blocks of 4 tokens;
// A and B (prompt 8, output 9) each cache 16 tokens at most, 4 blocks. Under
// recompute both start and B is preempted when A's 13th token needs a fourth
// block; under guaranteed-no-evict B waits for A's 4 reserved blocks: A
// prefills at t = 1, decodes its 8 more tokens by t = 9, then B runs 10 … 18.
TEST(ReplicaSchedulerTest, GuaranteedNoEvictQueuesWhereRecomputePreempts) {
  for (Admission admission : {Admission::kRecompute, Admission::kGuaranteedNoEvict}) {
    SchedulerSpec spec = Spec(16, 4);
    spec.admission = admission;
    ReplicaScheduler s(spec, 6);
    ServedRequest a = Request(0, 8, 9), b = Request(1, 8, 9);
    s.Add(&a);
    s.Add(&b);
    std::vector<ServedRequest*> done;
    int64_t preempted = 0, max_used = 0, max_reserved = 0;
    double t = 0;
    while (s.HasWork()) {
      Iteration it = s.Schedule();
      preempted += it.preempted;
      max_used = std::max(max_used, s.used_blocks());
      max_reserved = std::max(max_reserved, s.reserved_blocks());
      s.Complete(it, t += 1, nullptr, &done);
    }
    EXPECT_EQ(done.size(), 2u);
    EXPECT_LE(max_used, 6);
    EXPECT_EQ(s.used_blocks(), 0);
    EXPECT_EQ(s.reserved_blocks(), 0);
    if (admission == Admission::kRecompute) {
      EXPECT_GE(preempted, 1);
      EXPECT_GE(b.preemptions, 1);
    } else {
      EXPECT_EQ(preempted, 0);
      EXPECT_EQ(a.preemptions + b.preemptions, 0);
      EXPECT_EQ(max_reserved, 4);  // A's only: B never fit beside it
      EXPECT_DOUBLE_EQ(a.first_token, 1);
      EXPECT_DOUBLE_EQ(a.finish, 9);
      EXPECT_DOUBLE_EQ(b.first_token, 10);
      EXPECT_DOUBLE_EQ(b.finish, 18);
    }
  }
}

// SGLang's new-token-ratio admission: B's prompt fits the free blocks, but not
// beside A's promised output, so B waits for A where recompute admits both and
// preempts.
TEST(ReplicaSchedulerTest, NewTokenRatioAdmissionWaitsWhereRecomputePreempts) {
  for (Admission admission : {Admission::kRecompute, Admission::kNewTokenRatio}) {
    SchedulerSpec spec = Spec(64, 4, /*chunked=*/false);
    spec.admission = admission;
    ReplicaScheduler s(spec, 10);  // 40 tokens
    ServedRequest a = Request(0, 8, 20), b = Request(1, 8, 20);
    s.Add(&a);
    s.Add(&b);
    std::vector<ServedRequest*> done;
    int64_t preempted = 0;
    double t = 0;
    while (s.HasWork()) {
      Iteration it = s.Schedule();
      preempted += it.preempted;
      s.Complete(it, t += 1, nullptr, &done);
    }
    ASSERT_EQ(done.size(), 2u);
    if (admission == Admission::kRecompute) {
      EXPECT_GE(preempted, 1);
      EXPECT_DOUBLE_EQ(b.first_token, 1);  // prefilled with A
    } else {
      // A: 8 + 20 promised of 40; B's 28 never fits beside A's remaining
      // output × ratio (room 32 − 19 × 0.7 < 28 after A's prefill, shrinking).
      EXPECT_EQ(preempted, 0);
      EXPECT_DOUBLE_EQ(a.first_token, 1);
      EXPECT_DOUBLE_EQ(a.finish, 20);
      EXPECT_DOUBLE_EQ(b.first_token, 21);
      EXPECT_DOUBLE_EQ(b.finish, 40);
    }
  }
}

// The ratio decays by (0.7 − 0.098) / 600 per decode iteration, not per
// prefill, and an idle schedule resets it to 0.7.
TEST(ReplicaSchedulerTest, NewTokenRatioDecaysPerDecodeIterationAndResetsWhenIdle) {
  SchedulerSpec spec = Spec(64, 4, /*chunked=*/false);
  spec.admission = Admission::kNewTokenRatio;
  ReplicaScheduler s(spec, 100);
  EXPECT_DOUBLE_EQ(s.new_token_ratio(), 0.7);
  ServedRequest a = Request(0, 4, 11);
  s.Add(&a);
  std::vector<ServedRequest*> done;
  Drain(s, &done);  // one prefill, 10 decode iterations
  ASSERT_EQ(done.size(), 1u);
  EXPECT_NEAR(s.new_token_ratio(), 0.7 - 10 * (0.7 - 0.7 * 0.14) / 600, 1e-12);
  EXPECT_TRUE(s.Schedule().empty());
  EXPECT_DOUBLE_EQ(s.new_token_ratio(), 0.7);
}

// A request whose prompt and output exceed what the ratio leaves still runs
// on an idle replica (it can ever fit), instead of waiting forever.
TEST(ReplicaSchedulerTest, NewTokenRatioAdmitsOnAnIdleReplica) {
  SchedulerSpec spec = Spec(64, 4, /*chunked=*/false);
  spec.admission = Admission::kNewTokenRatio;
  ReplicaScheduler s(spec, 4);  // 16 tokens: 8 + 9 − 1 cached at most
  ServedRequest a = Request(0, 8, 9);
  ASSERT_TRUE(s.CanEverFit(8, 9));
  s.Add(&a);
  std::vector<ServedRequest*> done;
  Drain(s, &done);
  EXPECT_EQ(done.size(), 1u);
  EXPECT_EQ(a.preemptions, 0);
}

// Whole prompts join the decodes (TensorRT-LLM's in-flight batching): B's
// prompt rides along with A's decode; a prompt above the budget left waits.
TEST(ReplicaSchedulerTest, MixesWholePromptsWithDecodes) {
  SchedulerSpec spec = Spec(8, 4, /*chunked=*/false);
  spec.mix_prompts_with_decodes = true;
  ReplicaScheduler s(spec, 100);
  ServedRequest a = Request(0, 6, 3), b = Request(1, 7, 2), c = Request(2, 7, 2);
  s.Add(&a);
  std::vector<ServedRequest*> done;
  Iteration first = s.Schedule();  // A whole
  ASSERT_EQ(first.prefill.size(), 1u);
  EXPECT_EQ(first.prefill[0].second, 6);
  s.Complete(first, 1, nullptr, &done);
  s.Add(&b);
  s.Add(&c);
  Iteration second = s.Schedule();  // A decodes (1 token), B whole (7); C (7) waits
  ASSERT_EQ(second.decode.size(), 1u);
  ASSERT_EQ(second.prefill.size(), 1u);
  EXPECT_EQ(second.prefill[0].first, &b);
  EXPECT_EQ(second.prefill[0].second, 7);
  EXPECT_EQ(s.waiting(), 1);
}

// vLLM 0.6 multi-step, N = 4, without chunked prefill. A (prompt 4, output 3)
// and B (prompt 4, output 6) prefill at t = 1; the next call decodes 4 steps
// ending at 2, 3, 4, 5: A's tokens at 2 and 3 (done; it stops there), B's at
// 2 … 5. C, arriving during that call, waits for its end: it prefills in the
// next call (t = 6); then B and C decode 4 steps from 7 on, each needing one.
TEST(ReplicaSchedulerTest, MultiStepRunsNDecodeStepsPerCall) {
  SchedulerSpec spec = Spec(64, 8, /*chunked=*/false);
  spec.num_scheduler_steps = 4;
  ReplicaScheduler s(spec, 100);
  ServedRequest a = Request(0, 4, 3), b = Request(1, 4, 6), c = Request(2, 4, 2);
  s.Add(&a);
  s.Add(&b);
  std::vector<ServedRequest*> done;
  std::vector<double> itl;
  Iteration prefill = s.Schedule();
  EXPECT_EQ(prefill.steps, 1);
  ASSERT_EQ(prefill.prefill.size(), 2u);
  s.Complete(prefill, 1, &itl, &done);
  Iteration decode = s.Schedule();
  EXPECT_EQ(decode.steps, 4);
  ASSERT_EQ(decode.decode.size(), 2u);
  // Blocks for all four steps up front, capped at each request's last cached token.
  EXPECT_EQ(a.blocks, 2);  // 4 + 3 − 1 = 6 tokens
  EXPECT_EQ(b.blocks, 2);  // 4 + 4 = 8 tokens
  s.Add(&c);               // arrives while the call runs
  const std::vector<double> ends = {2, 3, 4, 5};
  s.Complete(decode, ends, &itl, &done);
  EXPECT_DOUBLE_EQ(a.finish, 3);
  EXPECT_EQ(a.generated, 3);
  EXPECT_EQ(b.generated, 5);
  EXPECT_DOUBLE_EQ(b.last_token, 5);
  EXPECT_EQ(itl, (std::vector<double>{1, 1, 1, 1, 1, 1}));
  ASSERT_EQ(done.size(), 1u);
  Iteration next = s.Schedule();  // C's prefill, alone: prompts first
  EXPECT_EQ(next.steps, 1);
  ASSERT_EQ(next.prefill.size(), 1u);
  EXPECT_EQ(next.prefill[0].first, &c);
  s.Complete(next, 6, &itl, &done);
  EXPECT_DOUBLE_EQ(c.first_token, 6);
  Iteration last = s.Schedule();
  EXPECT_EQ(last.steps, 4);
  s.Complete(last, std::vector<double>{7, 8, 9, 10}, &itl, &done);
  EXPECT_DOUBLE_EQ(b.finish, 7);
  EXPECT_DOUBLE_EQ(c.finish, 7);
  EXPECT_FALSE(s.HasWork());
  EXPECT_EQ(s.used_blocks(), 0);
}

// SGLang's max_running_requests rule, min(T / 2, clamp(T / 8192 × 512, 2048,
// 4096)) over T KV tokens (blocks of 4): T = 400 → 200; T = 8000 → 2048 (the
// clamp's floor); T = 400 000 → 4096 (its ceiling).
TEST(ReplicaSchedulerTest, MaxNumSeqsZeroTakesSglangsRule) {
  SchedulerSpec spec = Spec(64, 0);
  spec.max_model_len = 8192;
  EXPECT_EQ(ReplicaScheduler(spec, 100).max_num_seqs(), 200);
  EXPECT_EQ(ReplicaScheduler(spec, 2000).max_num_seqs(), 2048);
  EXPECT_EQ(ReplicaScheduler(spec, 100'000).max_num_seqs(), 4096);
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
