// End-to-end tests: run the `shardscope` binary as a user would and check its
// exit code, stdout and stderr.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"

namespace {

// Configured with MPI and OpenBLAS (the CPU backend's dependencies)?
#ifdef SHARDSCOPE_TEST_CPU_BACKEND
constexpr bool kCpuBackendBuilt = true;
#else
constexpr bool kCpuBackendBuilt = false;
#endif

namespace fs = std::filesystem;

using Result = shardscope::testing::CliResult;

std::string ReadFile(const fs::path& p) { return shardscope::testing::ReadWholeFile(p); }

Result RunCli(const std::string& args, const std::string& prefix = "") {
  return shardscope::testing::RunShardscope(args, prefix);
}

fs::path WriteConfig(const std::string& name, const std::string& text) {
  static const fs::path dir = shardscope::testing::FreshTempDir("cli_test_");
  fs::path p = dir / name;
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

// A served workload from a request file: per-request figures in --json; a
// broken request file is one error line naming the file, line and field, exit 2.
TEST(CliTest, ServedWorkloadFromARequestFile) {
  WriteConfig("requests.csv",
              "arrival_time_s,prompt_tokens,output_tokens\n0,128,8\n0.01,256,4\n0.02,64,16\n");
  WriteConfig("unsorted.csv", "arrival_time_s,prompt_tokens,output_tokens\n1,128,8\n0.5,256,4\n");
  const std::string experiment =
      "experiments:\n  - name: served\n    model: llama-3.1-8b\n    hardware: h100-sxm\n"
      "    parallelism: {tp_size: 2}\n    batch_size: 1\n    sequence_length: 128\n"
      "    slo: {ttft_ms: 1000}\n";
  fs::path good =
      WriteConfig("served.yaml",
                  experiment + "    workload: {arrivals: {process: file, path: requests.csv}}\n");
  Result r = RunCli("run --config " + good.string() + " --no-trace --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["metrics"]["measured_requests"], 3);
  EXPECT_GT(j[0]["metrics"]["ttft_s"]["p99"].get<double>(), 0);
  EXPECT_EQ(j[0]["metrics"]["itl_s"]["count"], 7 + 3 + 15);
  EXPECT_DOUBLE_EQ(j[0]["metrics"]["slo_attainment"].get<double>(), 1.0);

  fs::path bad =
      WriteConfig("unsorted.yaml",
                  experiment + "    workload: {arrivals: {process: file, path: unsorted.csv}}\n");
  Result b = RunCli("run --config " + bad.string() + " --no-trace");
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_EQ(b.out, "");
  EXPECT_NE(b.err.find("unsorted.csv: line 3: field 'arrival_time_s': time 0.5 is before the "
                       "previous line's 1"),
            std::string::npos)
      << b.err;
  EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << b.err;
}

// issue 17: bad input found as a new user would, each exit 2 with one clear line and no output.
TEST(CliTest, RunRefusesAFileAsStoreAndAGpuClusterOnTheCpuBackend) {
  const std::string tiny =
      "experiments:\n  - name: tiny\n    model: tiny-dense\n    hardware: HW\n"
      "    parallelism: {tp_size: 1}\n    batch_size: 1\n    sequence_length: 8\n"
      "    warmup_iterations: 0\n    measured_iterations: 1\n";
  auto with = [&](const std::string& hw) {
    std::string t = tiny;
    t.replace(t.find("HW"), 2, hw);
    return t;
  };
  fs::path cfg = WriteConfig("store_file.yaml", with("h100-sxm"));
  fs::path file = WriteConfig("not_a_dir", "x");
  Result r = RunCli("run --config " + cfg.string() + " --out " + file.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "shardscope: error: --out: trace store " + file.string() +
                       ": exists and is not a directory\n");
  if (kCpuBackendBuilt) {
    Result gpu = RunCli("run --backend cpu --no-trace --config " + cfg.string());
    EXPECT_EQ(gpu.exit_code, 2) << gpu.err;
    EXPECT_NE(gpu.err.find("experiment 'tiny': backend cpu runs on this machine's CPU cores, but "
                           "its hardware 'h100-sxm' is a gpu cluster"),
              std::string::npos)
        << gpu.err;
  }
  Result dir = RunCli("plan --config " + shardscope::testing::FreshTempDir("cli_dir").string());
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_NE(dir.err.find("is a directory, not a YAML file"), std::string::npos) << dir.err;
}

TEST(CliTest, CpuBackendRunsRealRanksAndWritesAnAnalysableTrace) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
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
  const fs::path store = shardscope::testing::FreshTempDir("cpu_store") / "store";
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

  Result negative = RunCli("run --no-trace --decode-steps -1 --config " + kDefaultConfig +
                           " --experiment seed004_layerwise");
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("--decode-steps"), std::string::npos) << negative.err;
  EXPECT_EQ(negative.out, "");
}

// A long generation is simulated up to a bound (1024 decode steps and the last,
// interpolated between) unless --decode-steps asks for more, and says so.
TEST(CliTest, LongGenerationsAreBoundedAndSaySo) {
  fs::path cfg = WriteConfig("long.yaml", R"(
experiments:
  - {name: long, model: tiny-dense, hardware: h100-sxm, parallelism: {tp_size: 1},
     batch_size: 1, sequence_length: 8, tokens_to_generate: 2000}
)");
  Result r = RunCli("run --no-trace --json --config " + cfg.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["decode_steps_simulated"], 1024) << r.out;
  EXPECT_EQ(j[0]["decode_steps"], 1999) << r.out;
  Result text = RunCli("run --no-trace --config " + cfg.string());
  EXPECT_NE(text.out.find("simulated the first 1024 of 1999 decode steps"), std::string::npos)
      << text.out;
  Result all = RunCli("run --no-trace --json --decode-steps 1999 --config " + cfg.string());
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(nlohmann::json::parse(all.out)[0]["decode_steps_simulated"], 1999) << all.out;
}

TEST(CliTest, SelectionSkipsBrokenNeighboursAndInvalidPointsCanBeSkipped) {
  fs::path cfg = WriteConfig("selection.yaml", R"(
experiments:
  - {name: broken, model: no-such-model, hardware: h100-sxm, batch_size: 1, sequence_length: 8}
  - name: s
    model: llama-3.1-8b
    hardware: h100-sxm
    parallelism: {tp_size: [3, 4, 5]}
    batch_size: 1
    sequence_length: 8
)");
  // The broken entry is not resolved when another is asked for.
  Result one = RunCli("plan --json --config " + cfg.string() + " --experiment s_tp4");
  EXPECT_EQ(one.exit_code, 0) << one.err;
  // Every invalid point is named in one error, and nothing is printed.
  Result all = RunCli("check --config " + cfg.string() + " --experiment s");
  EXPECT_EQ(all.exit_code, 2);
  EXPECT_EQ(all.out, "");
  EXPECT_NE(all.err.find("2 of 3 experiments are invalid:"), std::string::npos) << all.err;
  // --skip-invalid goes on with the valid point and warns once per skipped one.
  Result skip = RunCli("check --json --skip-invalid --config " + cfg.string() + " --experiment s");
  EXPECT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(nlohmann::json::parse(skip.out).size(), 1u);
  EXPECT_EQ(std::count(skip.err.begin(), skip.err.end(), '\n'), 2) << skip.err;
  EXPECT_NE(skip.err.find("shardscope: skipped: "), std::string::npos) << skip.err;
  Result run = RunCli("run --json --no-trace --decode-steps 1 --skip-invalid --config " +
                      cfg.string() + " --experiment s");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out).size(), 1u) << run.out;
}

// A two-rank trace with foreign-style step annotations (no phase), as importers write them.
const char kStepTrace[] = R"({"traceEvents":[
{"ph":"X","pid":0,"tid":0,"ts":0,"dur":1,"name":"gemm","cat":"compute","args":{"flops":156000000}},
{"ph":"X","pid":1,"tid":0,"ts":0,"dur":1,"name":"gemm","cat":"compute","args":{"flops":156000000}},
{"ph":"X","pid":0,"tid":1000,"ts":0,"dur":2,"name":"ProfilerStep#1","cat":"step","args":{"step":1}},
{"ph":"X","pid":1,"tid":1000,"ts":0.5,"dur":2.5,"name":"ProfilerStep#1","cat":"step","args":{"step":1}},
{"ph":"X","pid":0,"tid":1000,"ts":3,"dur":1,"name":"ProfilerStep#2","cat":"step","args":{"step":2}}
]})";

TEST(CliTest, AnalyzeAcceptsCclBenchMetricNames) {
  fs::path trace = WriteConfig("steps.json", kStepTrace);
  Result r = RunCli("analyze --format json --metric avg_step_time --metric step_time.count " +
                    trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& m : j["metrics"]) by_name[m["name"].get<std::string>()] = m;
  // Step 1 spans [0, 3] µs over both ranks, step 2 [3, 4] µs: mean 2 µs.
  ASSERT_TRUE(by_name.count("avg_step_time")) << r.out;
  EXPECT_NEAR(by_name["avg_step_time"]["value"].get<double>(), 2e-6, 1e-15);
  EXPECT_EQ(by_name["avg_step_time"]["unit"], "s");
  EXPECT_EQ(by_name["step_time.count"]["value"], 2);

  // Without metadata there is no peak: "not available", never 0.
  Result mfu = RunCli("analyze --metric mfu " + trace.string());
  ASSERT_EQ(mfu.exit_code, 0) << mfu.err;
  EXPECT_NE(mfu.out.find("| mfu |  | not available: mfu.mean: metadata lacks"), std::string::npos)
      << mfu.out;

  Result typo = RunCli("analyze --metric avg_step_tim " + trace.string());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.out, "");
  EXPECT_NE(typo.err.find("--metric avg_step_tim: unknown metric"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("closest: avg_step_time"), std::string::npos) << typo.err;
}

