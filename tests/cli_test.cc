// End-to-end tests: run the `shardscope` binary as a user would and check its
// exit code, stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result RunCli(const std::string& args) {
  // ctest runs tests in parallel processes: every call gets its own files.
  static int calls = 0;
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("cli_test_" + std::to_string(getpid()) + "_" + std::to_string(calls++));
  fs::create_directories(dir);
  fs::path out = dir / "stdout", err = dir / "stderr";
  std::string cmd =
      std::string(SHARDSCOPE_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

fs::path WriteConfig(const std::string& name, const std::string& text) {
  fs::path p = fs::path(::testing::TempDir()) / (std::to_string(getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p;
}

const std::string kDefaultConfig = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/experiments.yaml";

TEST(CliTest, CheckRulesOutSeed001Claims) {
  Result r = RunCli("check --config " + kDefaultConfig + " --experiment seed001_sp16_ring --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  bool saw_tps = false, saw_memory = false;
  for (const auto& c : j[0]["claims"]) {
    if (c["claim"] == "tps") {
      saw_tps = true;
      EXPECT_FALSE(c["possible"].get<bool>());
      // Below the dense bf16 compute bound, which alone allows ~0.72 M tokens/s.
      EXPECT_LT(c["limit"].get<double>(), 0.75e6);
      EXPECT_GT(j[0]["bounds"]["ttft"]["compute"].get<double>(), 12.8e6 / 1.45e6);
    }
    if (c["claim"] == "memory_per_gpu_gb") {
      saw_memory = true;
      EXPECT_FALSE(c["possible"].get<bool>());
      EXPECT_GT(c["limit"].get<double>(), 200.0);  // ~210 GB of KV cache per GPU
      EXPECT_NE(c["reason"].get<std::string>().find("KV cache"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_tps);
  EXPECT_TRUE(saw_memory);
  EXPECT_FALSE(j[0]["memory"]["fits"].get<bool>());
  // --strict turns impossible claims into a failing exit code.
  EXPECT_EQ(RunCli("check --strict --config " + kDefaultConfig + " --experiment seed001_sp16_ring")
                .exit_code,
            3);
}

TEST(CliTest, Seed001ComputeBoundMatchesTheDesignFigure) {
  // 16 H100 at 989 TFLOP/s against ~2.8e17 FLOPs for 128 × 100 000 tokens: ~0.72 M tokens/s.
  Result sp = RunCli("check --config " + kDefaultConfig + " --experiment seed001_sp16_ring --json");
  ASSERT_EQ(sp.exit_code, 0) << sp.err;
  auto j = nlohmann::json::parse(sp.out);
  EXPECT_NEAR(12.8e6 / j[0]["bounds"]["ttft"]["compute"].get<double>(), 0.72e6, 0.036e6);
  // TP8 × PP2 with 2 micro-batches also pays the pipeline fill: 1.5× the compute time.
  Result tp = RunCli("check --config " + kDefaultConfig + " --experiment seed001_tp8_pp2 --json");
  ASSERT_EQ(tp.exit_code, 0) << tp.err;
  auto k = nlohmann::json::parse(tp.out);
  EXPECT_EQ(k[0]["bounds"]["run_dominant"], "compute");
  EXPECT_NEAR(k[0]["bounds"]["tps"].get<double>(), 0.72e6 / 1.5, 0.036e6);
}

TEST(CliTest, PlanAndCheckRunOnEveryDefaultExperiment) {
  Result plan = RunCli("plan --config " + kDefaultConfig);
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("experiment seed004_layerwise"), std::string::npos);
  Result check = RunCli("check --config " + kDefaultConfig + " --json");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_GT(nlohmann::json::parse(check.out).size(), 10u);
}

struct BadInput {
  const char* label;
  const char* yaml;      // a whole experiments file
  const char* expected;  // substring of the one-line error
};

TEST(CliTest, MalformedInputsExitTwoWithOneLineAndNoOutput) {
  const BadInput cases[] = {
      {"missing field",
       "experiments:\n  - name: broken\n    hardware: h100-sxm\n"
       "    parallelism: {tp_size: 2}\n    batch_size: 2\n    sequence_length: 8\n",
       "field 'model': is required but missing"},
      {"wrong type",
       "experiments:\n  - name: broken\n    model: llama-3.1-8b\n    hardware: h100-sxm\n"
       "    parallelism: {tp_size: 2}\n    batch_size: many\n    sequence_length: 8\n",
       "field 'batch_size': expected an integer, got 'many'"},
      {"tp not dividing heads",
       "experiments:\n  - name: broken\n    model: llama-3.1-8b\n"
       "    hardware: h100-sxm\n    parallelism: {tp_size: 5}\n"
       "    batch_size: 2\n    sequence_length: 8\n",
       "field 'parallelism.tp_size': tp 5 does not divide the 32 attention heads"},
      {"unknown model",
       "experiments:\n  - name: broken\n    model: llama-9\n    hardware: h100-sxm\n"
       "    parallelism: {tp_size: 2}\n    batch_size: 2\n    sequence_length: 8\n",
       "field 'model': unknown model 'llama-9'"},
      {"world larger than cluster",
       "experiments:\n  - name: broken\n    model: llama-3.1-8b\n"
       "    hardware: {base: h100-sxm, nodes: 1}\n"
       "    parallelism: {tp_size: 8, dp_size: 2}\n"
       "    batch_size: 2\n    sequence_length: 8\n",
       "exceeds the 8 devices of cluster 'h100-sxm'"},
      {"negative batch",
       "experiments:\n  - name: broken\n    model: llama-3.1-8b\n"
       "    hardware: h100-sxm\n    parallelism: {tp_size: 2}\n"
       "    batch_size: -1\n    sequence_length: 8\n",
       "field 'batch_size': must be at least 1, got -1"},
      {"negative hardware figure",
       "experiments:\n  - name: broken\n    model: llama-3.1-8b\n"
       "    hardware: {base: h100-sxm, device: {memory_gb: -80}}\n"
       "    parallelism: {tp_size: 2}\n    batch_size: 2\n"
       "    sequence_length: 8\n",
       "memory_gb"},
  };
  for (const BadInput& c : cases) {
    fs::path cfg = WriteConfig("bad.yaml", c.yaml);
    for (const char* cmd : {"plan", "check"}) {
      Result r = RunCli(std::string(cmd) + " --config " + cfg.string());
      EXPECT_EQ(r.exit_code, 2) << c.label;
      EXPECT_EQ(r.out, "") << c.label << ": nothing written";
      EXPECT_NE(r.err.find(cfg.string()), std::string::npos) << c.label << ": " << r.err;
      EXPECT_NE(r.err.find("experiment 'broken'"), std::string::npos) << c.label << ": " << r.err;
      EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.label << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.label << ": " << r.err;
    }
  }
}

TEST(CliTest, CpuBackendRunsRealRanksAndWritesAnAnalysableTrace) {
  fs::path cfg = WriteConfig("cpu.yaml", R"(
experiments:
  - name: tiny_tp2
    model: tiny-dense
    hardware: local-cpu
    parallelism: {strategy: tensor, tp_size: 2}
    batch_size: 2
    sequence_length: 16
    tokens_to_generate: 4
    dtype: fp32
    backend: cpu
    warmup_iterations: 0
    measured_iterations: 1
)");
  fs::path store = fs::path(::testing::TempDir()) / "cpu_store";
  fs::remove_all(store);
  Result r = RunCli("run --json --config " + cfg.string() + " --out " + store.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["backend"], "cpu");
  EXPECT_EQ(j[0]["ranks"], 2);
  std::string trace = j[0]["trace"];
  ASSERT_TRUE(fs::exists(trace)) << trace;
  Result a = RunCli("analyze --format json " + trace);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("ttft"), std::string::npos);
}

TEST(CliTest, UnreadableMalformedAndUnknownExperiment) {
  Result missing = RunCli("check --config /nonexistent/experiments.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("/nonexistent/experiments.yaml: cannot read file"), std::string::npos);

  fs::path bad = WriteConfig("malformed.yaml", "experiments: [ {name: x\n");
  Result malformed = RunCli("plan --config " + bad.string());
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.err.find("malformed YAML"), std::string::npos) << malformed.err;

  Result unknown = RunCli("plan --config " + kDefaultConfig + " --experiment nope");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no experiment named 'nope'"), std::string::npos);

  Result no_flag = RunCli("plan");
  EXPECT_EQ(no_flag.exit_code, 2);
}

}  // namespace
