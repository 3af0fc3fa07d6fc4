#include "config/experiment_loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "testing/config/experiments_text.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

using testing::LoadExperimentsText;

TEST(ExperimentLoaderTest, DefaultsZooAndOverrides) {
  auto exps = LoadExperimentsText(R"(
defaults: {hardware: h100-sxm, dtype: bf16, tokens_to_generate: 16, seed: 7}
experiments:
  - name: a
    model: {base: llama-3.1-8b, num_layers: 4}
    parallelism: {strategy: tensor, tp_size: 8}
    batch_size: 4
    sequence_length: 1e3
    hardware: {base: h100-sxm, nodes: 1, device: {memory_bandwidth_gb_s: 3000}}
    claims: {tpot_ms: 5}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 1u);
  const Experiment& e = (*exps)[0];
  EXPECT_EQ(e.name, "a");
  EXPECT_EQ(e.model.name, "llama-3.1-8b");
  EXPECT_EQ(e.model.num_layers, 4);
  EXPECT_EQ(e.model.hidden_size, 4096);
  EXPECT_EQ(e.cluster.num_nodes, 1);
  EXPECT_DOUBLE_EQ(e.cluster.device.memory_bandwidth, 3000e9);
  EXPECT_DOUBLE_EQ(e.cluster.device.memory_bytes, 81559.0 * 1024 * 1024);  // untouched
  EXPECT_EQ(e.parallel.tp, 8);
  EXPECT_EQ(e.workload.sequence_length, 1000);
  EXPECT_EQ(e.workload.tokens_to_generate, 16);
  EXPECT_EQ(e.workload.seed, 7u);
  EXPECT_EQ(e.backend, RunnerKind::kSim);
  EXPECT_DOUBLE_EQ(e.claims.at("tpot_ms"), 5);
}

TEST(ExperimentLoaderTest, CommunicationChoicesAndPayloadDtypes) {
  auto exps = LoadExperimentsText(R"(
defaults: {hardware: h100-sxm, model: deepseek-v2-lite, parallelism: {ep_size: 2}, batch_size: 2, sequence_length: 8}
experiments:
  - name: fp8
    dtype: fp8
    communication: {algorithm: nvls_tree, protocol: ll128,
                    all_to_all: {prefill: hierarchical, decode: nccl}}
  - name: bf16
    communication: {all_to_all: low_latency, combine_dtype: fp32}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  const Experiment& fp8 = (*exps)[0];
  EXPECT_EQ(fp8.communication.algorithm, Algorithm::kNvlsTree);
  EXPECT_EQ(fp8.communication.protocol, Protocol::kLL128);
  EXPECT_EQ(fp8.communication.prefill_all_to_all, AllToAllKind::kHierarchical);
  EXPECT_EQ(fp8.communication.decode_all_to_all, AllToAllKind::kNccl);
  // FP8 dispatch carries one fp32 scale per 128 values; the combine is BF16.
  EXPECT_EQ(DispatchBytesPerToken(fp8, 7168), 7168 + 56 * 4);
  EXPECT_EQ(CombineBytesPerToken(fp8, 7168), 2 * 7168);
  const Experiment& bf16 = (*exps)[1];
  EXPECT_EQ(bf16.communication.prefill_all_to_all, AllToAllKind::kLowLatency);
  EXPECT_EQ(bf16.communication.decode_all_to_all, AllToAllKind::kLowLatency);
  EXPECT_EQ(DispatchBytesPerToken(bf16, 100), 200);
  EXPECT_EQ(CombineBytesPerToken(bf16, 100), 400);
  for (const char* bad : {"communication: {algorithm: star}", "communication: {protocol: fast}",
                          "communication: {all_to_all: {prefill: ring}}",
                          "communication: {dispatch_dtype: fp4}", "communication: {alg: ring}"}) {
    SCOPED_TRACE(bad);
    auto e = LoadExperimentsText(
        std::string("defaults: {hardware: h100-sxm, model: deepseek-v2-lite, "
                    "parallelism: {ep_size: 2}, batch_size: 2, sequence_length: "
                    "8}\nexperiments:\n  - name: x\n    ") +
        bad + "\n");
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("field 'communication."), std::string::npos)
        << e.status().message();
  }
}