TEST(CliTest, AnalyzeWithAWorkloadCard) {
  fs::path trace = WriteConfig("card_steps.json", kStepTrace);
  const std::string card = std::string(SHARDSCOPE_SOURCE_DIR) +
                           "/configs/workload_cards/llama-3.1-8b-vllm-tp4-a100.yaml";
  Result r = RunCli("analyze --format json --metric mfu --metric tps --workload-card " + card +
                    " " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, double> values;
  for (const auto& m : j["metrics"]) {
    if (m["value"].is_number())
      values[m["name"].get<std::string>() + m["scope"].get<std::string>()] =
          m["value"].get<double>();
  }
  // 156e6 FLOP in 1 µs on each rank over a 4 µs wall time = 3.9e13 FLOP/s; the card's A100
  // (zoo: 312 TFLOP/s bf16) makes it 12.5 %.
  EXPECT_NEAR(values["mfu.mean"], 0.125, 1e-12);
  EXPECT_NEAR(values["mfu"], 12.5, 1e-9);
  // TPS: the card's 64 × 2048 prompt tokens over 4 µs.
  EXPECT_NEAR(values["tps"], 64.0 * 2048 / 4e-6, 1e-3);

  fs::path bad = WriteConfig("bad_card.yaml", "workload:\n  data: {batch_size: many}\n");
  Result b = RunCli("analyze --workload-card " + bad.string() + " " + trace.string());
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_EQ(b.out, "");
  EXPECT_NE(b.err.find(bad.string() + ": field 'workload.data.batch_size': expected an integer"),
            std::string::npos)
      << b.err;
}

// ---- Backend cpu: faults, Ctrl-C and launch options (docs/runtime.md, "Faults" and "Launch").

// tiny-dense TP2 on two CPU ranks, `iterations` measured generations.
std::string CpuTp2Yaml(int iterations) {
  return "experiments:\n  - name: tiny_tp2\n    model: tiny-dense\n    hardware: local-cpu\n"
         "    parallelism: {strategy: tensor, tp_size: 2}\n    batch_size: 2\n"
         "    sequence_length: 16\n    tokens_to_generate: 4\n    dtype: fp32\n"
         "    backend: cpu\n    warmup_iterations: 0\n    measured_iterations: " +
         std::to_string(iterations) + "\n";
}

// A fresh directory for one test, with tmp/ to serve as the run's TMPDIR.
fs::path Scratch(const std::string& name) {
  const fs::path d = shardscope::testing::FreshTempDir("cli_cpu_" + name);
  fs::create_directories(d / "tmp");
  return d;
}

// Starts `args` (args[0] the binary) with stdout and stderr into `out`, SIGINT at its
// default, TMPDIR set when `tmpdir` is not empty, and, with `own_group`, leading a
// process group of its own as under a shell. Returns the pid (−1 when fork fails).
pid_t Spawn(std::vector<std::string> args, const fs::path& out, const std::string& tmpdir,
            bool own_group) {
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0 && own_group) setpgid(pid, pid);  // also in the child: whichever runs first
    return pid;
  }
  if (own_group) setpgid(0, 0);
  signal(SIGINT, SIG_DFL);
  if (!tmpdir.empty()) setenv("TMPDIR", tmpdir.c_str(), 1);
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, STDERR_FILENO);
  dup2(fd, STDOUT_FILENO);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

// Regular files under `dir`, and the launcher's temporary files (shardscope-*) in `tmp`.
std::vector<std::string> FilesUnder(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(it->path().string());
  }
  return out;
}
std::vector<std::string> LauncherTempFiles(const fs::path& tmp) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(tmp)) {
    if (e.path().filename().string().starts_with("shardscope-")) out.push_back(e.path().string());
  }
  return out;
}

// Live processes whose command line contains `marker` (what `pgrep -f` finds).
std::vector<pid_t> MarkedProcesses(const std::string& marker) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::string cmdline = ReadFile(e.path() / "cmdline");  // empty for zombies
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(marker) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

// Waits up to `seconds` for `pid`; false on timeout.
bool WaitFor(pid_t pid, int seconds, int* status) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// issue 17: of two experiments, a failing second one left the first's trace in the store
// with its summary never printed.
TEST(CliTest, AFailingExperimentStillPrintsTheOnesBeforeIt) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  const fs::path dir = Scratch("partial");
  const fs::path cfg = dir / "two.yaml";
  std::ofstream(cfg) << "experiments:\n"
                        "  - {name: first, model: tiny-dense, hardware: local-cpu, backend: sim,\n"
                        "     parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 8}\n"
                        "  - {name: second, model: tiny-dense, hardware: local-cpu, backend: cpu,\n"
                        "     parallelism: {tp_size: 2}, batch_size: 1, sequence_length: 8,\n"
                        "     warmup_iterations: 0, measured_iterations: 1}\n";
  Result r = RunCli("run --config " + cfg.string() + " --out " + (dir / "store").string() +
                    " --mpirun-args --no-such-mpirun-option");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("first "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("traces"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("shardscope: error: experiment 'second'"), std::string::npos) << r.err;
}

TEST(CliTest, CpuBackendFaultStopsTheJobNamingTheRankAndTheOp) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  const fs::path dir = Scratch("fault");
  const fs::path cfg = dir / "cpu.yaml";
  std::ofstream(cfg) << CpuTp2Yaml(1);
  struct Case {
    const char* mode;
    const char* says;  // the launcher's line, from rank 1's status record
  };
  const Case cases[] = {
      {"error", "rank 1 failed in op "},
      {"throw", "rank 1 failed in op "},
      {"exit", "rank 1 exited with status 3 in op "},
      {"abort", "rank 1 crashed with signal 6 (SIGABRT) in op "},
      {"kill",
       "rank 1 died without an error message (killed, e.g. SIGKILL or the OOM killer) in "
       "op "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    const fs::path store = dir / (std::string("store_") + c.mode);
    // The timeout turns a hung job into a failure instead of a stuck test.
    Result r = RunCli("run --backend cpu --config " + cfg.string() + " --out " + store.string(),
                      "env TMPDIR=" + (dir / "tmp").string() +
                          " SHARDSCOPE_FAULT=rank=1,op=L1.attention,mode=" + c.mode +
                          " timeout -s KILL 120 ");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(
        r.err.find(std::string("shardscope: error: experiment 'tiny_tp2': backend cpu: ") + c.says),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("'L1.attention' (attention, layer 1, prefill)"), std::string::npos)
        << r.err;
    EXPECT_TRUE(FilesUnder(store).empty()) << "a failed run left files in the store";
    EXPECT_TRUE(LauncherTempFiles(dir / "tmp").empty());
  }
  // The "throw" and "error" lines say why.
  Result thrown = RunCli("run --backend cpu --config " + cfg.string() + " --no-trace",
                         "SHARDSCOPE_FAULT=rank=0,op=lm_head,phase=decode:1,mode=throw ");
  EXPECT_NE(thrown.err.find("rank 0 failed in op "), std::string::npos) << thrown.err;
  EXPECT_NE(thrown.err.find("'lm_head' (lm_head, decode step 1): exception: injected fault"),
            std::string::npos)
      << thrown.err;
  // A malformed spec is bad input, before anything runs.
  Result bad = RunCli("run --backend cpu --config " + cfg.string(), "SHARDSCOPE_FAULT=rank=1 ");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("SHARDSCOPE_FAULT 'rank=1': fields 'rank' and 'op' are required"),
            std::string::npos)
      << bad.err;
}

