#include "config/serving.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/experiment_loader.h"
#include "core/yaml_reader.h"

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
  auto node = ParseYaml(std::string(kHead) + body, path);
  if (!node.ok()) return node.status();
  return ExperimentsFromYaml(*node, path);
}

TEST(ServingTest, ReadsWorkloadSchedulerAndSlo) {
  auto exps = Load(R"(
    workload:
      arrivals: {process: gamma, rate_per_s: 4, cv: 3}
      prompt_tokens: {distribution: lognormal, mean: 1000, stddev: 300, min: 16, max: 4096}
      output_tokens: 128
      requests: 1000
      warmup_requests: 50
    scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 64, chunked_prefill: false,
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
  EXPECT_EQ(s.scheduler.max_num_batched_tokens, 2048);
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
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("serving_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
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
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardscope
