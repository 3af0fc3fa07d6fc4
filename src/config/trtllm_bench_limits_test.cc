#include "config/trtllm_bench_limits.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// An 8B-like FP8 model on one 80 GiB device, 1000/1000, fraction 0.95.
TrtllmBenchInputs Small() {
  TrtllmBenchInputs in;
  in.device_memory_bytes = 80 * kGiB;
  in.param_count = 8 * kGiB;  // 8 GiB of FP8 weights
  in.bytes_per_weight = 1;
  in.bytes_per_kv_value = 1;
  in.attention_layers = 32;
  in.kv_heads = 8;
  in.head_dim = 128;
  in.mean_input = 1000;
  in.mean_output = 1000;
  in.max_input = 1000;
  in.kv_fraction = 0.95;
  return in;
}

TEST(TrtllmBenchLimitsTest, HandComputedSmallModel) {
  // KV per token 2 × 32 × 8 × 128 × 1 B = 2^16 B = 2^-14 GiB; cache (80 − 8) × 0.95
  // = 68.4 GiB; a request of 2000 tokens takes 0.1220703125 GiB: 560.33 requests.
  // Batch 560.33 in [256, 1024): up to 128s → 640. Tokens 560.33 × 2 = 1120.7 < 4096:
  // up to 256s → 1280, at least 2048. Without chunking max(2048, 1000 + 640) = 2048.
  auto out = TrtllmBenchLimitsFor(Small());
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NEAR(out->kv_cache_max_requests, 560.3328, 1e-4);
  EXPECT_EQ(out->max_batch_size, 640);
  EXPECT_EQ(out->max_num_tokens, 2048);
}

TEST(TrtllmBenchLimitsTest, LongPromptsRaiseTheBudgetWithoutChunking) {
  // A 70B-like model on two 80 GiB devices, 20000/2000: KV per token
  // 2 × 80 × 8 × 128 B = 163840 B; a request 22000 × 163840 B = 3.35693359375 GiB;
  // cache (160 − 70) × 0.95 = 85.5 GiB: 25.47 requests. Batch < 256: up to 32s,
  // at least 64 → 64. Tokens 25.47 × (1 + 10) = 280.2 → 512 → at least 2048.
  TrtllmBenchInputs in = Small();
  in.tp = 2;
  in.param_count = 70 * kGiB;
  in.attention_layers = 80;
  in.mean_input = 20000;
  in.mean_output = 2000;
  in.max_input = 20000;
  auto out = TrtllmBenchLimitsFor(in);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NEAR(out->kv_cache_max_requests, 85.5 / 3.35693359375, 1e-9);
  EXPECT_EQ(out->max_batch_size, 64);
  EXPECT_EQ(out->max_num_tokens, 20000 + 64);  // the longest prompt beside a full batch
  in.chunked_prefill = true;
  EXPECT_EQ(TrtllmBenchLimitsFor(in)->max_num_tokens, 2048);
}

TEST(TrtllmBenchLimitsTest, AtLeastOneKvHeadPerRankAndPipelineStages) {
  // TP8 over 4 KV heads counts 8 heads: KV per token doubles, requests halve.
  TrtllmBenchInputs in = Small();
  in.kv_heads = 4;
  const double four = TrtllmBenchLimitsFor(in)->kv_cache_max_requests;
  in.tp = 8;
  in.device_memory_bytes = 10 * kGiB;  // 8 devices: the same 80 GiB in all
  EXPECT_NEAR(TrtllmBenchLimitsFor(in)->kv_cache_max_requests, four / 2, 1e-9);
  // Large batches: 4096 at most, over the stages; 1024 and up in 256s; tokens
  // over 8192 in 1024s, at most 32768.
  TrtllmBenchInputs big = Small();
  big.device_memory_bytes = 800 * kGiB;  // (800 − 8) × 0.95 = 752.4 GiB: 6163.9 requests
  big.mean_input = 128;
  big.mean_output = 1872;
  big.chunked_prefill = true;  // the budget as tuned
  auto b = TrtllmBenchLimitsFor(big);
  EXPECT_EQ(b->max_batch_size, 4096);
  EXPECT_EQ(b->max_num_tokens, 4608);  // 4096 × (1 + 128/1872) = 4376.1 → 512s
  big.pp = 4;                          // 1024 per stage
  b = TrtllmBenchLimitsFor(big);
  EXPECT_EQ(b->max_batch_size, 1024);
  EXPECT_EQ(b->max_num_tokens, 2048);  // 1094.0 → 1280 → at least 2048
  big.pp = 1;
  big.mean_input = 1872;
  big.mean_output = 128;
  b = TrtllmBenchLimitsFor(big);
  EXPECT_EQ(b->max_num_tokens, 32768);  // 4096 × 15.6, capped
}

TEST(TrtllmBenchLimitsTest, RefusesWhatTrtllmBenchRefuses) {
  TrtllmBenchInputs in = Small();
  in.param_count = 81 * kGiB;
  auto heavy = TrtllmBenchLimitsFor(in);
  ASSERT_FALSE(heavy.ok());
  EXPECT_NE(heavy.status().message().find("more than the 80.00 GiB"), std::string::npos);
  in.param_count = 79.99 * kGiB;
  in.mean_input = 100000;
  auto tight = TrtllmBenchLimitsFor(in);
  ASSERT_FALSE(tight.ok());
  EXPECT_NE(tight.status().message().find("fewer than one"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
