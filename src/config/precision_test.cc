#include "config/precision.h"

#include <gtest/gtest.h>

#include "config/experiment_loader.h"
#include "testing/config/experiments_text.h"

namespace shardscope {
namespace {

StatusOr<std::vector<Experiment>> Load(const std::string& precision) {
  return testing::LoadExperimentsText(
      "defaults: {hardware: h100-sxm, model: llama-3.1-8b, parallelism: {strategy: tensor, "
      "tp_size: 1}, batch_size: 1, sequence_length: 128}\n"
      "experiments:\n  - name: p\n" +
      precision);
}

Precision Legacy(DType d) { return ResolvePrecision({}, d, d, d, d); }

// Without a block every role is the legacy fields'; the preset `bf16` changes
// no role either.
// Every scale kind's name parses back to it; sized kinds carry their size.
TEST(PrecisionTest, ScalesNamesRoundTrip) {
  const std::pair<Scales, std::string> cases[] = {
      {{ScaleKind::kNone, 128}, "none"},
      {{ScaleKind::kTensor, 128}, "tensor"},
      {{ScaleKind::kStaticTensor, 128}, "static_tensor"},
      {{ScaleKind::kChannel, 128}, "channel"},
      {{ScaleKind::kToken, 128}, "token"},
      {{ScaleKind::kBlock, 128}, "block_128"},
      {{ScaleKind::kGroup, 32}, "group_32"},
  };
  for (const auto& [scales, name] : cases) {
    EXPECT_EQ(ScalesName(scales), name);
    StatusOr<Scales> parsed = ParseScales(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(parsed->kind, scales.kind) << name;
    EXPECT_EQ(parsed->block, scales.block) << name;
  }
  for (const char* bad : {"block", "group_", "block_0", "block_-4", "block_1_2", "block__5",
                          "static_5", "tensor_8", "Tensor", ""}) {
    EXPECT_EQ(ParseScales(bad).status().message(),
              fmt::format("unknown scales '{}' (none, tensor, static_tensor, channel, token, "
                          "block_N, group_N)",
                          bad))
        << bad;
  }
}

TEST(PrecisionTest, WithoutRolesEverythingIsTheWorkloadsDtype) {
  const Precision p = ResolvePrecision({}, DType::kFp8, DType::kBf16, DType::kBf16, DType::kFp8);
  EXPECT_FALSE(p.roles);
  EXPECT_EQ(p.weights, DType::kFp8);
  EXPECT_EQ(p.weight_bits, 8);
  EXPECT_EQ(p.gemm_inputs, DType::kFp8);
  EXPECT_EQ(p.activations, DType::kFp8);
  EXPECT_EQ(p.all_reduce, DType::kFp8);
  EXPECT_EQ(p.kv_cache, DType::kBf16);
  EXPECT_EQ(p.lm_head, DType::kBf16);
  EXPECT_FALSE(p.QuantisedInputs());
  EXPECT_EQ(p.GemmDType(), DType::kFp8);
  // No scales: a k × n matrix is k·n elements, an input m·k.
  EXPECT_EQ(p.WeightBytes(64, 96), 64 * 96);
  EXPECT_EQ(p.InputBytes(16, 64), 16 * 64);
  EXPECT_EQ(Legacy(DType::kFp32).WeightBytes(3, 5), 60);

  PrecisionSpec bf16;
  ASSERT_TRUE(ApplyPrecisionPreset("bf16", &bf16).ok());
  const Precision b =
      ResolvePrecision(bf16, DType::kBf16, DType::kBf16, DType::kBf16, DType::kBf16);
  EXPECT_TRUE(b.roles);
  EXPECT_EQ(b.GemmDType(), DType::kBf16);
  EXPECT_FALSE(b.QuantisedInputs());
  EXPECT_EQ(b.WeightBytes(64, 96), 2 * 64 * 96);
}

// The presets' bytes, by hand.
TEST(PrecisionTest, PresetsWeightAndInputBytes) {
  auto resolve = [](std::initializer_list<const char*> names) {
    PrecisionSpec s;
    for (const char* n : names) EXPECT_TRUE(ApplyPrecisionPreset(n, &s).ok()) << n;
    return ResolvePrecision(s, DType::kBf16, DType::kBf16, DType::kBf16, DType::kBf16);
  };
  // W8A8 per tensor: one fp32 scale per matrix and per input; FP8 GEMMs;
  // activations, KV, all-reduces stay bf16; the amax pass reads the input twice.
  const Precision w8a8 = resolve({"w8a8-fp8"});
  EXPECT_EQ(w8a8.GemmDType(), DType::kFp8);
  EXPECT_TRUE(w8a8.QuantisedInputs());
  EXPECT_EQ(w8a8.WeightBytes(8192, 10240), 8192LL * 10240 + 4);
  EXPECT_EQ(w8a8.InputBytes(2048, 8192), 2048LL * 8192 + 4);
  EXPECT_EQ(w8a8.QuantReadPasses(), 2);
  EXPECT_EQ(w8a8.activations, DType::kBf16);
  EXPECT_EQ(w8a8.kv_cache, DType::kBf16);
  EXPECT_EQ(w8a8.all_reduce, DType::kBf16);
  // DeepSeek-V3: one fp32 scale per 128 × 128 weight block (7168 × 2048: 56 × 16
  // blocks), one per token and 128 inputs (4 tokens × 56 groups), one pass.
  const Precision ds = resolve({"deepseek-fp8"});
  EXPECT_EQ(ds.WeightBytes(7168, 2048), 7168LL * 2048 + 56 * 16 * 4);
  EXPECT_EQ(ds.InputBytes(4, 7168), 4 * 7168 + 4 * 56 * 4);
  EXPECT_EQ(ds.QuantReadPasses(), 1);
  EXPECT_DOUBLE_EQ(ds.WeightBytesPerParam(7168), 1 + 4.0 / (128 * 128));
  // W4A16: half a byte per weight and a 16-bit scale per 128 inputs of each
  // output channel; the GEMM runs at the bf16 peak on unquantised inputs.
  const Precision w4 = resolve({"w4a16"});
  EXPECT_EQ(w4.WeightName(), "int4");
  EXPECT_EQ(w4.WeightBytes(4096, 4096), 4096LL * 4096 / 2 + 32 * 4096 * 2);
  EXPECT_EQ(w4.GemmDType(), DType::kBf16);
  EXPECT_FALSE(w4.QuantisedInputs());
  EXPECT_DOUBLE_EQ(w4.WeightBytesPerParam(4096), 0.5 + 2.0 / 128);
  // fp8-kv composes with any scheme.
  const Precision kv = resolve({"w8a8-fp8", "fp8-kv"});
  EXPECT_EQ(kv.kv_cache, DType::kFp8);
  EXPECT_EQ(kv.GemmDType(), DType::kFp8);
  // W8A16 (FP8 weights, bf16 inputs) dequantises: bf16 peak.
  PrecisionSpec w8a16;
  w8a16.weights = DType::kFp8;
  EXPECT_EQ(
      ResolvePrecision(w8a16, DType::kBf16, DType::kBf16, DType::kBf16, DType::kBf16).GemmDType(),
      DType::kBf16);
}

TEST(PrecisionTest, LoaderReadsPresetsListsAndOverrides) {
  auto one = Load("    precision: w8a8-fp8\n");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ((*one)[0].precision.schemes, std::vector<std::string>{"w8a8-fp8"});
  EXPECT_EQ(PrecisionOf((*one)[0]).GemmDType(), DType::kFp8);
  EXPECT_FALSE((*one)[0].communication.dispatch_dtype);

  auto list = Load("    precision: [w8a8-fp8, fp8-kv]\n");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(PrecisionOf((*list)[0]).kv_cache, DType::kFp8);

  auto map = Load(
      "    precision: {scheme: w8a8-fp8, input_scales: token, weights: fp8, weight_scales: "
      "channel, all_reduce: fp8, lm_head: fp8}\n");
  ASSERT_TRUE(map.ok()) << map.status().message();
  const Precision p = PrecisionOf((*map)[0]);
  EXPECT_EQ(p.input_scales.kind, ScaleKind::kToken);
  EXPECT_EQ(p.weight_scales.kind, ScaleKind::kChannel);
  EXPECT_EQ(p.all_reduce, DType::kFp8);
  EXPECT_EQ(p.lm_head, DType::kFp8);
  EXPECT_EQ(p.WeightBytes(4096, 6144), 4096LL * 6144 + 6144 * 4);

  // deepseek-fp8 dispatches in FP8 unless the communication block says otherwise.
  auto ds = Load("    precision: deepseek-fp8\n");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_EQ((*ds)[0].communication.dispatch_dtype, DType::kFp8);
  auto own = Load("    precision: deepseek-fp8\n    communication: {dispatch_dtype: bf16}\n");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ((*own)[0].communication.dispatch_dtype, DType::kBf16);
}

TEST(PrecisionTest, LoaderErrorsNameTheField) {
  auto expect = [](const std::string& yaml, const std::string& part) {
    auto r = Load(yaml);
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("experiment 'p'"), std::string::npos)
        << r.status().message();
  };
  expect("    precision: w8a8\n", "field 'precision': unknown precision scheme 'w8a8'");
  expect("    precision: {scheme: [w8a8-fp8, nope]}\n", "field 'precision.scheme'");
  expect("    precision: {weights: int3}\n", "field 'precision.weights': unknown weight format");
  expect("    precision: {weights: int32}\n", "field 'precision.weights': unknown weight format");
  expect("    precision: {weight_scales: token}\n", "field 'precision.weight_scales'");
  expect("    precision: {input_scales: block_128}\n", "field 'precision.input_scales'");
  expect("    precision: {input_scales: group_0}\n", "field 'precision.input_scales'");
  expect("    precision: {kv: fp8}\n", "field 'precision.kv'");
  expect("    precision: []\n", "field 'precision': names no scheme");
}

}  // namespace
}  // namespace shardscope
