#include "config/serving.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/engine_profile.h"
#include "config/experiment_loader.h"
#include "testing/config/experiments_text.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

constexpr const char* kHead = R"(
defaults: {hardware: h100-sxm, model: llama-3.1-8b, parallelism: {tp_size: 2},
           batch_size: 1, sequence_length: 128}
experiments:
  - name: s
)";

StatusOr<std::vector<Experiment>> Load(const std::string& body,
                                       const std::string& path = "exp.yaml") {
  return testing::LoadExperimentsText(std::string(kHead) + body, path);
}

TEST(ServingTest, ReadsWorkloadSchedulerAndSlo) {
  auto exps = Load(R"(
    workload:
      arrivals: {process: gamma, rate_per_s: 4, cv: 3}
      prompt_tokens: {distribution: lognormal, mean: 1000, stddev: 300, min: 16, max: 4096}
      output_tokens: 128
      requests: 1000
      warmup_requests: 50
    scheduler: {max_num_batched_tokens: 4224, max_num_seqs: 64, chunked_prefill: false,
                router: least_outstanding, block_size: 32}
    slo: {ttft_ms: 500, tpot_ms: 50}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  const Experiment& e = (*exps)[0];
  ASSERT_TRUE(e.serving.has_value());
  const ServingSpec& s = *e.serving;
  EXPECT_EQ(s.arrivals.process, ArrivalProcess::kGamma);
  EXPECT_DOUBLE_EQ(s.arrivals.rate, 4);
  EXPECT_DOUBLE_EQ(s.arrivals.cv, 3);
  EXPECT_EQ(s.prompt_tokens.kind, LengthDist::Kind::kLognormal);
  EXPECT_EQ(s.prompt_tokens.max, 4096);
  EXPECT_EQ(s.output_tokens.kind, LengthDist::Kind::kFixed);
  EXPECT_EQ(s.output_tokens.value, 128);
  EXPECT_EQ(s.requests, 1000);
  EXPECT_EQ(s.warmup_requests, 50);
  EXPECT_EQ(s.scheduler.max_num_batched_tokens, 4224);
  EXPECT_EQ(s.scheduler.max_num_seqs, 64);
  EXPECT_EQ(s.scheduler.block_size, 32);
  EXPECT_FALSE(s.scheduler.chunked_prefill);
  EXPECT_EQ(s.scheduler.router, RouterPolicy::kLeastOutstanding);
  EXPECT_DOUBLE_EQ(s.slo.ttft, 0.5);
  EXPECT_DOUBLE_EQ(s.slo.tpot, 0.05);
  EXPECT_EQ(ServingToJson(s)["workload"]["arrivals"]["process"], "gamma");
  EXPECT_FALSE(s.decode_only);
  EXPECT_EQ(s.prefix_cache_hit_rate, 0);
}

// issue 33: decode-only studies and prefix-cache hits are workload fields.
TEST(ServingTest, ReadsDecodeOnlyAndPrefixCacheHitRate) {
  auto exps = Load(R"(
    workload:
      arrivals: {process: closed_loop, concurrency: 64}
      prompt_tokens: 4096
      output_tokens: 256
      requests: 512
      decode_only: true
      prefix_cache_hit_rate: 0
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 1u);
  EXPECT_TRUE((*exps)[0].serving->decode_only);
  EXPECT_EQ(ServingToJson(*(*exps)[0].serving)["workload"]["decode_only"], true);
  auto hits = Load(R"(
    workload: {arrivals: {process: poisson, rate_per_s: 2}, prompt_tokens: 1024,
               output_tokens: 8, requests: 4, prefix_cache_hit_rate: 0.75}
)");
  ASSERT_TRUE(hits.ok()) << hits.status().message();
  EXPECT_DOUBLE_EQ((*hits)[0].serving->prefix_cache_hit_rate, 0.75);
}

TEST(ServingTest, ReadsDisaggregation) {
  auto exps = Load(R"(
    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, output_tokens: 5,
               requests: 2}
    disaggregation: {prefill: {tp_size: 2, instances: 3}, decode: {tp_size: 4, pp_size: 2}}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  const auto& d = (*exps)[0].serving->disaggregation;
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->prefill.tp, 2);
  EXPECT_EQ(d->prefill.instances, 3);
  EXPECT_EQ(d->decode.world_size(), 8);
  EXPECT_EQ(d->decode.instances, 1);
  auto bad = Load(R"(
    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, output_tokens: 5,
               requests: 2}
    disaggregation: {prefill: {tp_size: 2}}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'disaggregation.decode': is required"),
            std::string::npos)
      << bad.status().message();
}

// The load and the scheduler's caps sweep like any number: nested fields, the
// defaults' other fields kept, points named after the values.
TEST(ServingTest, TheLoadAndTheSchedulerCapsSweep) {
  auto exps = Load(R"(
    workload: {arrivals: {process: poisson, rate_per_s: [0.5, 2]}, prompt_tokens: 5,
               output_tokens: 5, requests: [10, 20]}
    scheduler: {max_num_seqs: [8, 64], block_size: 32}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 8u);
  const Experiment& last = exps->back();
  EXPECT_EQ(exps->front().name, "s_rate0.5_req10_seqs8");
  EXPECT_EQ(last.name, "s_rate2_req20_seqs64");
  EXPECT_EQ(last.sweep_name, "s");
  ASSERT_TRUE(last.serving.has_value());
  EXPECT_DOUBLE_EQ(last.serving->arrivals.rate, 2);
  EXPECT_EQ(last.serving->requests, 20);
  EXPECT_EQ(last.serving->scheduler.max_num_seqs, 64);
  EXPECT_EQ(last.serving->scheduler.block_size, 32);
  EXPECT_DOUBLE_EQ((*exps)[2].serving->arrivals.rate, 0.5);
  EXPECT_EQ((*exps)[2].serving->requests, 20);
  auto bad = Load(R"(
    workload: {arrivals: {process: poisson, rate_per_s: [1, 1]}, prompt_tokens: 5,
               output_tokens: 5, requests: 2}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'workload.arrivals.rate_per_s': sweep lists 1 "
                                        "more than once"),
            std::string::npos)
      << bad.status().message();
}

TEST(ServingTest, FixedBatchExperimentsHaveNone) {
  auto exps = Load("    tokens_to_generate: 2\n");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_FALSE((*exps)[0].serving.has_value());
}

TEST(ServingTest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* expected;
  } cases[] = {
      {"    workload: {prompt_tokens: 5, output_tokens: 5, requests: 3}\n",
       "field 'workload.arrivals': is required"},
      {"    workload: {arrivals: {process: burst}, prompt_tokens: 5, output_tokens: 5, "
       "requests: 3}\n",
       "field 'workload.arrivals.process': unknown arrival process 'burst'"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 0}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 3}\n",
       "field 'workload.arrivals.rate_per_s': must be > 0"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5}\n",
       "field 'workload': needs `requests` or `duration_s`"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: "
       "{distribution: uniform, min: 9, max: 3}, output_tokens: 5, requests: 2}\n",
       "field 'workload.prompt_tokens.max': max 3 is below min 9"},
      {"    workload: {arrivals: {process: closed_loop, concurrency: 4}, prompt_tokens: 5, "
       "output_tokens: 5, duration_s: 10}\n",
       "field 'workload.requests': a closed loop needs a request count"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2}\n    scheduler: {max_num_seqs: 0}\n",
       "field 'scheduler.max_num_seqs'"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2}\n    scheduler: {router: random}\n",
       "field 'scheduler.router': unknown router 'random'"},
      {"    slo: {ttft_ms: 5}\n", "field 'slo': needs a served workload"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2, prefix_cache_hit_rate: 1.5}\n",
       "field 'workload.prefix_cache_hit_rate': must be in [0, 1], got 1.5"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2, decode_only: true, prefix_cache_hit_rate: 0.5}\n",
       "field 'workload.prefix_cache_hit_rate': a decode-only workload has no prefill"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2, decode_only: true}\n    slo: {ttft_ms: 5}\n",
       "field 'slo.ttft_ms': a decode-only workload has no TTFT"},
      {"    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
       "output_tokens: 5, requests: 2, decode_only: true}\n"
       "    disaggregation: {prefill: {tp_size: 1}, decode: {tp_size: 2}}\n",
       "field 'workload.decode_only': a decode-only workload has no prefill to disaggregate"},
  };
  for (const Case& c : cases) {
    auto r = Load(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos)
        << r.status().message() << "\n  expected: " << c.expected;
    EXPECT_NE(r.status().message().find("experiment 's'"), std::string::npos);
  }
}

