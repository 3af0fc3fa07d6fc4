#include "serve/serving_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "analysis/analyzer.h"
#include "config/engine_profile.h"
#include "config/experiment_loader.h"
#include "plan/test_experiments.h"
#include "serve/iteration_cost.h"
#include "sim/simulator.h"
#include "testing/scratch_dir.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace shardscope::serve {
namespace {

using shardscope::testing::ZooExperiment;

ParallelSpec Tp(int64_t tp, int64_t dp = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.dp = dp;
  p.strategy = "test";
  return p;
}

LengthDist Fixed(int64_t n) {
  LengthDist d;
  d.value = d.min = d.max = n;
  return d;
}

// Llama-3.1-8B at TP2 on H100s, served with `arrivals`.
Experiment Served(ArrivalSpec arrivals, int64_t prompt, int64_t output, int64_t requests,
                  int64_t dp = 1) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Tp(2, dp), dp, prompt, output);
  ServingSpec s;
  s.arrivals = std::move(arrivals);
  s.prompt_tokens = Fixed(prompt);
  s.output_tokens = Fixed(output);
  s.requests = requests;
  s.scheduler.grid_points_per_octave = 0;  // every shape exact
  e.serving = s;
  return e;
}

ArrivalSpec Poisson(double rate) {
  ArrivalSpec a;
  a.process = ArrivalProcess::kPoisson;
  a.rate = rate;
  return a;
}

ServeOptions Options() {
  ServeOptions o;
  o.sim.write_trace = false;
  o.keep_requests = true;
  return o;
}

// A trace file in this process's scratch dir, and Options() writing it.
std::string TracePath(const std::string& prefix) {
  static testing::ScratchDir scratch("serving_simulator_test");
  return scratch.File(prefix + ".trace");
}
ServeOptions TracedOptions(const std::string& path) {
  ServeOptions o = Options();
  o.sim.write_trace = true;
  o.sim.trace_file = path;
  return o;
}

sim::SimResult FixedBatch(const Experiment& served, int64_t batch, int64_t prompt, int64_t output) {
  Experiment e = served;
  e.serving.reset();
  e.workload.batch_size = batch;
  e.workload.sequence_length = prompt;
  e.workload.tokens_to_generate = output;
  sim::SimOptions o;
  o.write_trace = false;
  auto r = sim::SimulateExperiment(e, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : sim::SimResult{};
}

// As the arrival rate goes to 0 no request waits or shares an iteration, so
// each one's TTFT and TPOT are the fixed-batch batch-1 figures.
TEST(ServingSimulatorTest, RateToZeroGivesBatchOneTtftAndTpot) {
  const Experiment e = Served(Poisson(0.01), 512, 8, 12);
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::SimResult one = FixedBatch(e, 1, 512, 8);
  ASSERT_GT(one.tpot, 0);
  ASSERT_EQ(r->requests.size(), 12u);
  for (const ServedRequest& q : r->requests) {
    EXPECT_DOUBLE_EQ(q.first_scheduled, q.arrival);
    EXPECT_NEAR(q.first_token - q.arrival, one.ttft, 1e-9 * one.ttft) << q.id;
    EXPECT_NEAR((q.finish - q.first_token) / 7, one.tpot, 1e-9 * one.tpot) << q.id;
  }
  EXPECT_EQ(r->metrics.max_batch, 1);
  EXPECT_NEAR(r->metrics.queueing.max, 0, 1e-12);
}

// Draft-target speculative decoding served: a Llama-3.2-1B draft beside the
// Llama-3.1-8B target, k = 2 at acceptance 1 (3 tokens per step). At a rate
// near 0 each request's TTFT (the target's and the draft's prefill) and TPOT
// (two steps of 2 draft passes + a 3-token verify for its 6 decode tokens) are
// the fixed batch's; its KV blocks hold the draft's KV beside the target's, so
// the pool has fewer blocks; a disaggregated deployment moves both caches.
TEST(ServingSimulatorTest, DraftModelServedAsTheFixedBatch) {
  Experiment e = Served(Poisson(0.01), 512, 7, 4);
  e.speculative.method = SpeculativeMethod::kDraft;
  e.speculative.draft_tokens = 2;
  e.speculative.acceptance = {1.0, 1.0};
  auto draft = LoadZooModel("llama-3.2-1b", DefaultModelsDir());
  ASSERT_TRUE(draft.ok());
  e.speculative.draft_model = *draft;
  e.speculative.draft_tp = 2;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::SimResult one = FixedBatch(e, 1, 512, 7);
  Experiment plain = e;
  plain.speculative = {};
  const sim::SimResult target = FixedBatch(plain, 1, 512, 7);
  EXPECT_GT(one.ttft, target.ttft);  // the draft's prefill
  EXPECT_EQ(one.decode_steps, 2);
  ASSERT_EQ(r->requests.size(), 4u);
  for (const ServedRequest& q : r->requests) {
    EXPECT_EQ(q.generated, 7);
    EXPECT_NEAR(q.first_token - q.arrival, one.ttft, 1e-9 * one.ttft) << q.id;
    EXPECT_NEAR((q.finish - q.first_token) / 6, one.tpot, 1e-9 * one.tpot) << q.id;
  }
  auto without = SimulateServing(plain, Options());
  ASSERT_TRUE(without.ok());
  // Per token and tp rank: the target's 128 KiB / 2 and the draft's 32 KiB / 2.
  EXPECT_DOUBLE_EQ(without->kv.bytes_per_token, 64.0 * 1024);
  EXPECT_DOUBLE_EQ(r->kv.bytes_per_token, 80.0 * 1024);
  EXPECT_LT(r->kv.blocks, without->kv.blocks);
  EXPECT_DOUBLE_EQ(ModelKvBytesPerToken(e), (128.0 + 32.0) * 1024);
}

// The calibration's serving terms at a rate near 0 (no request waits): each
// request's TTFT is the fixed batch's (with the same iteration overhead) plus
// the request overhead, its E2E adds the response overhead, TPOT neither; the
// cold start falls on the replica's first iteration only. Under CUDA graphs
// the decode steps are the fixed batch's too (both replay).
TEST(ServingSimulatorTest, CalibratedServingTermsAtRateZero) {
  testing::ScratchDir scratch;
  const std::string path = scratch.File("serving_terms.yaml");
  std::ofstream(path) << "request_overhead_us: 3000\nresponse_overhead_us: 700\n"
                         "iteration_overhead_us: 40\ncold_start_us: 90000\n"
                         "cuda_graphs: true\ngraph_replay_us: 9\n";
  const Experiment e = Served(Poisson(0.01), 512, 8, 6);
  ServeOptions o = Options();
  o.sim.calibration_file = path;
  auto r = SimulateServing(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Experiment one = e;
  one.serving.reset();
  one.workload.batch_size = 1;
  one.workload.sequence_length = 512;
  one.workload.tokens_to_generate = 8;
  sim::SimOptions so;
  so.write_trace = false;
  so.calibration_file = path;
  auto fixed = sim::SimulateExperiment(one, so);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  const double cold = 0.09;
  ASSERT_EQ(r->requests.size(), 6u);
  for (const ServedRequest& q : r->requests) {
    const double first = q.id == 0 ? 0 : cold;  // the fixed batch's TTFT has the cold start
    EXPECT_NEAR(q.first_scheduled - q.arrival, 3e-3, 1e-9) << q.id;
    EXPECT_NEAR(q.first_token - q.arrival, 3e-3 + fixed->ttft - first, 1e-9) << q.id;
    EXPECT_NEAR((q.last_token - q.first_token) / 7, fixed->tpot, 1e-9 * fixed->tpot) << q.id;
    EXPECT_NEAR(q.finish - q.last_token, 7e-4, 1e-12) << q.id;
  }
  EXPECT_NEAR(r->metrics.tpot.max, fixed->tpot, 1e-9 * fixed->tpot);
  EXPECT_EQ(r->terms.size(), 5u);
  // The same without the terms: every figure smaller.
  auto plain = SimulateServing(e, Options());
  ASSERT_TRUE(plain.ok());
  EXPECT_LT(plain->metrics.ttft.max, r->metrics.ttft.max - 3e-3);
  EXPECT_LT(plain->metrics.e2e.mean, r->metrics.e2e.mean - 3.7e-3);
  EXPECT_TRUE(plain->terms.empty());
}

// issue 33: requests whose first sampled token is EOS (0 output tokens) still
// prefill: their TTFT is a 1-output request's, their response follows the
// first token by the response overhead, and they have no TPOT (nor a gap).
// The per-request rows say the same, null where a figure does not exist.
TEST(ServingSimulatorTest, EosFirstRequestsPrefillAndHaveNoTpot) {
  testing::ScratchDir scratch;
  const std::string path = scratch.File("eos_terms.yaml");
  std::ofstream(path) << "response_overhead_us: 700\n";
  ArrivalSpec file;
  file.process = ArrivalProcess::kFile;
  file.file_requests = {{0, 512, 0}, {1, 512, 8}, {2, 512, 0}};
  const Experiment e = Served(file, 512, 8, 0);
  ServeOptions o = Options();
  o.sim.calibration_file = path;
  auto r = SimulateServing(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 3u);
  const ServedRequest& eos = r->requests[0];
  const ServedRequest& full = r->requests[1];
  EXPECT_FALSE(eos.rejected);
  EXPECT_GT(eos.first_token, eos.arrival);
  // The same prompt, alone on the replica: the same prefill (the first
  // request also pays nothing else: no cold start in this calibration).
  EXPECT_NEAR(eos.first_token - eos.arrival, full.first_token - full.arrival, 1e-12);
  EXPECT_DOUBLE_EQ(eos.last_token, eos.first_token);
  EXPECT_NEAR(eos.finish - eos.first_token, 7e-4, 1e-12);
  EXPECT_EQ(r->metrics.measured, 3);
  EXPECT_EQ(r->metrics.ttft.count, 3);
  EXPECT_EQ(r->metrics.tpot.count, 1);  // only the 8-token request
  EXPECT_EQ(r->metrics.itl.count, 7);
  EXPECT_NEAR(r->metrics.output_tokens_per_s * r->metrics.duration, 8, 1e-9);

  const nlohmann::json rows = RequestRowsJson(r->requests);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["output_tokens"], 0);
  EXPECT_TRUE(rows[0]["tpot_s"].is_null());
  EXPECT_TRUE(rows[0]["kv_arrival_s"].is_null());
  EXPECT_DOUBLE_EQ(rows[0]["ttft_s"].get<double>(), eos.first_token - eos.arrival);
  EXPECT_DOUBLE_EQ(rows[0]["e2e_latency_s"].get<double>(), eos.finish - eos.arrival);
  EXPECT_DOUBLE_EQ(rows[1]["tpot_s"].get<double>(), (full.last_token - full.first_token) / 7);
  EXPECT_EQ(rows[1]["warmup"], false);
  EXPECT_EQ(rows[1]["rejected"], false);
}

// issue 33: a decode-only study. Two requests arrive together, each with a
// context of 1000 tokens already in its KV cache (⌈1000 / 16⌉ = 63 blocks) and
// 4 tokens to decode (at most ⌈1003 / 16⌉ = 63 blocks). With 100 blocks only one
// fits: the second is admitted when the first finishes. Nothing is prefilled,
// the first token comes from the first decode step, and there is no TTFT.
TEST(ServingSimulatorTest, DecodeOnlyRequestsHoldTheirContextAndNeverPrefill) {
  ArrivalSpec file;
  file.process = ArrivalProcess::kFile;
  file.file_requests = {{0, 1000, 4}, {0, 1000, 4}};
  Experiment e = Served(file, 1000, 4, 0);
  e.serving->decode_only = true;
  e.serving->scheduler.kv_blocks = 100;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 2u);
  for (int64_t tokens : r->iteration_prefill_tokens) EXPECT_EQ(tokens, 0);
  ASSERT_EQ(r->iteration_seconds.size(), 8u);  // 4 decode steps each, one at a time
  const ServedRequest& a = r->requests[0];
  const ServedRequest& b = r->requests[1];
  EXPECT_DOUBLE_EQ(a.first_scheduled, 0);
  EXPECT_NEAR(a.first_token, r->iteration_seconds[0], 1e-12);
  EXPECT_DOUBLE_EQ(b.first_scheduled, a.finish);  // waited for a's 63 blocks
  EXPECT_DOUBLE_EQ(r->metrics.max_kv_occupancy, 63.0 / 100);
  EXPECT_EQ(r->metrics.ttft.count, 0);
  EXPECT_EQ(r->metrics.tpot.count, 2);
  EXPECT_NEAR(a.last_token - a.first_token,
              r->iteration_seconds[1] + r->iteration_seconds[2] + r->iteration_seconds[3], 1e-12);
  EXPECT_DOUBLE_EQ(r->metrics.prompt_tokens_per_s, 0);  // no prompt was prefilled
  const nlohmann::json rows = RequestRowsJson(r->requests);
  EXPECT_TRUE(rows[0]["ttft_s"].is_null());
  EXPECT_EQ(rows[0]["decode_only"], true);
  EXPECT_DOUBLE_EQ(rows[1]["queueing_delay_s"].get<double>(), a.finish);
  // Decode steps at the same contexts cost what a fixed batch's do.
  const sim::SimResult one = FixedBatch(e, 1, 1000, 4);
  EXPECT_GT(r->iteration_seconds[0], 0.5 * one.tpot);
  EXPECT_LT(r->iteration_seconds[0], 1.5 * one.tpot);
}