// Faults under load: one rank killed in the middle of decoding, or hung in
// front of a collective, ends the job by itself — naming the rank and the op —
// with nothing left in the store, and a run right after succeeds. The guard
// (`timeout`, 60 s) only turns a regression into a failure instead of a stuck test.
TEST(CliTest, CpuBackendKilledOrHungRankMidDecodeEndsTheJob) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  const fs::path dir = Scratch("under_load");
  // The config's name is the marker: the launcher, mpirun and every rank have it in argv.
  const std::string marker = "under_load_marker_" + std::to_string(getpid());
  const fs::path cfg = dir / (marker + ".yaml");
  std::ofstream(cfg) << CpuTp2Yaml(1);
  const fs::path store = dir / "store";
  const std::string run = "run --backend cpu --config " + cfg.string() + " --out " +
                          store.string() + " --hang-timeout 2";
  struct Case {
    const char* mode;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {"kill",
       {"rank 1 died without an error message (killed, e.g. SIGKILL or the OOM killer) in op ",
        "'L1.attention_decode' (attention_decode, layer 1, decode step 1)"}},
      {"hang",
       {"the job hung: no rank started an op for 2 s (--hang-timeout): rank 1 stopped in op ",
        "'L1.attention_decode' (attention_decode, layer 1, decode step 1) (not waiting on a "
        "peer)",
        "rank 0 waits on its peers in op ", "mpirun was stopped"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    const auto start = std::chrono::steady_clock::now();
    Result r = RunCli(
        run, "env TMPDIR=" + (dir / "tmp").string() +
                 " SHARDSCOPE_FAULT=rank=1,op=L1.attention_decode,phase=decode:1,mode=" + c.mode +
                 " timeout -s KILL 60 ");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_LT(seconds, 50.0) << "the job did not end by itself";
    std::cerr << c.mode << ": the job ended after " << seconds << " s\n";
    for (const std::string& line : c.says) {
      EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
    }
    EXPECT_TRUE(FilesUnder(store).empty()) << "a failed run left files in the store";
    EXPECT_TRUE(LauncherTempFiles(dir / "tmp").empty());
    const std::vector<pid_t> left = MarkedProcesses(marker);
    EXPECT_TRUE(left.empty()) << left.size() << " processes of the run are still alive";
    for (pid_t p : left) kill(p, SIGKILL);
    Result again = RunCli(run, "env TMPDIR=" + (dir / "tmp").string() + " timeout -s KILL 60 ");
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(FilesUnder(store).size(), 2u) << "one trace and its metadata";
    fs::remove_all(store);
  }
}

TEST(CliTest, CpuBackendCtrlCEndsEveryRankAndLeavesNothing) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  for (const bool to_group : {false, true}) {
    SCOPED_TRACE(to_group ? "SIGINT to the launcher's process group" : "SIGINT to the launcher");
    const fs::path dir = Scratch(to_group ? "ctrlc_group" : "ctrlc_pid");
    // The config's name is the marker: the launcher, mpirun and every rank have it in argv.
    const std::string marker =
        "ctrlc_marker_" + std::to_string(getpid()) + (to_group ? "_group" : "_pid");
    const fs::path cfg = dir / (marker + ".yaml");
    std::ofstream(cfg) << CpuTp2Yaml(1000000);  // runs until interrupted
    const fs::path store = dir / "store", tmp = dir / "tmp", err = dir / "stderr";
    std::vector<std::string> args = {SHARDSCOPE_BINARY, "run", "--backend", "cpu",
                                     "--config",        cfg,   "--out",     store};
    // The launcher, leading its own process group as under a shell.
    const pid_t pid = Spawn(args, err, tmp.string(), /*own_group=*/true);
    ASSERT_GE(pid, 0);
    // Launcher, mpirun and both ranks up.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (MarkedProcesses(marker).size() < 4 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const bool started = MarkedProcesses(marker).size() >= 4;
    EXPECT_TRUE(started) << ReadFile(err);
    if (started) std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the ops
    kill(to_group ? -pid : pid, SIGINT);
    int status = 0;
    const bool ended = WaitFor(pid, 60, &status);
    if (!ended) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    EXPECT_TRUE(ended) << "the launcher did not end within 60 s of SIGINT";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130)
        << "status " << status << ": " << ReadFile(err);
    EXPECT_NE(ReadFile(err).find("interrupted by SIGINT"), std::string::npos) << ReadFile(err);
    // No orphans: every process of the run is gone once the launcher has returned.
    const std::vector<pid_t> left = MarkedProcesses(marker);
    EXPECT_TRUE(left.empty()) << left.size() << " processes of the run are still alive";
    for (pid_t p : left) kill(p, SIGKILL);
    EXPECT_TRUE(FilesUnder(store).empty()) << "an interrupted run left files in the store";
    EXPECT_TRUE(LauncherTempFiles(tmp).empty());
  }
}