TEST(ServingTest, RequestFileRelativeToTheConfigAndItsErrors) {
  testing::ScratchDir scratch("serving_test");
  const std::filesystem::path dir = scratch.path();
  std::ofstream(dir / "good.csv") << "arrival_time_s,prompt_tokens,output_tokens\n0,10,2\n1,20,3\n";
  std::ofstream(dir / "long.csv")
      << "arrival_time_s,prompt_tokens,output_tokens\n0,10,2\n1,131000,100\n";
  const std::string config = (dir / "exp.yaml").string();
  auto good = Load("    workload: {arrivals: {process: file, path: good.csv}}\n", config);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ((*good)[0].serving->arrivals.file_requests.size(), 2u);
  // Llama-3.1-8B's context is 131072 tokens.
  auto longer = Load("    workload: {arrivals: {process: file, path: long.csv}}\n", config);
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.status().message().find("long.csv: line 3: field 'prompt_tokens': 131000 "
                                           "prompt + 100 output tokens exceed the model's context"),
            std::string::npos)
      << longer.status().message();
  auto missing = Load("    workload: {arrivals: {process: file, path: nope.csv}}\n", config);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.csv"), std::string::npos);
}

constexpr const char* kWorkload =
    "    workload: {arrivals: {process: poisson, rate_per_s: 1}, prompt_tokens: 5, "
    "output_tokens: 5, requests: 2}\n";