// issue 33: prefix caching. A 1024-token prompt at hit rate 0.5 finds 512
// tokens cached: its one prefill iteration computes the other 512, attending
// over the cached 512 — exactly the second chunk of the same prompt without a
// cache, chunked at 512 tokens. Its KV cache holds every token all the same.
TEST(ServingSimulatorTest, PrefixCacheHitsSkipComputeNotMemory) {
  EXPECT_EQ(CachedPrefixTokens(1024, 0.5, 16), 512);
  EXPECT_EQ(CachedPrefixTokens(1000, 0.5, 16), 496);  // whole blocks: ⌊500 / 16⌋ × 16
  EXPECT_EQ(CachedPrefixTokens(32, 1.0, 16), 16);     // at most prompt − 1 = 31 → 16
  EXPECT_EQ(CachedPrefixTokens(1024, 0, 16), 0);
  Experiment cached = Served(Poisson(0.01), 1024, 4, 3);
  cached.serving->prefix_cache_hit_rate = 0.5;
  Experiment chunked = Served(Poisson(0.01), 1024, 4, 3);
  chunked.serving->scheduler.max_num_batched_tokens = 512;
  auto c = SimulateServing(cached, Options());
  auto u = SimulateServing(chunked, Options());
  ASSERT_TRUE(c.ok() && u.ok());
  ASSERT_EQ(c->iteration_prefill_tokens[0], 512);
  ASSERT_EQ(u->iteration_prefill_tokens[0], 512);
  ASSERT_EQ(u->iteration_prefill_tokens[1], 512);
  EXPECT_NEAR(c->iteration_seconds[0], u->iteration_seconds[1], 1e-12);
  const ServedRequest& q = c->requests[0];
  EXPECT_EQ(q.cached, 512);
  EXPECT_NEAR(q.first_token - q.arrival, c->iteration_seconds[0], 1e-12);
  EXPECT_NEAR(u->requests[0].first_token - u->requests[0].arrival,
              u->iteration_seconds[0] + u->iteration_seconds[1], 1e-12);
  // KV memory: ⌈(1024 + 4 − 1) / 16⌉ = 65 blocks at the peak, cache or not.
  EXPECT_NEAR(c->metrics.max_kv_occupancy * static_cast<double>(c->kv.blocks), 65, 1e-9);
  EXPECT_NEAR(u->metrics.max_kv_occupancy * static_cast<double>(u->kv.blocks), 65, 1e-9);
}