TEST(ExperimentLoaderTest, SweepsExpandAndSelect) {
  auto exps = LoadExperimentsText(R"(
defaults: {hardware: h100-sxm}
experiments:
  - name: moe
    model: deepseek-v2-lite
    parallelism: {strategy: expert, ep_size: [2, 4]}
    batch_size: 8
    sequence_length: [128, 256, 512]
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 6u);
  EXPECT_EQ((*exps)[0].name, "moe_seq128_ep2");
  EXPECT_EQ((*exps)[5].name, "moe_seq512_ep4");
  EXPECT_EQ((*exps)[5].parallel.ep, 4);
  EXPECT_EQ((*exps)[5].workload.sequence_length, 512);
  auto one = SelectExperiments(*exps, "moe_seq256_ep2", "exp.yaml");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  auto sweep = SelectExperiments(*exps, "moe", "exp.yaml");
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->size(), 6u);
  auto none = SelectExperiments(*exps, "nope", "exp.yaml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("experiments: moe"), std::string::npos);
}

// A sweep of `n` sequence lengths 1..n (and two batch sizes).
std::string BigSweep(int n) {
  std::string text =
      "experiments:\n  - name: big\n    model: llama-3.1-8b\n"
      "    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
      "    batch_size: [1, 2]\n    sequence_length: [";
  for (int i = 1; i <= n; ++i) text += (i > 1 ? ", " : "") + std::to_string(i);
  return text + "]\n";
}

TEST(ExperimentLoaderTest, OnlyReadsTheNamedPointOrSweep) {
  LoaderOptions o;
  o.only = "big_b2_seq700";
  auto one = LoadExperimentsText(BigSweep(2000), "exp.yaml", o);  // 4,000 points; one is read
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].workload.batch_size, 2);
  EXPECT_EQ((*one)[0].workload.sequence_length, 700);
  EXPECT_EQ((*one)[0].sweep_name, "big");
  o.only = "big";
  auto all = LoadExperimentsText(BigSweep(3), "exp.yaml", o);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 6u);
  o.only = "nope";
  auto none = LoadExperimentsText(BigSweep(3), "exp.yaml", o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "exp.yaml: no experiment named 'nope' (experiments: big)");
}

// Loading a sweep was quadratic in its points (4,000 points: 44 s): each point
// assigned the list's node, and yaml-cpp merged every earlier point's nodes into
// it. 8× the points must now take about 8× the time, not 64×.
// Every point of a long sweep holds its own value (the quadratic load of issue
// 35 came from each point's node sharing the earlier points' data); the load's
// speed is measured in docs/BENCHMARKS.md, not asserted here.
TEST(ExperimentLoaderTest, EveryPointOfALongSweepHoldsItsOwnValues) {
  auto exps = LoadExperimentsText(BigSweep(2000), "exp.yaml", LoaderOptions{});  // 4,000 points
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 4000u);
  for (const Experiment& e : *exps) {
    EXPECT_EQ(e.name,
              fmt::format("big_b{}_seq{}", e.workload.batch_size, e.workload.sequence_length));
  }
  EXPECT_EQ(exps->back().workload.sequence_length, 2000);
}

// A long load can say how far it is: progress gets (read, total) after each
// experiment read, total counting only what is read.
TEST(ExperimentLoaderTest, SweepLoadingReportsProgress) {
  std::vector<std::pair<int64_t, int64_t>> calls;
  LoaderOptions o;
  o.progress = [&](int64_t read, int64_t total) { calls.emplace_back(read, total); };
  ASSERT_TRUE(LoadExperimentsText(BigSweep(3), "exp.yaml", o).ok());
  ASSERT_EQ(calls.size(), 6u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i], std::make_pair(static_cast<int64_t>(i + 1), int64_t{6}));
  }
  calls.clear();
  o.only = "big_b2_seq3";  // one point of the sweep
  ASSERT_TRUE(LoadExperimentsText(BigSweep(3), "exp.yaml", o).ok());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(int64_t{1}, int64_t{1}));
}