// issue 33: `engine:` sets the scheduler's defaults from the engine's profile;
// `scheduler:` keys override them; the engine's serving-path terms are read.
TEST(ServingTest, EngineProfilesSetTheSchedulerDefaults) {
  // vLLM 0.6 on Llama-3.1-8B (context 131072 > 32K): chunked prefill at 512.
  auto vllm = Load(std::string(kWorkload) + "    engine: {name: vllm, version: 0.6.3}\n");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  const ServingSpec& v = *(*vllm)[0].serving;
  ASSERT_TRUE(v.engine.has_value());
  EXPECT_EQ(v.engine->version, "0.6");
  EXPECT_TRUE(v.scheduler.chunked_prefill);
  EXPECT_EQ(v.scheduler.max_num_batched_tokens, 512);
  EXPECT_EQ(v.scheduler.max_num_seqs, 256);
  EXPECT_EQ(v.scheduler.block_size, 16);
  EXPECT_EQ(v.scheduler.admission, Admission::kRecompute);
  EXPECT_EQ(v.scheduler.memory_rule, KvMemoryRule::kShareOfCapacity);
  EXPECT_EQ(v.scheduler.cuda_graph_batch_sizes.size(), 35u);  // 1, 2, 4, 8, 16, …, 256
  EXPECT_EQ(v.scheduler.cuda_graph_batch_sizes.back(), 256);
  // Serving path: only the per-call host gap measured in vLLM's multi-step RFC.
  EXPECT_DOUBLE_EQ(v.path.iteration, 4e-3);
  EXPECT_EQ(
      v.path.request + v.path.token + v.path.iteration_per_request + v.path.iteration_per_worker,
      0);
  // Multi-step without chunking: the budget is max(max_model_len, 2048).
  auto steps = Load(std::string(kWorkload) +
                    "    engine: vllm\n    scheduler: {num_scheduler_steps: 10, chunked_prefill: "
                    "false, max_num_seqs: 64}\n");
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  const SchedulerSpec& st = (*steps)[0].serving->scheduler;
  EXPECT_EQ(st.num_scheduler_steps, 10);
  EXPECT_FALSE(st.chunked_prefill);
  EXPECT_EQ(st.max_num_batched_tokens, 131072);
  EXPECT_EQ(st.max_num_seqs, 64);  // the experiment's own key wins
  // TensorRT-LLM: guaranteed no evict, 32-token blocks, 0.9 of free memory,
  // whole prompts in the decodes' iterations; overridable.
  auto trt = Load(std::string(kWorkload) +
                  "    engine: {name: trtllm, iteration_overhead_us: 50}\n"
                  "    scheduler: {block_size: 64}\n");
  ASSERT_TRUE(trt.ok()) << trt.status().message();
  const ServingSpec& t = *(*trt)[0].serving;
  EXPECT_EQ(t.engine->version, "0.17");
  EXPECT_EQ(t.scheduler.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(t.scheduler.memory_rule, KvMemoryRule::kShareOfFree);
  EXPECT_EQ(t.scheduler.max_num_seqs, 2048);
  EXPECT_EQ(t.scheduler.max_num_batched_tokens, 8192);
  EXPECT_EQ(t.scheduler.block_size, 64);
  EXPECT_FALSE(t.scheduler.chunked_prefill);
  EXPECT_TRUE(t.scheduler.mix_prompts_with_decodes);
  EXPECT_TRUE(t.scheduler.cuda_graph_batch_sizes.empty());
  EXPECT_DOUBLE_EQ(t.path.iteration, 50e-6);
  const nlohmann::json j = ServingToJson(t);
  EXPECT_EQ(j["engine"]["name"], "trtllm");
  EXPECT_EQ(j["scheduler"]["admission"], "guaranteed_no_evict");
  EXPECT_EQ(j["scheduler"]["gpu_memory_utilization_of"], "free");
  // SGLang at TP2 (kHead): mem_fraction_static 0.87, token pages, its rule for running requests.
  auto sgl = Load(std::string(kWorkload) + "    engine: sglang\n");
  ASSERT_TRUE(sgl.ok()) << sgl.status().message();
  const SchedulerSpec& g = (*sgl)[0].serving->scheduler;
  EXPECT_DOUBLE_EQ(g.gpu_memory_utilization, 0.87);
  // mem_fraction_static holds weights and the KV pool; activations are outside.
  EXPECT_EQ(g.memory_rule, KvMemoryRule::kStaticShare);
  EXPECT_EQ(ServingToJson(*(*sgl)[0].serving)["scheduler"]["gpu_memory_utilization_of"], "static");
  EXPECT_EQ(g.block_size, 1);
  EXPECT_EQ(g.max_num_seqs, 0);
  EXPECT_EQ(g.max_num_batched_tokens, 8192);  // an H100: over 25 GB
  EXPECT_EQ(g.max_model_len, 131072);
  EXPECT_EQ(g.cuda_graph_batch_sizes.back(), 160);
  // PrefillAdder: prompts admitted against the remaining outputs × new_token_ratio.
  EXPECT_EQ(g.admission, Admission::kNewTokenRatio);
  EXPECT_EQ(ServingToJson(*(*sgl)[0].serving)["scheduler"]["admission"], "new_token_ratio");
  auto plain = Load(std::string(kWorkload) + "    scheduler: {admission: new_token_ratio}\n");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ((*plain)[0].serving->scheduler.admission, Admission::kNewTokenRatio);
  // event_loop_overlap: on in SGLang's profile only, a scheduler key that overrides it.
  EXPECT_TRUE(g.overlap_schedule);
  EXPECT_EQ(ServingToJson(*(*sgl)[0].serving)["scheduler"]["overlap_schedule"], true);
  EXPECT_FALSE(t.scheduler.overlap_schedule);
  EXPECT_EQ(j["scheduler"]["overlap_schedule"], false);
  EXPECT_FALSE((*plain)[0].serving->scheduler.overlap_schedule);
  auto serial = Load(std::string(kWorkload) +
                     "    engine: sglang\n    scheduler: {overlap_schedule: false}\n");
  ASSERT_TRUE(serial.ok()) << serial.status().message();
  EXPECT_FALSE((*serial)[0].serving->scheduler.overlap_schedule);
  EXPECT_EQ((*serial)[0].serving->scheduler.admission, Admission::kNewTokenRatio);
  // SGLang's overlap scheduler: no measured host gap; nothing else sourced.
  EXPECT_FALSE((*sgl)[0].serving->path.any());
  // An `engine:` key overrides the profile's term, 0 included.
  auto off = Load(std::string(kWorkload) + "    engine: {name: vllm, iteration_overhead_us: 0}\n");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE((*off)[0].serving->path.any());
  // The rule is a scheduler key like the others: SGLang's on any experiment.
  auto rule = Load(std::string(kWorkload) + "    scheduler: {gpu_memory_utilization_of: static}\n");
  ASSERT_TRUE(rule.ok()) << rule.status().message();
  EXPECT_EQ((*rule)[0].serving->scheduler.memory_rule, KvMemoryRule::kStaticShare);
}

// Without chunked prefill a prompt over the token budget is refused at load
// where the engine refuses it, and split where the engine splits it (SGLang).
TEST(ServingTest, PromptsOverTheBudgetAreRefusedOrSplitAsTheEngineDoes) {
  auto load = [](const std::string& workload, const std::string& rest) {
    return Load("    workload: {arrivals: {process: closed_loop, concurrency: 4}, " + workload +
                ", requests: 8}\n" + rest);
  };
  struct Case {
    std::string workload, rest, error;
  };
  const std::vector<Case> refused = {
      // TensorRT-LLM (budget 8192, guaranteed no evict: the prompt alone counts).
      {"prompt_tokens: 8193, output_tokens: 10", "    engine: trtllm\n",
       "experiment 's': field 'workload.prompt_tokens': prompts of up to 8193 tokens exceed the "
       "token budget (scheduler.max_num_batched_tokens 8192) with chunked prefill off: "
       "TensorRT-LLM refuses it"},
      // vLLM refuses a budget below max_model_len at startup, whatever the prompts.
      {"prompt_tokens: 10, output_tokens: 10",
       "    engine: vllm\n    scheduler: {chunked_prefill: false, max_num_batched_tokens: 8192}\n",
       "field 'scheduler.max_num_batched_tokens': is 8192, below max_model_len 131072 with "
       "chunked prefill off: vLLM refuses this at startup"},
      // No engine, recompute: 10 + 8 − 1 = 17 > 16.
      {"prompt_tokens: 10, output_tokens: 8",
       "    scheduler: {chunked_prefill: false, max_num_batched_tokens: 16}\n",
       "prompts recomputed after preemption (prompt + output − 1) of up to 17 tokens exceed"},
      // A distribution counts its upper bound.
      {"prompt_tokens: {distribution: uniform, min: 100, max: 9000}, output_tokens: 1",
       "    engine: trtllm\n", "prompts of up to 9000 tokens exceed"},
  };
  for (const Case& c : refused) {
    auto r = load(c.workload, c.rest);
    ASSERT_FALSE(r.ok()) << c.rest;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // Within the budget: 10 + 7 − 1 = 16; TensorRT-LLM's 8192 exactly; chunked prefill on.
  for (const auto& [workload, rest] : std::vector<std::pair<std::string, std::string>>{
           {"prompt_tokens: 10, output_tokens: 7",
            "    scheduler: {chunked_prefill: false, max_num_batched_tokens: 16}\n"},
           {"prompt_tokens: 8192, output_tokens: 10", "    engine: trtllm\n"},
           {"prompt_tokens: 9000, output_tokens: 10",
            "    engine: trtllm\n    scheduler: {chunked_prefill: true}\n"}}) {
    auto r = load(workload, rest);
    EXPECT_TRUE(r.ok()) << r.status().message();
  }
  // SGLang splits prompts over its chunked_prefill_size (8192).
  auto sgl = load("prompt_tokens: 20000, output_tokens: 10", "    engine: sglang\n");
  ASSERT_TRUE(sgl.ok()) << sgl.status().message();
  EXPECT_EQ((*sgl)[0].serving->scheduler.long_prompts, LongPrompts::kChunk);
  EXPECT_EQ(ServingToJson(*(*sgl)[0].serving)["scheduler"]["long_prompts"], "chunk");
  auto bad = load("prompt_tokens: 10, output_tokens: 10", "    scheduler: {long_prompts: alone}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "field 'scheduler.long_prompts': unknown 'alone' (expected refuse or chunk)"),
            std::string::npos);
}

// scheduler.limits_from: trtllm-bench sizes max_num_seqs and the token budget as
// trtllm-bench does. Llama-3.1-8B FP8 (8,030,261,248 parameters: 7.4788 GiB at
// one byte), FP8 KV, TP2 on H100s of 81,559 MiB (79.6475 GiB), 1000/1000, 0.95:
// cache (159.2949 − 7.4788) × 0.95 = 144.2253 GiB; a request 2000 × 2 × 32 × 8 ×
// 128 B = 0.12207 GiB: 1181.5 requests. Batch ≥ 1024: 256s → 1280. Tokens 2363.0
// < 4096: 256s → 2560; without chunking max(2560, 1000 + 1280) = 2560.
TEST(ServingTest, LimitsFromTrtllmBench) {
  const std::string base =
      "    engine: trtllm\n    precision: [w8a8-fp8, fp8-kv]\n"
      "    workload: {arrivals: {process: closed_loop, concurrency: 4}, prompt_tokens: 1000, "
      "output_tokens: 1000, requests: 8}\n";
  auto r =
      Load(base + "    scheduler: {limits_from: trtllm-bench, gpu_memory_utilization: 0.95}\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const SchedulerSpec& s = (*r)[0].serving->scheduler;
  EXPECT_EQ(s.limits_from, SchedulerLimits::kTrtllmBench);
  EXPECT_EQ(s.max_num_seqs, 1280);
  EXPECT_EQ(s.max_num_batched_tokens, 2560);
  EXPECT_EQ(ServingToJson(*(*r)[0].serving)["scheduler"]["limits_from"], "trtllm-bench");
  const std::vector<std::pair<std::string, std::string>> errors = {
      {base + "    scheduler: {limits_from: trtllm-bench, max_num_seqs: 64}\n",
       "field 'scheduler.max_num_seqs': is set by limits_from: trtllm-bench; drop one of them"},
      {base + "    scheduler: {limits_from: tuned}\n",
       "field 'scheduler.limits_from': unknown 'tuned' (expected given or trtllm-bench)"},
      {"    engine: vllm\n    workload: {arrivals: {process: closed_loop, concurrency: 4}, "
       "prompt_tokens: 10, output_tokens: 10, requests: 8}\n"
       "    scheduler: {limits_from: trtllm-bench}\n",
       "field 'scheduler.limits_from': trtllm-bench sizes TensorRT-LLM only"}};
  for (const auto& [body, error] : errors) {
    auto e = Load(body);
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_NE(e.status().message().find(error), std::string::npos) << e.status().message();
  }
}

// TensorRT-LLM keeps the CUDA-graph sizes up to its largest decode batch and,
// given a larger one, captures that batch too: 640 sequences and 2,048 tokens
// → …, 512, 640; 3 draft tokens per request make the token budget bind
// (2048 / 4 = 512, already a size); other engines' lists stay as given.
TEST(ServingTest, TrtllmGraphSizesStopAtItsLargestDecodeBatch) {
  const std::string workload =
      "    workload: {arrivals: {process: closed_loop, concurrency: 4}, prompt_tokens: 100, "
      "output_tokens: 100, requests: 8}\n";
  const std::string sched =
      "    scheduler: {max_num_seqs: 640, max_num_batched_tokens: 2048, "
      "cuda_graph_batch_sizes: [1, 256, 512, 1024, 8192]}\n";
  auto trt = Load("    engine: trtllm\n" + workload + sched);
  ASSERT_TRUE(trt.ok()) << trt.status().message();
  EXPECT_EQ((*trt)[0].serving->scheduler.cuda_graph_batch_sizes,
            (std::vector<int64_t>{1, 256, 512, 640}));
  auto vllm = Load("    engine: vllm\n" + workload + sched);
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  EXPECT_EQ(vllm->front().serving->scheduler.cuda_graph_batch_sizes,
            (std::vector<int64_t>{1, 256, 512, 1024, 8192}));
  ServingSpec s = *(*trt)[0].serving;
  s.scheduler.cuda_graph_batch_sizes = {1, 256, 1024};
  FitTrtllmGraphSizes(3, &s);
  EXPECT_EQ(s.scheduler.cuda_graph_batch_sizes, (std::vector<int64_t>{1, 256, 512}));
  s.scheduler.cuda_graph_batch_sizes = {1, 256};  // nothing above the cap: as given
  FitTrtllmGraphSizes(3, &s);
  EXPECT_EQ(s.scheduler.cuda_graph_batch_sizes, (std::vector<int64_t>{1, 256}));
}

// Without `engine:` nor the new keys a served experiment's JSON is as before.
TEST(ServingTest, NoEngineKeepsTheSchedulerJson) {
  auto plain = Load(kWorkload);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const nlohmann::json j = ServingToJson(*(*plain)[0].serving);
  EXPECT_FALSE(j.contains("engine"));
  EXPECT_FALSE(j["scheduler"].contains("admission"));
  EXPECT_EQ(j["scheduler"].size(), 8u);
}

TEST(ServingTest, EngineErrorsNameTheField) {
  struct Case {
    std::string body;
    const char* expected;
  } cases[] = {
      {std::string(kWorkload) + "    engine: {name: tgi}\n",
       "field 'engine.name': unknown engine 'tgi' (expected vllm, sglang or trtllm)"},
      {std::string(kWorkload) + "    engine: tgi\n", "field 'engine': unknown engine 'tgi'"},
      {std::string(kWorkload) + "    engine: {name: vllm, version: 0.5.4}\n",
       "field 'engine.version': vllm 0.5.4 has no profile (profiled: 0.6)"},
      {std::string(kWorkload) + "    engine: {name: vllm, token_overhead_us: -1}\n",
       "field 'engine.token_overhead_us': must be ≥ 0"},
      {std::string(kWorkload) + "    engine: {name: vllm, steps: 3}\n", "engine"},
      {std::string(kWorkload) + "    scheduler: {admission: evict}\n",
       "field 'scheduler.admission': unknown admission 'evict'"},
      {std::string(kWorkload) + "    scheduler: {cuda_graph_batch_sizes: [4, 2]}\n",
       "field 'scheduler.cuda_graph_batch_sizes': must be batch sizes ≥ 1 in ascending order"},
      {std::string(kWorkload) + "    scheduler: {num_scheduler_steps: 0}\n",
       "field 'scheduler.num_scheduler_steps'"},
      {std::string(kWorkload) + "    scheduler: {gpu_memory_utilization_of: weights}\n",
       "field 'scheduler.gpu_memory_utilization_of': unknown 'weights' (expected capacity, free "
       "or static)"},
      {"    engine: vllm\n", "field 'engine': needs a served workload"},
  };
  for (const Case& c : cases) {
    auto r = Load(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos)
        << r.status().message() << "\n  expected: " << c.expected;
    EXPECT_NE(r.status().message().find("experiment 's'"), std::string::npos);
  }
}

}  // namespace
}  // namespace shardscope