// A closed loop of one: the next request arrives when the previous response is
// sent, after its last token and the response overhead; arrivals stay in order.
TEST(ServingSimulatorTest, ClosedLoopRefillsAfterTheResponseOverhead) {
  testing::ScratchDir scratch;
  const std::string path = scratch.File("response_terms.yaml");
  std::ofstream(path) << "response_overhead_us: 500\nrequest_overhead_us: 200\n";
  ArrivalSpec loop;
  loop.process = ArrivalProcess::kClosedLoop;
  loop.concurrency = 1;
  const Experiment e = Served(loop, 256, 4, 5);
  ServeOptions o = Options();
  o.sim.calibration_file = path;
  auto r = SimulateServing(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 5u);
  for (size_t i = 0; i < r->requests.size(); ++i) {
    const ServedRequest& q = r->requests[i];
    EXPECT_NEAR(q.finish - q.last_token, 5e-4, 1e-12) << i;
    EXPECT_NEAR(q.first_scheduled - q.arrival, 2e-4, 1e-12) << i;
    if (i > 0) {
      EXPECT_DOUBLE_EQ(q.arrival, r->requests[i - 1].finish) << i;
    }
  }
}

// A closed loop's refill cannot join the iteration launched at the instant its
// predecessor finished: the engine starts that iteration at once (TensorRT-LLM's
// executionLoop: forwardSync, responses out, fetchNewRequests, forwardAsync),
// while the last token still has to reach the client and the new request come
// back. Concurrency 2, 256-token prompts, 3 output tokens, a 300-token budget
// (one prompt per iteration, decodes beside it), whole prompts mixed with the
// decodes (TensorRT-LLM's in-flight batching). By hand:
//   it 0: prefill r0                    → r0's first token
//   it 1: prefill r1 + decode r0        → r1's first token
//   it 2: decode r0, r1                 → r0 done at its end; r2 arrives then
//   it 3: decode r1 (launched before r2 reached the engine) → r1 done
//   it 4: prefill r2                    → r2's first token
//   it 5, 6: decode r2                  → r2 done
// so r2 waits for iteration 3 and its TTFT is iterations 3 + 4. Before the
// rule r2 joined iteration 3 (prefill r2 + decode r1), a TTFT of one iteration.
// An idle engine takes a refill at once (concurrency 1: no wait).
TEST(ServingSimulatorTest, ClosedLoopRefillWaitsForTheIterationAlreadyLaunched) {
  ArrivalSpec loop;
  loop.process = ArrivalProcess::kClosedLoop;
  loop.concurrency = 2;
  Experiment e = Served(loop, 256, 3, 3);
  e.serving->scheduler.max_num_batched_tokens = 300;
  e.serving->scheduler.chunked_prefill = false;
  e.serving->scheduler.mix_prompts_with_decodes = true;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 3u);
  const std::vector<int64_t> prefill_tokens = {256, 256, 0, 0, 256, 0, 0};
  EXPECT_EQ(r->iteration_prefill_tokens, prefill_tokens);
  ASSERT_EQ(r->iteration_seconds.size(), 7u);
  std::vector<double> end(7);
  for (size_t i = 0; i < 7; ++i) end[i] = (i ? end[i - 1] : 0) + r->iteration_seconds[i];
  const ServedRequest &r0 = r->requests[0], &r1 = r->requests[1], &r2 = r->requests[2];
  EXPECT_NEAR(r0.finish, end[2], 1e-12);
  EXPECT_NEAR(r1.finish, end[3], 1e-12);
  EXPECT_DOUBLE_EQ(r2.arrival, r0.finish);
  EXPECT_NEAR(r2.first_scheduled, end[3], 1e-12);
  EXPECT_NEAR(r2.first_token - r2.arrival, r->iteration_seconds[3] + r->iteration_seconds[4],
              1e-12);
  EXPECT_NEAR(r2.finish, end[6], 1e-12);

  // Concurrency 1: each refill finds the engine idle and starts at its arrival.
  loop.concurrency = 1;
  e.serving->arrivals = loop;
  auto one = SimulateServing(e, Options());
  ASSERT_TRUE(one.ok()) << one.status().message();
  for (size_t i = 1; i < one->requests.size(); ++i) {
    const ServedRequest& q = one->requests[i];
    EXPECT_DOUBLE_EQ(q.arrival, one->requests[i - 1].finish) << i;
    EXPECT_DOUBLE_EQ(q.first_scheduled, q.arrival) << i;
  }
}

// Overlap scheduling (SGLang's event_loop_overlap): the engine launches
// iteration N + 1 before it takes in the requests that arrived while N ran.
// A (256 → 8 tokens) arrives at 0 on an idle replica: prefill I0, decodes
// I1 … I7 (prefill and decode iterations apart, as SGLang's default). B
// arrives in the middle of I2: without overlap it is prefilled in I3, with it
// in I4 (I3 decodes A alone). C arrives long after A and B have left, on an
// idle replica: it is launched at its arrival either way.
TEST(ServingSimulatorTest, OverlapScheduleTakesAnArrivalIntoTheIterationAfterTheNext) {
  ArrivalSpec file;
  file.process = ArrivalProcess::kFile;
  file.file_requests = {{0, 256, 8}};
  Experiment e = Served(file, 256, 8, 0);
  e.serving->scheduler.chunked_prefill = false;
  e.serving->scheduler.max_num_batched_tokens = 512;
  auto alone = SimulateServing(e, Options());
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  ASSERT_EQ(alone->iteration_seconds.size(), 8u);
  std::vector<double> end(8);
  for (size_t i = 0; i < 8; ++i) end[i] = (i ? end[i - 1] : 0) + alone->iteration_seconds[i];
  const double b_arrival = end[1] + 0.5 * alone->iteration_seconds[2];
  const double c_arrival = 10;  // seconds: the replica is idle long before
  file.file_requests = {{0, 256, 8}, {b_arrival, 256, 8}, {c_arrival, 256, 8}};
  e.serving->arrivals = file;
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap" : "serial");
    e.serving->scheduler.overlap_schedule = overlap;
    auto r = SimulateServing(e, Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->requests.size(), 3u);
    const size_t b_prefill = overlap ? 4 : 3;
    ASSERT_GT(r->iteration_prefill_tokens.size(), b_prefill + 1);
    for (size_t i = 0; i <= b_prefill; ++i) {
      EXPECT_EQ(r->iteration_prefill_tokens[i], i == 0 || i == b_prefill ? 256 : 0) << i;
    }
    // Until B's prefill the iterations are A's alone: the same as without B.
    for (size_t i = 0; i < b_prefill; ++i) {
      EXPECT_DOUBLE_EQ(r->iteration_seconds[i], alone->iteration_seconds[i]) << i;
    }
    const ServedRequest &a = r->requests[0], &b = r->requests[1], &c = r->requests[2];
    EXPECT_DOUBLE_EQ(a.first_scheduled, 0);
    EXPECT_NEAR(b.first_scheduled, end[b_prefill - 1], 1e-12);
    EXPECT_NEAR(b.first_token, end[b_prefill - 1] + r->iteration_seconds[b_prefill], 1e-12);
    EXPECT_GT(c.arrival, b.finish);
    EXPECT_DOUBLE_EQ(c.first_scheduled, c.arrival);
    EXPECT_NEAR(c.first_token - c.arrival, a.first_token, 1e-12);  // the same prefill, at once
  }
}