// The live process with `marker` on its command line whose program (argv[0]) ends
// with `program`, or -1.
pid_t MarkedProgram(const std::string& marker, const std::string& program) {
  for (pid_t p : MarkedProcesses(marker)) {
    const std::string cmdline = ReadFile(fs::path("/proc") / std::to_string(p) / "cmdline");
    const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (argv0.ends_with(program)) return p;
  }
  return -1;
}

// issue 35: SIGSEGV to mpirun blamed the ranks ("died without an error message") and
// left Open MPI's session folder; SIGSEGV to a rank names the rank and the signal.
// Either way every process of the run ends and nothing is left behind.
TEST(CliTest, CpuBackendSegvToMpirunOrARankSaysWhatHappenedAndLeavesNothing) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  for (const bool to_mpirun : {true, false}) {
    SCOPED_TRACE(to_mpirun ? "SIGSEGV to mpirun" : "SIGSEGV to rank 1");
    const fs::path dir = Scratch(to_mpirun ? "segv_mpirun" : "segv_rank");
    const std::string marker =
        "segv_marker_" + std::to_string(getpid()) + (to_mpirun ? "_mpirun" : "_rank");
    const fs::path cfg = dir / (marker + ".yaml");
    std::ofstream(cfg) << CpuTp2Yaml(1000000);  // runs until it is ended
    const fs::path store = dir / "store", tmp = dir / "tmp", err = dir / "stderr";
    std::vector<std::string> args = {SHARDSCOPE_BINARY, "run", "--backend", "cpu",
                                     "--config",        cfg,   "--out",     store};
    const pid_t pid = Spawn(args, err, tmp.string(), /*own_group=*/true);
    ASSERT_GE(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (MarkedProcesses(marker).size() < 4 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const bool started = MarkedProcesses(marker).size() >= 4;
    EXPECT_TRUE(started) << ReadFile(err);
    if (started) std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into the ops
    const pid_t mpirun = MarkedProgram(marker, "mpirun");
    pid_t target = mpirun;
    if (!to_mpirun) {  // rank 1: the second rank process mpirun started
      std::vector<pid_t> ranks;
      for (pid_t p : MarkedProcesses(marker)) {
        const std::string stat = ReadFile(fs::path("/proc") / std::to_string(p) / "stat");
        const size_t close = stat.rfind(')');
        if (close != std::string::npos &&
            std::stoi(stat.substr(close + 4, stat.find(' ', close + 4) - close - 4)) == mpirun) {
          ranks.push_back(p);
        }
      }
      std::sort(ranks.begin(), ranks.end());
      target = ranks.size() == 2 ? ranks[1] : -1;
    }
    ASSERT_GT(target, 0) << ReadFile(err);
    kill(target, SIGSEGV);
    int status = 0;
    const bool ended = WaitFor(pid, 60, &status);
    if (!ended) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    EXPECT_TRUE(ended) << "the launcher did not end within 60 s";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1)
        << "status " << status << ": " << ReadFile(err);
    const std::string said = ReadFile(err);
    if (to_mpirun) {
      EXPECT_NE(said.find("backend cpu: mpirun was killed by signal 11 (SIGSEGV), which ended its "
                          "ranks (rank 0 "),
                std::string::npos)
          << said;
      EXPECT_EQ(said.find("died without an error message"), std::string::npos) << said;
    } else {
      EXPECT_NE(said.find("backend cpu: rank 1 crashed with signal 11 (SIGSEGV) in op "),
                std::string::npos)
          << said;
    }
    const std::vector<pid_t> left = MarkedProcesses(marker);
    EXPECT_TRUE(left.empty()) << left.size() << " processes of the run are still alive";
    for (pid_t p : left) kill(p, SIGKILL);
    EXPECT_TRUE(FilesUnder(store).empty()) << "the run left files in the store";
    EXPECT_TRUE(LauncherTempFiles(tmp).empty());
    // Open MPI's session folder of this mpirun (TMPDIR/ompi.<host>.<uid>/pid.<pid>).
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(tmp, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      EXPECT_NE(it->path().filename().string(), "pid." + std::to_string(mpirun))
          << "Open MPI's session folder is left: " << it->path();
    }
  }
}

// issue 17: Ctrl-C during a traced simulation left a hidden temporary trace (1.3 GB) and an
// orphan metadata file in the store.
TEST(CliTest, InterruptedSimulationLeavesNothingInTheStore) {
  const fs::path dir = Scratch("sim_interrupt");
  const fs::path cfg = dir / "long.yaml", store = dir / "store", err = dir / "stderr";
  std::ofstream(cfg) << "experiments:\n  - {name: long, model: deepseek-v3, hardware: h100-sxm,\n"
                        "     parallelism: {ep_size: 64, tp_size: 2}, batch_size: 64,\n"
                        "     sequence_length: 4096, tokens_to_generate: 400}\n";
  for (const int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig == SIGINT ? "SIGINT" : "SIGTERM");
    fs::remove_all(store);
    std::vector<std::string> args = {SHARDSCOPE_BINARY, "run", "--config", cfg, "--out", store};
    const pid_t pid = Spawn(args, err, "", /*own_group=*/false);
    ASSERT_GE(pid, 0);
    // Signalled once the run is writing: its metadata file is in the store.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (FilesUnder(store).empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(FilesUnder(store).empty()) << ReadFile(err);
    kill(pid, sig);
    int status = 0;
    const bool ended = WaitFor(pid, 60, &status);
    if (!ended) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    EXPECT_TRUE(ended);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130)
        << "status " << status << ": " << ReadFile(err);
    EXPECT_NE(ReadFile(err).find("experiment 'long': interrupted"), std::string::npos)
        << ReadFile(err);
    EXPECT_TRUE(FilesUnder(store).empty()) << "an interrupted run left files in the store";
  }
}