TEST(ExperimentLoaderTest, SweepLimitIsCheckedBeforeExpanding) {
  // 2 × 6,000 points: refused before expanding, naming the experiment (was std::bad_alloc).
  std::string text =
      "experiments:\n  - name: huge\n    model: llama-3.1-8b\n"
      "    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
      "    batch_size: [1, 2]\n    sequence_length: [";
  for (int i = 1; i <= 6000; ++i) text += (i > 1 ? "," : "") + std::to_string(i);
  text += "]\n";
  auto exps = LoadExperimentsText(text);
  ASSERT_FALSE(exps.ok());
  EXPECT_EQ(exps.status().message(),
            "exp.yaml: experiment 'huge': the sweep expands to more than 10000 experiments (the "
            "limit); split it into several");
  LoaderOptions o;
  o.max_experiments = 5;
  EXPECT_FALSE(LoadExperimentsText(BigSweep(3), "exp.yaml", o).ok());
  o.max_experiments = 6;
  EXPECT_TRUE(LoadExperimentsText(BigSweep(3), "exp.yaml", o).ok());
}

TEST(ExperimentLoaderTest, SweepRejectsRepeatedAndNonScalarValues) {
  auto repeated = LoadExperimentsText(R"(
experiments:
  - {name: r, model: llama-3.1-8b, hardware: h100-sxm, batch_size: 1, sequence_length: [8, 16, 8]}
)");
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().message(),
            "exp.yaml: experiment 'r': field 'sequence_length': sweep lists 8 more than once");
  auto nested = LoadExperimentsText(R"(
experiments:
  - {name: n, model: llama-3.1-8b, hardware: h100-sxm, batch_size: [1, [2]], sequence_length: 8}
)");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("batch_size[1]"), std::string::npos)
      << nested.status().message();
}

TEST(ExperimentLoaderTest, StrategyNamesAndLayerwise) {
  auto exps = LoadExperimentsText(R"(
experiments:
  - name: lw
    model: seed-dense-16l
    hardware: {base: h100-sxm, nodes: 2}
    parallelism: {strategy: layerwise}
    batch_size: 16
    sequence_length: 128
  - name: auto
    model: seed-dense-16l
    hardware: h100-sxm
    parallelism: {tp_size: 2, pp_size: 2}
    batch_size: 4
    sequence_length: 128
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_EQ((*exps)[0].parallel.pp, 16);
  EXPECT_EQ((*exps)[1].parallel.strategy, "tp2_pp2");
}

struct BadCase {
  const char* label;
  const char* body;      // experiment fields after the name
  const char* expected;  // substring of the error
};

// Each malformed input must be rejected with the file, experiment and field named.
TEST(ExperimentLoaderTest, MalformedInputsNameFileExperimentAndField) {
  const BadCase cases[] = {
      {"missing batch",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    sequence_length: 8\n",
       "field 'batch_size': is required but missing"},
      {"wrong type",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: two}\n"
       "    batch_size: 1\n    sequence_length: 8\n",
       "field 'parallelism.tp_size': expected an integer, got 'two'"},
      {"unknown model",
       "model: gpt-9\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n",
       "field 'model': unknown model 'gpt-9'"},
      {"negative batch",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: -4\n    sequence_length: 8\n",
       "field 'batch_size': must be at least 1, got -4"},
      {"unknown field",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_szie: 2}\n"
       "    batch_size: 1\n    sequence_length: 8\n",
       "field 'parallelism.tp_szie': unknown field"},
      {"bad dtype",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    dtype: fp12\n",
       "field 'dtype': unknown dtype 'fp12'"},
      // int32 / int64 / uint8 are data-plane element types, not a dtype a config names.
      {"data-plane dtype",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    dtype: int64\n",
       "field 'dtype': unknown dtype 'int64'"},
      {"data-plane kv dtype",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    kv_dtype: uint8\n",
       "field 'kv_dtype': unknown dtype 'uint8'"},
      {"data-plane precision",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    precision: {all_reduce: int32}\n",
       "field 'precision.all_reduce': unknown dtype 'int32'"},
      {"bad backend",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    backend: tpu\n",
       "field 'backend': unknown backend 'tpu'"},
      {"unknown claim",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n    claims: {speed: 3}\n",
       "field 'claims.speed': unknown field"},
      {"unknown cluster",
       "model: llama-3.1-8b\n    hardware: dgx-z\n    parallelism: {tp_size: 1}\n"
       "    batch_size: 1\n    sequence_length: 8\n",
       "field 'hardware': unknown cluster 'dgx-z'"},
      {"missing parallelism",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    batch_size: 1\n"
       "    sequence_length: 8\n",
       "field 'parallelism': is required but missing"},
  };
  for (const BadCase& c : cases) {
    std::string text = std::string("experiments:\n  - name: bad\n    ") + c.body;
    auto exps = LoadExperimentsText(text);
    ASSERT_FALSE(exps.ok()) << c.label;
    const std::string& msg = exps.status().message();
    EXPECT_EQ(msg.rfind("exp.yaml: experiment 'bad': ", 0), 0u) << c.label << ": " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.label << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.label << ": one line";
  }
}