// A closed loop of max_num_seqs requests of equal lengths runs in lock step:
// its throughput is the fixed batch's at that batch size.
TEST(ServingSimulatorTest, SaturationThroughputIsTheFixedBatchAtMaxBatch) {
  ArrivalSpec loop;
  loop.process = ArrivalProcess::kClosedLoop;
  loop.concurrency = 8;
  Experiment e = Served(loop, 256, 16, 64);
  e.serving->scheduler.max_num_seqs = 8;
  e.serving->scheduler.max_num_batched_tokens = 8 * 256;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::SimResult fixed = FixedBatch(e, 8, 256, 16);
  const double fixed_tokens_per_s = 8.0 * 16 / fixed.total;
  EXPECT_NEAR(r->metrics.output_tokens_per_s, fixed_tokens_per_s, 1e-6 * fixed_tokens_per_s);
  EXPECT_EQ(r->metrics.max_batch, 8);
  EXPECT_EQ(r->metrics.preemptions, 0);
}

// Little's law: the time-averaged number of requests in the system equals the
// arrival rate times the mean time in the system — exactly over a run that
// starts and ends empty, and close to the nominal Poisson rate.
TEST(ServingSimulatorTest, LittlesLaw) {
  Experiment e = Served(Poisson(20), 512, 64, 2000);
  e.serving->prompt_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 64, 1024};
  e.serving->output_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 8, 128};
  e.serving->scheduler.grid_points_per_octave = 8;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ServingMetrics& m = r->metrics;
  ASSERT_GT(m.mean_in_system, 1);  // loaded enough to queue and batch
  EXPECT_NEAR(m.mean_in_system, m.arrival_rate * m.mean_time_in_system, 1e-9 * m.mean_in_system);
  EXPECT_NEAR(m.mean_in_system, 20 * m.mean_time_in_system, 0.1 * m.mean_in_system);
}

// Chunked prefill bounds each decode stall (inter-token latency) by one
// iteration of the largest decode batch plus a prefill chunk of the token
// budget; prefilling long prompts whole breaks that bound.
TEST(ServingSimulatorTest, ChunkedPrefillBoundsTheDecodeStall) {
  Experiment e = Served(Poisson(4), 8192, 64, 200);
  e.serving->prompt_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 128, 8192};
  e.serving->scheduler.max_num_batched_tokens = 512;
  e.serving->scheduler.max_num_seqs = 32;
  e.serving->scheduler.grid_points_per_octave = 8;
  auto cost = IterationCost::Create(e, "", sim::Algorithm::kAuto, 8);
  ASSERT_TRUE(cost.ok());
  // The dearest chunk: the last 512 tokens of the longest prompt.
  auto decode = (*cost)->Decode(32, 8192 + 64);
  auto chunk = (*cost)->Prefill(1, 512);
  auto extra = (*cost)->PriorContextExtra(8192 - 512, 512);
  ASSERT_TRUE(decode.ok() && chunk.ok() && extra.ok());
  const double bound = *decode + *chunk + *extra;

  auto chunked = SimulateServing(e, Options());
  ASSERT_TRUE(chunked.ok()) << chunked.status().message();
  EXPECT_GT(chunked->metrics.itl.count, 0);
  EXPECT_LE(chunked->metrics.itl.max, bound);

  e.serving->scheduler.chunked_prefill = false;
  auto whole = SimulateServing(e, Options());
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_GT(whole->metrics.itl.max, bound);
}

// A long prompt prefilled in chunks costs about what it costs whole: each
// chunk carries its attention over the tokens already cached.
TEST(ServingSimulatorTest, ChunkedLongPromptCostsAboutItsWholePrefill) {
  Experiment e = Served(Poisson(0.01), 32768, 2, 1);
  e.serving->scheduler.max_num_batched_tokens = 2048;
  e.serving->scheduler.grid_points_per_octave = 8;
  auto chunked = SimulateServing(e, Options());
  e.serving->scheduler.chunked_prefill = false;
  auto whole = SimulateServing(e, Options());
  ASSERT_TRUE(chunked.ok() && whole.ok());
  const double ttft_chunked = chunked->metrics.ttft.mean, ttft_whole = whole->metrics.ttft.mean;
  EXPECT_EQ(chunked->metrics.iterations, 32768 / 2048 + 1);
  EXPECT_GE(ttft_chunked, 0.99 * ttft_whole);
  EXPECT_LE(ttft_chunked, 1.2 * ttft_whole);
}

TEST(ServingSimulatorTest, PreemptsWhenBlocksRunOutAndStillServesEveryone) {
  Experiment e = Served(Poisson(50), 512, 256, 200);
  e.serving->scheduler.kv_blocks = 128;  // 2048 tokens: a few requests at a time
  e.serving->scheduler.block_size = 16;
  e.serving->scheduler.grid_points_per_octave = 8;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->metrics.preemptions, 0);
  EXPECT_EQ(r->metrics.measured, 200);
  EXPECT_LE(r->metrics.max_kv_occupancy, 1.0);
  for (const ServedRequest& q : r->requests) {
    EXPECT_EQ(q.generated, q.output);
    EXPECT_EQ(q.blocks, 0);
  }
}

TEST(ServingSimulatorTest, RejectsRequestsThatCanNeverFitAndCountsThem) {
  Experiment e = Served(Poisson(5), 512, 16, 20);
  e.serving->prompt_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 64, 4000};
  e.serving->scheduler.kv_blocks = 160;  // 2560 tokens
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  int64_t expected = 0;
  for (const ServedRequest& q : r->requests) expected += q.prompt + q.output - 1 > 2560 ? 1 : 0;
  EXPECT_GT(expected, 0);
  EXPECT_EQ(r->metrics.rejected, expected);
  EXPECT_EQ(r->metrics.measured + r->metrics.rejected, 20);
}

TEST(ServingSimulatorTest, RoutersSpreadTheLoadOverReplicas) {
  for (RouterPolicy policy : {RouterPolicy::kRoundRobin, RouterPolicy::kLeastOutstanding}) {
    Experiment e = Served(Poisson(40), 256, 32, 400, /*dp=*/4);
    e.serving->scheduler.router = policy;
    e.serving->scheduler.grid_points_per_octave = 8;
    auto r = SimulateServing(e, Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<int64_t> per_replica(4, 0);
    for (const ServedRequest& q : r->requests) ++per_replica[q.replica];
    for (int64_t n : per_replica) EXPECT_GT(n, 60) << RouterPolicyName(policy);
    EXPECT_EQ(r->devices, 8);
  }
}

TEST(ServingSimulatorTest, WarmupRequestsAreLeftOutOfTheStatistics) {
  Experiment e = Served(Poisson(10), 256, 16, 50);
  e.serving->warmup_requests = 10;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics.measured, 40);
  EXPECT_EQ(r->metrics.warmup, 10);
  EXPECT_EQ(r->metrics.ttft.count, 40);
}

TEST(ServingSimulatorTest, SameExperimentSameResult) {
  Experiment e = Served(Poisson(30), 256, 32, 300);
  e.serving->arrivals.process = ArrivalProcess::kGamma;
  e.serving->arrivals.cv = 3;
  e.serving->scheduler.grid_points_per_octave = 8;
  auto a = SimulateServing(e, Options());
  auto b = SimulateServing(e, Options());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].finish, b->requests[i].finish);
  }
}

// The trace: one process per replica, every served request once on a lane
// where no two requests overlap, iterations on track 0 with their counters.
TEST(ServingSimulatorTest, TraceHasRequestsOnLanesPerReplica) {
  Experiment e = Served(Poisson(40), 256, 16, 120, /*dp=*/2);
  e.serving->scheduler.grid_points_per_octave = 8;
  const std::string path = TracePath("serving_trace_");
  auto r = SimulateServing(e, TracedOptions(path));
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto trace = trace::ReadTraceFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  int64_t requests = 0, iterations = 0;
  std::map<std::pair<int32_t, int32_t>, int64_t> lane_end;  // (replica, lane) → last end
  for (const trace::OpEvent& op : trace->ops) {
    EXPECT_TRUE(op.rank == 0 || op.rank == 1);
    if (op.kind == "iteration") ++iterations;
    if (op.kind != "request") continue;
    ++requests;
    auto [it, fresh] = lane_end.emplace(std::make_pair(op.rank, op.stream), op.end_ns());
    if (!fresh) {
      EXPECT_GE(op.ts_ns, it->second) << op.name;
      it->second = op.end_ns();
    }
  }
  EXPECT_EQ(requests, 120);
  EXPECT_EQ(iterations, r->metrics.iterations);
  EXPECT_EQ(static_cast<int64_t>(trace->counters.size()), r->metrics.iterations);
  EXPECT_TRUE(trace->metadata["sim"].contains("serving"));
}