TEST(CliTest, CpuBackendRunsThroughAHostFile) {
  if (!kCpuBackendBuilt) GTEST_SKIP() << "built without MPI or OpenBLAS";
  const fs::path dir = Scratch("hostfile");
  const fs::path cfg = dir / "cpu.yaml", hosts = dir / "hosts", store = dir / "store";
  std::ofstream(cfg) << CpuTp2Yaml(1);
  std::ofstream(hosts) << "localhost slots=4\n";
  Result r = RunCli("run --json --backend cpu --hostfile " + hosts.string() +
                        " --mpirun-args \"--bind-to none\" --config " + cfg.string() + " --out " +
                        store.string(),
                    "timeout -s KILL 120 ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["ranks"], 2);
  ASSERT_TRUE(fs::exists(j[0]["trace"].get<std::string>()));
  // Clock offsets on one host: 0 for rank 0, within half the round trip of 0 for rank 1.
  auto meta = nlohmann::json::parse(ReadFile(j[0]["metadata"].get<std::string>()));
  const auto& offsets = meta["cpu"]["clock_offsets_ns"];
  const auto& round_trips = meta["cpu"]["clock_round_trips_ns"];
  ASSERT_EQ(offsets.size(), 2u);
  ASSERT_EQ(round_trips.size(), 2u);
  EXPECT_EQ(offsets[0], 0);
  EXPECT_LE(std::llabs(offsets[1].get<int64_t>()), round_trips[1].get<int64_t>() / 2 + 1);

  Result missing = RunCli("run --backend cpu --hostfile " + (dir / "nope").string() + " --config " +
                          cfg.string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find((dir / "nope").string()), std::string::npos) << missing.err;
}

TEST(CliTest, AnalyzeKinetoEightRankDirectoryAsOneRun) {
  const fs::path dir = fs::path(SHARDSCOPE_SOURCE_DIR) / ".." / "shared" / "testdata" / "kineto" /
                       "param_dlrm_8rank";
  if (!fs::exists(dir))
    GTEST_SKIP() << "no Kineto test data at " << dir << " (../shared is absent)";
  Result r = RunCli("analyze --format json " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_object()) << "one run expected, not one per file";
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& m : j["metrics"]) {
    by_key[m["name"].get<std::string>() + "[" + m["scope"].get<std::string>() + "]"] = m;
  }
  EXPECT_EQ(by_key["ranks[]"]["value"], 8);
  EXPECT_EQ(by_key["missing_ranks[]"]["value"], 0);
  EXPECT_EQ(by_key["comm_ops[]"]["value"], 64);  // 8 NCCL kernels per rank
  // Busy time of rank 1 as tests/data/real_traces/kineto_expected.py computes it.
  EXPECT_NEAR(by_key["busy_time[rank 1]"]["value"].get<double>(), 12321000e-9, 1e-12);
  // Sizes from the host calls' "Input Dims" (kineto_expected.py: 2,549,700 B per rank). The
  // traces name no process group, but every rank of the world ran the same calls, so each
  // collective's group is the world (docs/trace_format.md): wire bytes within the bus
  // factors' range, (n−1)/n to 2(n−1)/n of the payload.
  const double payload = 8 * 2549700.0;
  EXPECT_NEAR(by_key["payload_bytes[]"]["value"].get<double>(), payload, 1e-6);
  ASSERT_FALSE(by_key["traffic_bytes[]"]["value"].is_null());
  const double traffic = by_key["traffic_bytes[]"]["value"].get<double>();
  EXPECT_GE(traffic, payload * 7 / 8);
  EXPECT_LE(traffic, payload * 2 * 7 / 8);

  // Seven of the eight ranks: analysed, the missing one reported.
  const fs::path part = shardscope::testing::FreshTempDir("dlrm_7");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("worker5_", 0) != 0) {
      fs::copy_file(e.path(), part / e.path().filename());
    }
  }
  Result seven = RunCli("analyze --metric ranks --metric missing_ranks " + part.string());
  ASSERT_EQ(seven.exit_code, 0) << seven.err;
  EXPECT_NE(seven.err.find("warning: world size 8, but no trace for rank 5 (1 of 8 ranks missing)"),
            std::string::npos)
      << seven.err;
  EXPECT_NE(seven.out.find("| missing_ranks |  | 1 |"), std::string::npos) << seven.out;

  Result bad = RunCli("analyze --trace-format perfetto " + dir.string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("unknown trace format 'perfetto'"), std::string::npos) << bad.err;
}

// The metrics CSV of `analyze PATH` without its first column (the trace's path).
std::string MetricsWithoutPath(const std::string& csv) {
  std::string out;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) out += line.substr(line.find(',') + 1) + "\n";
  return out;
}