// Plans are checked above this layer (plan/plan_loader.h): the loader reads a
// plan that does not fit its model as written.
TEST(ExperimentLoaderTest, ReadsPlansWithoutValidatingThem) {
  auto exps = LoadExperimentsText(R"(
experiments:
  - {name: x, model: llama-3.1-8b, hardware: h100-sxm, parallelism: {tp_size: 3}, batch_size: 1, sequence_length: 8}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_EQ((*exps)[0].parallel.tp, 3);
}

TEST(ExperimentLoaderTest, DuplicateNamesAndEmptyLists) {
  auto dup = LoadExperimentsText(R"(
experiments:
  - {name: x, model: llama-3.1-8b, hardware: h100-sxm, parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 8}
  - {name: x, model: llama-3.1-8b, hardware: h100-sxm, parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 8}
)");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate experiment name 'x'"), std::string::npos);
  auto empty = LoadExperimentsText("experiments: []\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("field 'experiments'"), std::string::npos);
}

TEST(ExperimentLoaderTest, HuggingFaceConfigRelativeToTheFile) {
  namespace fs = std::filesystem;
  testing::ScratchDir scratch("hf_exp");
  const fs::path dir = scratch.path();
  fs::create_directories(dir / "llama");
  std::ofstream(dir / "llama" / "config.json") << R"({
    "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "rope_theta": 500000.0, "max_position_embeddings": 131072,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  std::ofstream(dir / "exp.yaml") << R"(
experiments:
  - name: hf
    model: {hf_config: llama/config.json}
    hardware: h100-sxm
    parallelism: {tp_size: 2}
    batch_size: 1
    sequence_length: 8
)";
  auto exps = LoadExperiments((dir / "exp.yaml").string());
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_EQ((*exps)[0].model.num_kv_heads, 8);
  EXPECT_EQ((*exps)[0].model.intermediate_size, 14336);
  std::ofstream(dir / "bad.yaml") << R"(
experiments:
  - name: hf
    model: {hf_config: llama/config.json, num_layers: 2}
    hardware: h100-sxm
    parallelism: {tp_size: 2}
    batch_size: 1
    sequence_length: 8
)";
  auto bad = LoadExperiments((dir / "bad.yaml").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'model.num_layers': unknown field"),
            std::string::npos)
      << bad.status().message();
}