// Simulates `e` with a trace and analyses that trace: the per-request metrics
// `analyze` computes from the request spans equal the simulator's own (times
// in the trace are whole ns, so within a few ns).
void ExpectAnalyzeAgrees(const Experiment& e, const std::string& tag, bool itl_available = true,
                         const std::string& calibration = "") {
  SCOPED_TRACE(tag);
  const std::string path = TracePath("served_" + tag);
  ServeOptions options = TracedOptions(path);
  options.sim.calibration_file = calibration;
  auto r = SimulateServing(e, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto a = analysis::AnalyzeTraceFile(path);
  std::filesystem::remove(path);
  if (!r->metadata_path.empty()) std::filesystem::remove(r->metadata_path);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const ServingMetrics& m = r->metrics;
  auto value = [&](const std::string& key) {
    const analysis::Metric* x = a->metrics.Find(key);
    EXPECT_TRUE(x != nullptr && x->value.has_value()) << key;
    return x != nullptr && x->value ? *x->value : -1.0;
  };
  EXPECT_EQ(value("requests.measured"), m.measured);
  EXPECT_EQ(value("requests.warmup"), m.warmup);
  EXPECT_EQ(value("requests.preemptions"), m.preemptions);
  auto expect_summary = [&](const std::string& name, const analysis::Summary& s) {
    if (s.count == 0) {  // no such figure (TTFT of decode-only requests): none either
      EXPECT_EQ(a->metrics.Find(name + ".p50"), nullptr) << name;
      return;
    }
    EXPECT_NEAR(value(name + ".mean"), s.mean, 4e-9) << name;
    EXPECT_NEAR(value(name + ".p50"), s.p50, 4e-9) << name;
    EXPECT_NEAR(value(name + ".p90"), s.p90, 4e-9) << name;
    EXPECT_NEAR(value(name + ".p99"), s.p99, 4e-9) << name;
  };
  expect_summary("request.queueing_delay", m.queueing);
  expect_summary("request.ttft", m.ttft);
  expect_summary("request.tpot", m.tpot);
  expect_summary("request.e2e_latency", m.e2e);
  if (itl_available) {
    expect_summary("request.itl", m.itl);
    EXPECT_EQ(value("request.itl.count"), m.itl.count);
  } else {
    const analysis::Metric* itl = a->metrics.Find("request.itl");
    ASSERT_NE(itl, nullptr);
    EXPECT_FALSE(itl->unavailable.empty());
  }
  EXPECT_NEAR(value("serving.requests_per_s"), m.requests_per_s, 1e-6 * m.requests_per_s);
  EXPECT_NEAR(value("serving.output_tokens_per_s"), m.output_tokens_per_s,
              1e-6 * m.output_tokens_per_s);
  EXPECT_NEAR(value("serving.prompt_tokens_per_s"), m.prompt_tokens_per_s,
              1e-6 * m.prompt_tokens_per_s);
  if (e.serving->slo.ttft > 0) {  // an SLO that binds for some requests
    EXPECT_GT(m.slo_attainment, 0);
    EXPECT_LT(m.slo_attainment, 1);
  }
  // Goodput under the SLO the metadata carries: the trace's nanosecond times may
  // put a request within a nanosecond of an objective on the other side.
  EXPECT_NEAR(value("serving.goodput_requests_per_s"), m.goodput_requests_per_s,
              1.0 / m.duration + 1e-6 * m.goodput_requests_per_s);
  EXPECT_NEAR(value("serving.slo_attainment"), m.slo_attainment,
              1.0 / static_cast<double>(m.measured) + 1e-9);
}

TEST(ServingSimulatorTest, AnalyzeOfTheTraceGivesTheSimulatorsRequestMetrics) {
  Experiment replicas = Served(Poisson(40), 256, 16, 120, /*dp=*/2);
  replicas.serving->scheduler.grid_points_per_octave = 8;
  replicas.serving->prompt_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 32, 1024};
  replicas.serving->output_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 1, 64};
  replicas.serving->warmup_requests = 10;
  replicas.serving->slo.ttft = 0.015;  // binding for some requests, not all
  replicas.serving->slo.tpot = 0.02;
  ExpectAnalyzeAgrees(replicas, "replicas");

  Experiment whole = replicas;  // whole prompts, one replica, a closed loop
  whole.parallel = Tp(2);
  whole.serving->scheduler.chunked_prefill = false;
  whole.serving->arrivals = ArrivalSpec{};
  whole.serving->arrivals.process = ArrivalProcess::kClosedLoop;
  whole.serving->arrivals.concurrency = 8;
  ExpectAnalyzeAgrees(whole, "closed");

  Experiment split = Served(Poisson(20), 512, 32, 80);
  split.serving->scheduler.grid_points_per_octave = 8;
  DisaggregationSpec d;
  d.prefill.tp = 2;
  d.decode.tp = 4;
  d.decode.instances = 2;
  split.serving->disaggregation = d;
  ExpectAnalyzeAgrees(split, "disaggregated");

  Experiment tight = Served(Poisson(50), 512, 256, 60);  // preempts
  tight.serving->scheduler.kv_blocks = 128;
  tight.serving->scheduler.grid_points_per_octave = 8;
  ExpectAnalyzeAgrees(tight, "preempted", /*itl_available=*/false);

  Experiment staged = replicas;  // two pipeline stages: two virtual engines per replica
  staged.parallel.tp = 1;
  staged.parallel.pp = 2;
  ExpectAnalyzeAgrees(staged, "pipelined");

  // issue 33: every serving-path term on, the response overhead above all
  // (TPOT and the inter-token gaps end at the last token, E2E at the response).
  testing::ScratchDir scratch;
  const std::string terms = scratch.File("analyze_terms.yaml");
  std::ofstream(terms) << "request_overhead_us: 3000\nresponse_overhead_us: 4000\n"
                          "iteration_overhead_us: 40\ncold_start_us: 20000\n";
  ExpectAnalyzeAgrees(replicas, "overheads", true, terms);
  ExpectAnalyzeAgrees(split, "overheads_disaggregated", true, terms);

  // Decode-only requests (no TTFT, no prompt throughput) and prefix-cache hits.
  Experiment decode_only = replicas;
  decode_only.serving->decode_only = true;
  decode_only.serving->slo.ttft = 0;
  ExpectAnalyzeAgrees(decode_only, "decode_only", true, terms);
  Experiment hits = replicas;
  hits.serving->prefix_cache_hit_rate = 0.6;
  hits.serving->slo.ttft = 0;  // every request meets it now: not a binding objective
  ExpectAnalyzeAgrees(hits, "prefix_cache", true, terms);
}