TEST(CliTest, GzipTraceIsStoredListedAndAnalysedLikeThePlainOne) {
  const fs::path dir = Scratch("gzip_trace");
  const std::string cfg = std::string(SHARDSCOPE_SOURCE_DIR) + "/python/tests/data/small.yaml";
  const std::string run = "run --config " + cfg + " --experiment v2lite_tp2 --json --out ";
  Result plain = RunCli(run + (dir / "plain").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  Result gz = RunCli(run + (dir / "gz").string() + " --trace-compression gzip");
  ASSERT_EQ(gz.exit_code, 0) << gz.err;
  const std::string plain_trace = nlohmann::json::parse(plain.out)[0]["trace"];
  const std::string gz_trace = nlohmann::json::parse(gz.out)[0]["trace"];
  EXPECT_NE(plain_trace.find(".trace"), std::string::npos);
  ASSERT_GE(gz_trace.size(), 9u);
  EXPECT_EQ(gz_trace.substr(gz_trace.size() - 9), ".trace.gz") << gz_trace;
  // Nothing else in the store: no temporary file, one metadata file.
  std::vector<std::string> names;
  for (const auto& f : FilesUnder(dir / "gz")) names.push_back(fs::path(f).filename().string());
  EXPECT_EQ(names.size(), 2u);

  Result list = RunCli("traces list --json --root " + (dir / "gz").string());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto listed = nlohmann::json::parse(list.out);
  ASSERT_EQ(listed.size(), 1u) << list.out;
  EXPECT_EQ(listed[0]["trace"], gz_trace);

  // The same metrics from either file, and the gzip one finds its metadata.
  Result a = RunCli("analyze --format csv " + plain_trace);
  Result b = RunCli("analyze --format csv " + gz_trace);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(MetricsWithoutPath(a.out), MetricsWithoutPath(b.out));
  Result bj = RunCli("analyze --format json " + gz_trace);
  EXPECT_NE(bj.out.find("metadata_"), std::string::npos) << bj.out.substr(0, 500);
  // A directory holding only the gzip trace is found too.
  Result d = RunCli("analyze --format csv " + (dir / "gz").string());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(MetricsWithoutPath(d.out), MetricsWithoutPath(b.out));

  // Truncated: a clear error naming the file, exit 2.
  std::string bytes = ReadFile(gz_trace);
  const fs::path cut = dir / "cut.trace.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  Result c = RunCli("analyze " + cut.string());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find(cut.string()), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("truncated"), std::string::npos) << c.err;

  Result bad = RunCli(run + (dir / "bad").string() + " --trace-compression zip");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("none or gzip"), std::string::npos) << bad.err;
}

// issue 33: --decode-steps on a served experiment is an error naming the flag
// and the experiment, before anything runs (exit 2, nothing printed).
TEST(CliTest, DecodeStepsOnAServedExperimentIsAnError) {
  const std::string serving = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/serving.yaml";
  Result r = RunCli("run --no-trace --decode-steps 2 --config " + serving +
                    " --experiment serve_llama8b_tp1_rate2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--decode-steps 2: experiment 'serve_llama8b_tp1_rate2' is a served"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// issue 33: a TensorRT-LLM-profile max-throughput run (a closed loop of 1024
// requests on Llama-3.1-70B at TP4) never preempts; the same load with the
// vLLM 0.6 profile (multi-step 10) does (configs/serving_engines.yaml).
TEST(CliTest, TrtllmProfileMaxThroughputRunDoesNotPreempt) {
  const std::string config = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/serving_engines.yaml";
  Result trt =
      RunCli("run --no-trace --config " + config + " --experiment engine_trtllm017_max_throughput");
  ASSERT_EQ(trt.exit_code, 0) << trt.err;
  EXPECT_NE(trt.out.find("0 rejected (never fit the KV cache), 0 preemptions"), std::string::npos)
      << trt.out;
  EXPECT_NE(trt.out.find("engine trtllm 0.17: guaranteed_no_evict admission, 1 scheduler step "
                         "per call, no CUDA graphs"),
            std::string::npos)
      << trt.out;
  Result vllm =
      RunCli("run --no-trace --config " + config + " --experiment engine_vllm06_multistep");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  EXPECT_EQ(vllm.out.find(", 0 preemptions"), std::string::npos) << vllm.out;
  EXPECT_NE(vllm.out.find(" preemptions"), std::string::npos) << vllm.out;
  // The profile's sourced serving-path term is stated; TensorRT-LLM's are all 0.
  EXPECT_NE(vllm.out.find("  serving path: 4000 µs per scheduler call\n"), std::string::npos)
      << vllm.out;
  EXPECT_EQ(trt.out.find("serving path:"), std::string::npos) << trt.out;
}

}  // namespace

TEST(CliTest, CollectivePrintsNcclTestsTablesAndDeepEpFigures) {
  Result r =
      RunCli("collective --hardware h100-sxm --nodes 2 --ranks 16 --op all_reduce --sizes 8:8G");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| size_bytes | count | type | time_us | algbw_gb_s | busbw_gb_s | "
                       "algorithm | protocol | bound |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| 8589934592 | 2147483648 | float |"), std::string::npos);
  EXPECT_NE(r.out.find("nvls_tree"), std::string::npos);
  EXPECT_NE(r.out.find("| tree | ll |"), std::string::npos);  // small messages
  Result d = RunCli(
      "collective --hardware h800 --nodes 8 --op dispatch --kernel normal --tokens 4096 "
      "--hidden 7168 --topk 8 --experts 256 --group-limit 4 --format csv");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("time_us,rdma_gb_s,nvlink_gb_s"), std::string::npos) << d.out;
  for (const char* bad : {"--op all_sum", "--sizes 8:1T", "--sizes 64:8", "--ranks 200",
                          "--algorithm star", "--protocol fast", "--format xml"}) {
    SCOPED_TRACE(bad);
    Result e = RunCli(std::string("collective --hardware h100-sxm ") + bad);
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_EQ(e.out, "");
    EXPECT_NE(e.err.find("shardscope: error: "), std::string::npos) << e.err;
  }
}