TEST(ExperimentLoaderTest, CheckpointWeightsRelativeToTheFile) {
  namespace fs = std::filesystem;
  testing::ScratchDir scratch("ckpt_exp");
  const fs::path dir = scratch.path();
  fs::create_directories(dir / "ckpt");
  std::ofstream(dir / "ckpt" / "model.safetensors") << "x";
  auto write = [&](const std::string& weights) {
    std::ofstream(dir / "exp.yaml", std::ios::trunc) << R"(
defaults: {model: tiny-dense, hardware: h100-sxm, backend: cpu, batch_size: 1, sequence_length: 8,
           parallelism: {tp_size: 2}}
experiments:
  - name: seeded
  - name: loaded
    )" + weights + "\n";
    return LoadExperiments((dir / "exp.yaml").string());
  };
  auto exps = write("weights: {checkpoint: ckpt}");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_EQ((*exps)[0].workload.checkpoint, "");
  EXPECT_EQ((*exps)[1].workload.checkpoint, (dir / "ckpt").string());
  auto absent = write("weights: {checkpoint: nope}");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("experiment 'loaded': field 'weights.checkpoint': no "
                                           "such file or directory: " +
                                           (dir / "nope").string()),
            std::string::npos)
      << absent.status().message();
  auto typo = write("weights: {chekpoint: ckpt}");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("field 'weights.chekpoint'"), std::string::npos)
      << typo.status().message();
}

TEST(ExperimentLoaderTest, DefaultConfigLoads) {
  auto exps = LoadExperiments(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/experiments.yaml");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_GT(exps->size(), 10u);
}

// issue 17: batch 1e12 × prompt 1e8 overflowed 64-bit token counts and simulated
// nonsense (negative compute time) with exit 0.
TEST(ExperimentLoaderTest, TokenCountsThatOverflowAreRejected) {
  auto e = LoadExperimentsText(R"(
experiments:
  - {name: big, model: seed-dense-16l, hardware: h100-sxm, parallelism: {tp_size: 1},
     batch_size: 1000000000000, sequence_length: 100000000}
)");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("experiment 'big': field 'batch_size': batch_size × "
                                      "(sequence_length + tokens_to_generate) = 1000000000000 × "
                                      "100000001 tokens is too large"),
            std::string::npos)
      << e.status().message();
  // A large but representable workload still loads.
  EXPECT_TRUE(LoadExperimentsText(R"(
experiments:
  - {name: ok, model: seed-dense-16l, hardware: h100-sxm, parallelism: {tp_size: 1},
     batch_size: 1000000, sequence_length: 1000000}
)")
                  .ok());
}

// issue 17: a sequence beyond the model's trained context was accepted.
TEST(ExperimentLoaderTest, PositionsBeyondTheModelsContextAreRejected) {
  auto e = LoadExperimentsText(R"(
experiments:
  - {name: long, model: llama-3.1-8b, hardware: h100-sxm, parallelism: {tp_size: 1},
     batch_size: 1, sequence_length: 131072, tokens_to_generate: 2}
)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "exp.yaml: experiment 'long': field 'sequence_length': sequence_length + "
            "tokens_to_generate = 131072 + 2 = 131074 exceeds the 131072 positions model "
            "'llama-3.1-8b' was trained for (max_position_embeddings; override it in the "
            "experiment's model to simulate beyond)");
  EXPECT_TRUE(LoadExperimentsText(R"(
experiments:
  - {name: long, model: {base: llama-3.1-8b, max_position_embeddings: 200000},
     hardware: h100-sxm, parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 131072,
     tokens_to_generate: 2}
)")
                  .ok());
}

// issue 17: a missing HF config named neither the experiment nor the field.
TEST(ExperimentLoaderTest, MissingHfConfigNamesTheField) {
  auto e = LoadExperimentsText(R"(
experiments:
  - {name: hf, model: {hf_config: nothere/config.json}, hardware: h100-sxm,
     parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 8}
)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message().rfind("exp.yaml: experiment 'hf': field 'model.hf_config': no "
                                       "such file: nothere/config.json",
                                       0),
            0u)
      << e.status().message();
}

}  // namespace
}  // namespace shardscope