// Disaggregated prefill/decode at a vanishing rate: each request's TTFT is the
// prefill plan's batch-1 TTFT, its first decode step waits for its KV cache to
// cross the network, every later one takes the decode plan's batch-1 step. With
// an infinitely fast network the two instances run as if apart.
TEST(ServingSimulatorTest, DisaggregatedAtZeroRateIsTheTwoPlansApart) {
  for (bool infinite : {true, false}) {
    Experiment e = Served(Poisson(0.01), 1024, 8, 6);
    DisaggregationSpec d;
    d.prefill.tp = 4;
    d.decode.tp = 2;
    e.serving->disaggregation = d;
    if (infinite) {
      e.cluster.scale_out.nic_bandwidth_per_device = 1e30;
      e.cluster.scale_out.latency = 0;
    }
    auto r = SimulateServing(e, Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->devices, 6);
    EXPECT_EQ(r->kv_transfers, 6);
    Experiment prefill_plan = e, decode_plan = e;
    prefill_plan.parallel.tp = 4;
    const sim::SimResult p = FixedBatch(prefill_plan, 1, 1024, 8);
    const sim::SimResult q = FixedBatch(decode_plan, 1, 1024, 8);
    // Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes per token.
    const double bytes = 1024.0 * 32 * 8 * 128 * 2 * 2;
    EXPECT_DOUBLE_EQ(r->kv_transfer_bytes, 6 * bytes);
    const double transfer = infinite
                                ? 0
                                : e.cluster.scale_out.latency +
                                      bytes / (2 * e.cluster.scale_out.nic_bandwidth_per_device);
    for (const ServedRequest& x : r->requests) {
      EXPECT_NEAR(x.first_token - x.arrival, p.ttft, 1e-9 * p.ttft) << x.id;
      EXPECT_NEAR(x.kv_arrival - x.first_token, transfer, 1e-9 * q.tpot) << x.id;
      // The first decode step starts when the cache has arrived.
      EXPECT_NEAR(x.finish - x.kv_arrival, 7 * q.tpot, 1e-9 * q.tpot) << x.id;
    }
  }
}

// KV caches are flows of the network model: the calibration's network
// efficiency scales the NICs they cross.
TEST(ServingSimulatorTest, DisaggregatedKvTransfersUseTheCalibratedNetworkEfficiency) {
  Experiment e = Served(Poisson(0.01), 1024, 4, 3);
  DisaggregationSpec d;
  d.prefill.tp = 4;
  d.decode.tp = 2;
  e.serving->disaggregation = d;
  const std::string calibration = TracePath("kv_calibration_") + ".yaml";
  std::ofstream(calibration) << "network_efficiency: 0.5\n";
  ServeOptions o = Options();
  o.sim.calibration_file = calibration;
  auto r = SimulateServing(e, o);
  std::filesystem::remove(calibration);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double bytes = 1024.0 * 32 * 8 * 128 * 2 * 2;  // as in the test above
  const double nic = 0.5 * 2 * e.cluster.scale_out.nic_bandwidth_per_device;
  for (const ServedRequest& x : r->requests) {
    EXPECT_NEAR(x.kv_arrival - x.first_token, e.cluster.scale_out.latency + bytes / nic,
                1e-9 * bytes / nic)
        << x.id;
  }
}

// Caches that leave their prefill instances together share the decode
// instance's NICs (max-min) instead of queueing: they arrive together.
TEST(ServingSimulatorTest, DisaggregatedCachesShareTheDecodeInstancesNics) {
  ArrivalSpec burst;
  burst.process = ArrivalProcess::kClosedLoop;
  burst.concurrency = 2;
  Experiment e = Served(burst, 1024, 4, 2);
  DisaggregationSpec d;
  d.prefill.tp = 2;
  d.prefill.instances = 2;
  d.decode.tp = 2;
  e.serving->disaggregation = d;
  e.serving->scheduler.router = RouterPolicy::kRoundRobin;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 2u);
  const ServedRequest& a = r->requests[0];
  const ServedRequest& b = r->requests[1];
  EXPECT_DOUBLE_EQ(a.first_token, b.first_token);  // one prefill instance each
  const double bytes = 1024.0 * 32 * 8 * 128 * 2 * 2;
  const double alone = bytes / (2 * e.cluster.scale_out.nic_bandwidth_per_device);
  for (const ServedRequest& x : r->requests) {
    EXPECT_NEAR(x.kv_arrival - x.first_token, e.cluster.scale_out.latency + 2 * alone, 1e-9 * alone)
        << x.id;
  }
}

TEST(ServingSimulatorTest, DisaggregatedUnderLoadServesEveryone) {
  Experiment e = Served(Poisson(20), 512, 64, 400);
  e.serving->prompt_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 64, 2048};
  e.serving->output_tokens = {LengthDist::Kind::kUniform, 0, 0, 0, 1, 128};
  e.serving->scheduler.grid_points_per_octave = 8;
  e.serving->scheduler.router = RouterPolicy::kLeastOutstanding;
  DisaggregationSpec d;
  d.prefill.tp = 2;
  d.prefill.instances = 2;
  d.decode.tp = 4;
  d.decode.instances = 2;
  e.serving->disaggregation = d;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  int64_t decoded = 0;
  for (const ServedRequest& q : r->requests) {
    EXPECT_EQ(q.generated, q.output);
    if (q.output > 1) {
      ++decoded;
      EXPECT_GE(q.replica, 2);  // finished on a decode instance
      EXPECT_GT(q.kv_arrival, q.first_token);
    }
  }
  EXPECT_EQ(r->kv_transfers, decoded);
  EXPECT_EQ(r->devices, 12);
  const ServingMetrics& m = r->metrics;
  EXPECT_NEAR(m.mean_in_system, m.arrival_rate * m.mean_time_in_system, 1e-9 * m.mean_in_system);
}

// A replica of two pipeline stages runs two virtual engines (as vLLM does):
// two requests arriving together go one to each, and the second engine's
// prefill enters the first stage as soon as the first engine's has left it —
// half a pass later — instead of waiting for the whole pass or sharing it.
TEST(ServingSimulatorTest, PipelineStagesRunVirtualEnginesOverlapped) {
  ArrivalSpec pair;
  pair.process = ArrivalProcess::kClosedLoop;
  pair.concurrency = 2;
  Experiment e = Served(pair, 2048, 1, 2);
  e.parallel.tp = 1;
  e.parallel.pp = 2;
  e.serving->scheduler.router = RouterPolicy::kRoundRobin;
  auto cost = IterationCost::Create(e, "", sim::Algorithm::kAuto, 0);
  ASSERT_TRUE(cost.ok());
  auto pass = (*cost)->Prefill(1, 2048);
  ASSERT_TRUE(pass.ok());
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 2u);
  EXPECT_EQ(r->replicas, 1);
  EXPECT_EQ(r->requests[0].replica, 0);
  EXPECT_EQ(r->requests[1].replica, 0);
  EXPECT_NE(r->requests[0].engine, r->requests[1].engine);
  EXPECT_NEAR(r->requests[0].first_token, *pass, 1e-12);
  EXPECT_NEAR(r->requests[1].first_token, 1.5 * *pass, 1e-12);
  EXPECT_NEAR(r->requests[1].first_scheduled, 0.5 * *pass, 1e-12);  // waited for the stage

  // A lone request is not slowed by the other engine: batch-1 TTFT and TPOT.
  Experiment lone = Served(Poisson(0.01), 1024, 8, 3);
  lone.parallel.tp = 1;
  lone.parallel.pp = 2;
  auto q = SimulateServing(lone, Options());
  ASSERT_TRUE(q.ok()) << q.status().message();
  const sim::SimResult fixed = FixedBatch(lone, 1, 1024, 8);
  for (const ServedRequest& x : q->requests) {
    EXPECT_NEAR(x.first_token - x.arrival, fixed.ttft, 1e-9 * fixed.ttft) << x.id;
    EXPECT_NEAR((x.finish - x.first_token) / 7, fixed.tpot, 1e-9 * fixed.tpot) << x.id;
  }
}