// run --protocol / --all-to-all replace the experiment's `communication:`
// choices: the forced protocol moves the TP all-reduces' time, the forced
// all-to-all kind the EP prefill's, the metadata records them, and an unknown
// value is exit 2 with one line.
TEST(CliTest, RunForcesTheProtocolAndTheAllToAllKind) {
  const fs::path tp = WriteConfig("protocol.yaml", R"(experiments:
  - name: tp8
    model: {base: llama-3.1-8b, num_layers: 4}
    parallelism: {tp_size: 8}
    batch_size: 8
    sequence_length: 1024
    tokens_to_generate: 4
    hardware: {base: h100-sxm, nodes: 1}
  - name: ep16
    model: {base: deepseek-v3, num_layers: 4}
    parallelism: {ep_size: 16}
    batch_size: 64
    sequence_length: 512
    tokens_to_generate: 4
    hardware: {base: h100-sxm, nodes: 2}
)");
  auto run = [&](const std::string& experiment, const std::string& flags) {
    Result r = RunCli("run --config " + tp.string() + " --experiment " + experiment +
                      " --no-trace --json " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)[0] : nlohmann::json::object();
  };
  // Decode all-reduces are small: auto picks LL; Simple forced over a ring is slower.
  const auto automatic = run("tp8", "");
  const auto ll = run("tp8", "--protocol ll");
  const auto simple = run("tp8", "--algorithm ring --protocol simple");
  ASSERT_TRUE(automatic.contains("tpot_s") && ll.contains("tpot_s") && simple.contains("tpot_s"));
  EXPECT_DOUBLE_EQ(ll["tpot_s"].get<double>(), automatic["tpot_s"].get<double>());
  EXPECT_GT(simple["tpot_s"].get<double>(), 1.2 * ll["tpot_s"].get<double>());
  // The EP prefill: NCCL's pairwise all-to-all puts every (token, expert) pair on the
  // NIC, the hierarchical kernels (auto on a tuned H100 cluster) each token once per node.
  const auto hierarchical = run("ep16", "");
  const auto nccl = run("ep16", "--all-to-all nccl");
  ASSERT_TRUE(hierarchical.contains("ttft_s") && nccl.contains("ttft_s"));
  EXPECT_GT(nccl["ttft_s"].get<double>(), 1.1 * hierarchical["ttft_s"].get<double>());
  EXPECT_DOUBLE_EQ(run("ep16", "--all-to-all hierarchical")["ttft_s"].get<double>(),
                   hierarchical["ttft_s"].get<double>());
  // The trace's metadata records the experiment as it ran.
  const fs::path store = shardscope::testing::FreshTempDir("cli_test_a2a_");
  Result traced = RunCli("run --config " + tp.string() +
                         " --experiment ep16 --decode-steps 1 --json --protocol ll128 "
                         "--all-to-all low_latency --out " +
                         store.string());
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  const auto meta = nlohmann::json::parse(
      ReadFile(nlohmann::json::parse(traced.out)[0]["metadata"].get<std::string>()));
  EXPECT_EQ(meta["experiment"]["communication"]["protocol"], "ll128");
  EXPECT_EQ(meta["experiment"]["communication"]["all_to_all"]["prefill"], "low_latency");
  EXPECT_EQ(meta["experiment"]["communication"]["all_to_all"]["decode"], "low_latency");
  // Its comm events say how they ran; so do the TP all-reduces', with NCCL's protocol.
  const std::string ep_trace = ReadFile(nlohmann::json::parse(traced.out)[0]["trace"]);
  EXPECT_NE(ep_trace.find(R"("algorithm":"low_latency","all_to_all":"low_latency")"),
            std::string::npos);
  Result tp_run = RunCli("run --config " + tp.string() +
                         " --experiment tp8 --decode-steps 1 --json --out " + store.string());
  ASSERT_EQ(tp_run.exit_code, 0) << tp_run.err;
  const std::string tp_trace = nlohmann::json::parse(tp_run.out)[0]["trace"];
  EXPECT_NE(ReadFile(tp_trace).find(R"("collective":"all_reduce")"), std::string::npos);
  EXPECT_NE(ReadFile(tp_trace).find(R"("algorithm":"nvls","protocol":"simple")"),
            std::string::npos);
  // The report's bandwidth section lists them.
  const fs::path html = store / "report.html";
  Result report = RunCli("report " + tp_trace + " -o " + html.string());
  if (report.exit_code == 0) {
    EXPECT_NE(ReadFile(html).find("Algorithm and protocol per collective"), std::string::npos);
  }
  for (const char* bad : {"--protocol fast", "--all-to-all pairwise"}) {
    SCOPED_TRACE(bad);
    Result e = RunCli("run --config " + tp.string() + " --experiment tp8 --no-trace " + bad);
    EXPECT_EQ(e.exit_code, 2);
    EXPECT_EQ(e.out, "");
    EXPECT_NE(e.err.find("shardscope: error: "), std::string::npos) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
  }
}