// A mixed iteration runs its prefill chunk and its decodes in one pass: it
// reads the weights once, so it saves up to one decode step's weight read on
// the two phases run one after the other, and costs at least either alone.
// issue 33: the same requests under memory pressure (128 blocks of 16 tokens,
// room for two 767-token requests) with each engine's profile: vLLM's recompute
// preemption preempts; TensorRT-LLM's guaranteed-no-evict admission never
// does — requests queue until a whole footprint fits — and serves everyone.
TEST(ServingSimulatorTest, TrtllmProfileQueuesWhereVllmProfilePreempts) {
  std::map<std::string, ServingResult> runs;
  for (const char* name : {"vllm", "trtllm"}) {
    Experiment e = Served(Poisson(50), 512, 256, 200);
    EngineInputs in;
    in.max_model_len = e.model.max_position_embeddings;
    in.tp = 2;
    e.serving->scheduler = EngineSchedulerDefaults({name, ""}, in);
    e.serving->engine = EngineSpec{name, ""};
    e.serving->scheduler.kv_blocks = 128;
    e.serving->scheduler.block_size = 16;
    e.serving->scheduler.grid_points_per_octave = 8;
    auto r = SimulateServing(e, Options());
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
    EXPECT_EQ(r->metrics.measured, 200) << name;
    EXPECT_LE(r->metrics.max_kv_occupancy, 1.0) << name;
    for (const ServedRequest& q : r->requests) EXPECT_EQ(q.generated, q.output) << name;
    runs[name] = std::move(*r);
  }
  EXPECT_GT(runs["vllm"].metrics.preemptions, 0);
  EXPECT_EQ(runs["trtllm"].metrics.preemptions, 0);
  EXPECT_LE(runs["trtllm"].metrics.max_batch, 2);  // 2 × 48 blocks ≤ 128 < 3 × 48
  EXPECT_GT(runs["trtllm"].metrics.queueing.mean, 0);
}

// Decode-only requests, all at t = 0 with a 1000-token context, one iteration each.
Experiment DecodeBatch(int64_t requests, int64_t output) {
  ArrivalSpec file;
  file.process = ArrivalProcess::kFile;
  for (int64_t i = 0; i < requests; ++i) file.file_requests.push_back({0, 1000, output});
  Experiment e = Served(file, 1000, output, 0);
  e.serving->decode_only = true;
  e.serving->scheduler.kv_blocks = 10'000;
  return e;
}

// CUDA-graph capture sizes: a decode batch of 3 with sizes {4} runs the batch
// of 4 (padded, replayed) whose padding slot attends over one token, not the
// 1,000 of the real requests: the batch of 4 at context 1 plus the three
// requests' attention, D(3, c) − D(3, 1); with {3} it runs unpadded, cheaper;
// with {2} (3 above the largest) eagerly, as without graphs.
TEST(ServingSimulatorTest, DecodeBatchesArePaddedToTheNextCaptureSize) {
  auto first_step = [](int64_t requests, std::vector<int64_t> sizes) {
    Experiment e = DecodeBatch(requests, 1);
    e.serving->scheduler.cuda_graph_batch_sizes = std::move(sizes);
    auto r = SimulateServing(e, Options());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() && !r->iteration_seconds.empty() ? r->iteration_seconds[0] : -1.0;
  };
  const double padded = first_step(3, {4});
  EXPECT_GT(padded, 0);
  EXPECT_LT(padded, first_step(4, {4}));
  {
    const Experiment e = DecodeBatch(3, 1);
    auto cost = IterationCost::Create(e, "", sim::Algorithm::kAuto, 0);
    ASSERT_TRUE(cost.ok()) << cost.status().message();
    auto slots = (*cost)->Decode(4, 1, true);
    auto real = (*cost)->Decode(3, 1000, true);
    auto real_at_one = (*cost)->Decode(3, 1, true);
    ASSERT_TRUE(slots.ok() && real.ok() && real_at_one.ok());
    EXPECT_NEAR(padded, *slots + *real - *real_at_one, 1e-12);
  }
  EXPECT_LT(first_step(3, {3}), padded);
  EXPECT_DOUBLE_EQ(first_step(3, {2}), first_step(3, {}));
  EXPECT_LT(first_step(3, {3}), first_step(3, {}));  // a replay pays no launches
}

// Multi-step N = 4: two decode-only requests of 8 tokens take two scheduler
// calls of 4 steps each; the k-th token of a call comes when its k-th step
// ends, and the second call's first step sees 4 more cached tokens.
TEST(ServingSimulatorTest, MultiStepDecodesNStepsPerCall) {
  Experiment e = DecodeBatch(2, 8);
  e.serving->scheduler.num_scheduler_steps = 4;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iteration_seconds.size(), 2u);
  const ServedRequest& a = r->requests[0];
  EXPECT_GT(a.first_token, 0);
  EXPECT_LT(a.first_token, r->iteration_seconds[0] / 3);  // 1 of 4 steps
  EXPECT_NEAR(a.finish, r->iteration_seconds[0] + r->iteration_seconds[1], 1e-12);
  EXPECT_GT(r->iteration_seconds[1], r->iteration_seconds[0]);  // longer contexts
  Experiment single = DecodeBatch(2, 8);
  auto one = SimulateServing(single, Options());
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->iteration_seconds.size(), 8u);
  // Without host terms the same steps: the same total time.
  EXPECT_NEAR(one->requests[0].finish, a.finish, 1e-12);
}

// The engine's serving-path terms at a rate near 0: the request term delays
// the first scheduling; each iteration adds its fixed part, its per-request
// part (batch 1) and its part per worker beyond the first (tp 2: one).
TEST(ServingSimulatorTest, ServingPathTermsAddToEveryIteration) {
  Experiment e = Served(Poisson(0.01), 512, 8, 6);
  e.serving->path.request = 2e-3;
  e.serving->path.iteration = 1e-4;
  e.serving->path.iteration_per_request = 2e-5;
  e.serving->path.iteration_per_worker = 3e-5;
  e.serving->path.token = 4e-6;
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::SimResult one = FixedBatch(e, 1, 512, 8);
  const double host = 1e-4 + 2e-5 + 3e-5 + 4e-6;
  for (const ServedRequest& q : r->requests) {
    EXPECT_NEAR(q.first_scheduled - q.arrival, 2e-3, 1e-12) << q.id;
    EXPECT_NEAR(q.first_token - q.arrival, 2e-3 + one.ttft + host, 1e-9) << q.id;
    EXPECT_NEAR((q.last_token - q.first_token) / 7, one.tpot + host, 1e-9) << q.id;
  }
}

TEST(IterationCostTest, MixedIterationReadsTheWeightsOnce) {
  Experiment e = Served(Poisson(1), 2048, 64, 1);
  auto cost = IterationCost::Create(e, "", sim::Algorithm::kAuto, 0);
  ASSERT_TRUE(cost.ok());
  auto chunk = (*cost)->Prefill(1, 512);
  auto decode = (*cost)->Decode(32, 2048);
  auto weights_only = (*cost)->Decode(32, 1);  // no context: the weight read, mostly
  auto mixed = (*cost)->Mixed(1, 512, 32, 2048);
  ASSERT_TRUE(chunk.ok() && decode.ok() && weights_only.ok() && mixed.ok());
  EXPECT_GE(*mixed, std::max(*chunk, *decode));
  const double saved = *chunk + *decode - *mixed;
  EXPECT_GT(saved, 0.5 * *weights_only);
  EXPECT_LE(saved, *weights_only);
  // Llama-3.1-8B at TP2: ~8 GB of bf16 weights per rank, ≥ 2.4 ms at 3.35 TB/s.
  EXPECT_GT(saved, 2.4e-3 * 0.5);
}

// A serving replica's ranks spread among themselves (rank_speed_spread): a
// TP2 replica of a DP2 deployment runs at the slower of its two ranks — never
// faster than with identical ranks, at most 1 + s·z₂ slower (its all-reduces
// do not scale) — not at two of the four world ranks' factors.
TEST(IterationCostTest, RankSpreadActsWithinEachReplica) {
  const Experiment e = Served(Poisson(1), 512, 64, 8, /*dp=*/2);
  testing::ScratchDir scratch;
  const std::string spread = scratch.File("serve_spread.yaml");
  std::ofstream(spread) << "rank_speed_spread: 0.04\n";
  auto plain = IterationCost::Create(e, "", sim::Algorithm::kAuto, 0);
  auto spread_cost = IterationCost::Create(e, spread, sim::Algorithm::kAuto, 0);
  ASSERT_TRUE(plain.ok() && spread_cost.ok());
  auto off = (*plain)->Decode(8, 512), on = (*spread_cost)->Decode(8, 512);
  ASSERT_TRUE(off.ok() && on.ok());
  EXPECT_GT(*on, *off * 1.005);
  EXPECT_LE(*on, *off * (1 + 0.04 * 0.5895));
}

// DeepSeek-V2-Lite with EP8 on H800s (attention data-parallel over the 8
// ranks), a closed loop of one prefill-only wave: `per_rank` prompts of
// `prompt` tokens per rank, `hit_rate` of each from the prefix cache.
Experiment EpPrefill(int64_t prompt, int64_t per_rank, double hit_rate) {
  ParallelSpec p;
  p.strategy = "expert";
  p.ep = 8;
  const int64_t n = per_rank * p.ep;
  Experiment e = ZooExperiment("deepseek-v2-lite", "h800", p, n, prompt, 1);
  ServingSpec s;
  s.arrivals.process = ArrivalProcess::kClosedLoop;
  s.arrivals.concurrency = n;
  s.prompt_tokens = Fixed(prompt);
  s.output_tokens = Fixed(1);
  s.requests = n;
  s.prefix_cache_hit_rate = hit_rate;
  s.scheduler.chunked_prefill = false;
  s.scheduler.max_num_batched_tokens = n * prompt;
  s.scheduler.max_num_seqs = n;
  s.scheduler.kv_blocks = 4 * n * prompt / 16;
  s.scheduler.grid_points_per_octave = 0;
  e.serving = s;
  return e;
}

// issue 33 (h39kv): with data-parallel attention each rank attends over its
// own requests' cached prefixes while the others do theirs. Ten chunks go to
// EP8's ranks in turn (ranks 0 and 1 take two each) and cost the largest per-rank sum of the
// chunks' marginal attention, not the sum over all chunks; each chunk's marginal cost is at least
// its extra attention FLOPs (prior × chunk query-key pairs) at the peak.
TEST(IterationCostTest, CachedPrefixAttentionRunsOnTheDataParallelRanksSideBySide) {
  const Experiment e = EpPrefill(4096, 1, 0.5);
  auto cost = IterationCost::Create(e, "", sim::Algorithm::kAuto, 0);
  ASSERT_TRUE(cost.ok()) << cost.status().message();
  ASSERT_EQ((*cost)->attention_ranks(), 8);
  const std::vector<std::pair<int64_t, int64_t>> chunks = {
      {2048, 2048}, {1024, 1024}, {3072, 1024}, {512, 512},  {2048, 1024},
      {1536, 512},  {0, 4096},    {4096, 256},  {2048, 512}, {1024, 2048}};
  std::vector<double> extra;
  for (const auto& [prior, chunk] : chunks) {
    auto x = (*cost)->PriorContextExtra(prior, chunk);
    ASSERT_TRUE(x.ok());
    extra.push_back(*x);
  }
  // By hand: chunk i on rank i mod 8; ranks 0 and 1 hold chunks 0, 8 and 1, 9.
  const double expected = std::max({extra[0] + extra[8], extra[1] + extra[9], extra[2], extra[3],
                                    extra[4], extra[5], extra[6], extra[7]});
  auto seconds = (*cost)->PriorContextSeconds(chunks);
  ASSERT_TRUE(seconds.ok());
  EXPECT_DOUBLE_EQ(*seconds, expected);
  double serial = 0;
  for (double x : extra) serial += x;
  EXPECT_LT(*seconds, serial / 2);
  // MLA prefill attention (non-absorbed): 2 × pairs × 16 heads × (192 + 128)
  // FLOPs per layer, 27 layers, bf16 at 989.4 TFLOP/s; at most 3× that.
  EXPECT_EQ(extra[6], 0.0);  // nothing cached
  for (size_t i : {0, 2, 4, 7}) {
    const double pairs = static_cast<double>(chunks[i].first) * chunks[i].second;
    const double at_peak = 2 * pairs * 16 * (192 + 128) * 27 / 989.4e12;
    EXPECT_GE(extra[i], at_peak) << i;
    EXPECT_LE(extra[i], 3 * at_peak) << i;
  }
}

// Prefix-cache hits skip compute: an EP prefill with hits is never slower than
// the same prompts without (the defect: every request's attention over its
// prefix was a one-request pass on the whole EP group, summed over requests).
TEST(ServingSimulatorTest, PrefixCacheHitsNeverSlowAnExpertParallelPrefill) {
  double previous = std::numeric_limits<double>::infinity();
  for (double hit_rate : {0.0, 0.25, 0.5, 0.563, 0.75, 0.9}) {
    auto r = SimulateServing(EpPrefill(4096, 4, hit_rate), Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->iteration_seconds.size(), 1u) << hit_rate;
    EXPECT_LT(r->iteration_seconds[0], previous) << hit_rate;
    previous = r->iteration_seconds[0];
  }
}

TEST(IterationCostTest, GridPointsBracketTheValue) {
  for (int64_t x : {1, 7, 16, 17, 100, 1000, 4097, 100000}) {
    for (int64_t align : {1, 8}) {
      const auto [lo, hi] = IterationCost::GridPoints(x, 8, align);
      EXPECT_LE(lo, std::max(x, align)) << x;
      EXPECT_GE(hi, x) << x;
      EXPECT_EQ(lo % align, 0);
      EXPECT_EQ(hi % align, 0);
      if (x > 16) {
        EXPECT_LE(hi - lo, std::max<int64_t>(x / 8, align)) << x;
      }
    }
    const auto [elo, ehi] = IterationCost::GridPoints(x, 0, 1);
    EXPECT_EQ(elo, x);
    EXPECT_EQ(ehi, x);
  }
}

// issue 33: DeepSeek-V3 with EP144 over 288 expert slots (256 routed + 32
// redundant), MTP and two-batch overlap, served as a decode-only deployment —
// configs/deepseek-v3-disagg.yaml's decode instance, shortened to 16 tokens.
// At 1.85 expected tokens per step the carried credit emits 1, 2, 2, 2, 2, 2,
// 1, 2, 2 tokens: 16 in 9 lockstep steps (16 without MTP).
TEST(ServingSimulatorTest, DeepSeekV3Ep144RedundantExpertsMtpTwoBatchOverlapDecodeOnly) {
  auto exps =
      LoadExperiments(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/deepseek-v3-disagg.yaml");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 2u);
  EXPECT_EQ((*exps)[0].serving->disaggregation->prefill.ep, 32);
  EXPECT_EQ((*exps)[0].serving->disaggregation->decode.ep, 144);
  Experiment e = (*exps)[1];
  ASSERT_TRUE(e.serving && e.serving->decode_only);
  EXPECT_EQ(e.parallel.ep, 144);
  EXPECT_EQ(e.parallel.redundant_experts, 32);
  EXPECT_TRUE(e.two_batch_overlap);
  EXPECT_DOUBLE_EQ(e.speculative.TokensPerStep(), 1.85);
  e.serving->output_tokens.value = 16;
  e.serving->requests = e.serving->arrivals.concurrency;  // one wave
  auto r = SimulateServing(e, Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 1152u);
  EXPECT_EQ(r->iteration_seconds.size(), 9u);
  for (const ServedRequest& q : r->requests) {
    EXPECT_EQ(q.generated, 16);
    EXPECT_EQ(q.preemptions, 0);
  }
  EXPECT_EQ(r->metrics.ttft.count, 0);
  EXPECT_EQ(r->metrics.tpot.count, 1152);
  // Without redundant experts EP144 cannot be written: 144 does not divide 256.
  Experiment plain = e;
  plain.parallel.redundant_experts = 0;
  EXPECT_FALSE(SimulateServing(plain, Options()).ok());
}

}  // namespace
}  // namespace shardscope::serve
