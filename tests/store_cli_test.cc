// The trace store from the command line (issue 16, "a store that remembers"):
// `traces list` shows and filters what each run was (experiment, hardware, dtype,
// backend), `analyze` names it, and `compare` takes several runs or a store and
// summarises ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using shardscope::testing::CliResult;
using shardscope::testing::FreshTempDir;
using shardscope::testing::RunShardscope;

// Three runs of one model, strategy, batch and sequence length, so one store folder:
// they differ only in hardware or dtype.
constexpr const char* kThreeRuns = R"(defaults:
  model: deepseek-v2-lite
  parallelism: {strategy: tensor, tp_size: 2}
  batch_size: 2
  sequence_length: 128
  tokens_to_generate: 4
  seed: 0
experiments:
  - name: tp2_h100
    hardware: h100-sxm
  - name: tp2_a100
    hardware: a100-sxm
  - name: tp2_h100_fp32
    hardware: h100-sxm
    dtype: fp32
)";

// Two 16-rank runs (tensor × expert parallel).
constexpr const char* kSixteenRanks = R"(defaults:
  model: deepseek-v2-lite
  hardware: h100-sxm
  batch_size: 8
  sequence_length: 128
  tokens_to_generate: 4
  seed: 0
experiments:
  - name: tp4_ep4
    parallelism: {strategy: tp_ep, tp_size: 4, ep_size: 4}
  - name: tp2_ep8
    parallelism: {strategy: tp_ep, tp_size: 2, ep_size: 8}
)";

struct Store {
  fs::path root;
  std::vector<std::string> traces;  // in the config's order
};

// Simulates every experiment of `config` into a fresh store.
Store Simulate(const std::string& name, const std::string& config) {
  fs::path dir = FreshTempDir(name + "_");
  std::ofstream(dir / "experiments.yaml") << config;
  Store s{dir / "traces", {}};
  CliResult r = RunShardscope("run --backend sim --decode-steps 2 --json --config " +
                              (dir / "experiments.yaml").string() + " --out " + s.root.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : nlohmann::json::parse(r.out)) s.traces.push_back(e["trace"]);
  return s;
}

const Store& ThreeRuns() {
  static const Store store = Simulate("three_runs", kThreeRuns);
  return store;
}

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  out.push_back(field);
  return out;
}

// The run-level value of `metric` in `shardscope analyze --format json` of one trace.
double AnalyzedValue(const std::string& trace, const std::string& metric) {
  CliResult r = RunShardscope("analyze --format json --metric " + metric + " " + trace);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json analysis = nlohmann::json::parse(r.out);
  for (const auto& m : analysis["metrics"]) {
    if (m["name"] == metric && m["scope"] == "") return m["value"];
  }
  ADD_FAILURE() << metric << " not in " << r.out;
  return 0;
}

TEST(StoreCliTest, RunsThatDifferOnlyInHardwareAreListedWithIt) {
  const Store& s = ThreeRuns();
  ASSERT_EQ(s.traces.size(), 3u);
  CliResult list = RunShardscope("traces list --json --root " + s.root.string());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto runs = nlohmann::json::parse(list.out);
  ASSERT_EQ(runs.size(), 3u);
  std::map<std::string, nlohmann::json> by_experiment;
  for (const auto& r : runs) {
    EXPECT_EQ(fs::path(std::string(r["trace"])).parent_path(),
              fs::path(s.traces[0]).parent_path());  // one folder for all three
    by_experiment[r["experiment"]] = r;
  }
  ASSERT_EQ(by_experiment.size(), 3u) << list.out;
  EXPECT_EQ(by_experiment["tp2_h100"]["hardware"], "h100-sxm");
  EXPECT_EQ(by_experiment["tp2_a100"]["hardware"], "a100-sxm");
  EXPECT_EQ(by_experiment["tp2_a100"]["dtype"], "bf16");
  EXPECT_EQ(by_experiment["tp2_h100_fp32"]["dtype"], "fp32");
  EXPECT_EQ(by_experiment["tp2_h100"]["backend"], "sim");
  EXPECT_EQ(by_experiment["tp2_h100"]["nodes"], 1);
  EXPECT_EQ(by_experiment["tp2_h100"]["ranks"], 2);

  // The table has the columns, one row per run.
  CliResult table = RunShardscope("traces list --root " + s.root.string());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| experiment | hardware | dtype | backend |"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("| tp2_a100 | a100-sxm | bf16 | sim | 1 node · 2 ranks |"),
            std::string::npos)
      << table.out;
  EXPECT_EQ(Lines(table.out), 2u + 3u);
}

TEST(StoreCliTest, ListFiltersOnExperimentHardwareDtypeAndBackend) {
  const Store& s = ThreeRuns();
  auto listed = [&](const std::string& filter) {
    CliResult r = RunShardscope("traces list --json --root " + s.root.string() + " " + filter);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> names;
    for (const auto& e : nlohmann::json::parse(r.out)) names.push_back(e["experiment"]);
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(listed("--hardware a100-sxm"), std::vector<std::string>{"tp2_a100"});
  EXPECT_EQ(listed("--hardware h100-sxm"), (std::vector<std::string>{"tp2_h100", "tp2_h100_fp32"}));
  EXPECT_EQ(listed("--dtype fp32"), std::vector<std::string>{"tp2_h100_fp32"});
  EXPECT_EQ(listed("--hardware h100-sxm --dtype bf16"), std::vector<std::string>{"tp2_h100"});
  EXPECT_EQ(listed("--experiment tp2_a100"), std::vector<std::string>{"tp2_a100"});
  EXPECT_EQ(listed("--backend sim").size(), 3u);
  EXPECT_TRUE(listed("--backend cpu").empty());
  EXPECT_EQ(listed("--model deepseek-v2-lite --strategy tensor").size(), 3u);
  CliResult none = RunShardscope("traces list --root " + s.root.string() + " --backend cpu");
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("match the filters"), std::string::npos) << none.out;
}

TEST(StoreCliTest, AnalyzeNamesTheRunInEveryFormat) {
  const Store& s = ThreeRuns();
  CliResult csv = RunShardscope("analyze --format csv --metric ttft " + s.traces[1]);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  auto lines = SplitLines(csv.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "trace,experiment,hardware,dtype,backend,metric,scope,value,unit,aggregation,"
            "unavailable");
  auto row = SplitCsv(lines[1]);
  ASSERT_GE(row.size(), 6u);
  EXPECT_EQ(row[0], s.traces[1]);
  EXPECT_EQ(row[1], "tp2_a100");
  EXPECT_EQ(row[2], "a100-sxm");
  EXPECT_EQ(row[3], "bf16");
  EXPECT_EQ(row[4], "sim");
  EXPECT_EQ(row[5], "ttft");

  CliResult json = RunShardscope("analyze --format json --metric ttft " + s.traces[2]);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["experiment"], "tp2_h100_fp32");
  EXPECT_EQ(j["dtype"], "fp32");
  EXPECT_EQ(j["ranks"], 2);

  CliResult md = RunShardscope("analyze --metric ttft " + s.traces[0]);
  EXPECT_NE(md.out.find("run: experiment tp2_h100 · hardware h100-sxm · dtype bf16 · backend sim "
                        "· 1 node · 2 ranks"),
            std::string::npos)
      << md.out;
}

TEST(StoreCliTest, AForeignTraceHasNoIdentity) {
  fs::path dir = FreshTempDir("foreign_");
  const fs::path trace = dir / "chrome.json";
  std::ofstream(trace) << R"({"traceEvents": [
    {"ph": "X", "name": "gemm", "cat": "compute", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
    {"ph": "X", "name": "gemm", "cat": "compute", "pid": 0, "tid": 0, "ts": 20, "dur": 10}]})";
  CliResult csv = RunShardscope("analyze --format csv --metric wall_time " + trace.string());
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  auto row = SplitCsv(SplitLines(csv.out).at(1));
  EXPECT_EQ(row[0], trace.string());
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(row[i], "") << i;
  CliResult json = RunShardscope("analyze --format json " + trace.string());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_FALSE(j.contains("experiment"));
  EXPECT_FALSE(j.contains("hardware"));
}

TEST(StoreCliTest, CompareThreeRunsHasAColumnAndRatioPerRun) {
  const Store& s = ThreeRuns();
  const std::string paths = s.traces[0] + " " + s.traces[1] + " " + s.traces[2];
  CliResult json = RunShardscope("compare --format json --metric ttft --metric tpot " + paths);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto c = nlohmann::json::parse(json.out);
  ASSERT_EQ(c["runs"].size(), 3u);
  EXPECT_EQ(c["baseline"], "tp2_h100");
  EXPECT_EQ(c["runs"][1]["hardware"], "a100-sxm");
  EXPECT_EQ(c["runs"][2]["dtype"], "fp32");
  const double ttft[3] = {AnalyzedValue(s.traces[0], "ttft"), AnalyzedValue(s.traces[1], "ttft"),
                          AnalyzedValue(s.traces[2], "ttft")};
  bool found = false;
  for (const auto& m : c["metrics"]) {
    if (m["metric"] != "ttft" || m["scope"] != "") continue;
    found = true;
    ASSERT_EQ(m["values"].size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(double(m["values"][i]), ttft[i], 1e-8 * ttft[i]) << i;
      EXPECT_NEAR(double(m["ratios"][i]), ttft[i] / ttft[0], 1e-6) << i;
    }
    EXPECT_DOUBLE_EQ(double(m["ratios"][0]), 1.0);
    EXPECT_GT(double(m["ratios"][1]), 1.0);  // an A100 is slower than an H100
  }
  EXPECT_TRUE(found) << json.out;

  // Markdown: one value column per run, labelled by the experiment.
  CliResult md = RunShardscope("compare --metric ttft " + paths);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| metric | tp2_h100 | tp2_a100 | tp2_h100_fp32 |"), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("| tp2_a100 | a100-sxm | bf16 | sim | 1 node · 2 ranks |"),
            std::string::npos)
      << md.out;
  EXPECT_EQ(md.out.find("e+0"), std::string::npos) << md.out;  // numbers as people write them

  // CSV: a line per metric and run, the identity on each.
  CliResult csv = RunShardscope("compare --format csv --metric ttft " + paths);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  auto lines = SplitLines(csv.out);
  EXPECT_EQ(lines[0],
            "metric,scope,unit,run,trace,experiment,hardware,dtype,backend,value,ratio,min,max,"
            "instances,unavailable");
  ASSERT_EQ(lines.size(), 1u + 3u) << csv.out;
  auto second = SplitCsv(lines[2]);
  EXPECT_EQ(second[0], "ttft");
  EXPECT_EQ(second[3], "tp2_a100");
  EXPECT_EQ(second[6], "a100-sxm");
  EXPECT_NEAR(std::stod(second[10]), ttft[1] / ttft[0], 1e-6);
}

TEST(StoreCliTest, CompareTakesAStoreAndABaseline) {
  const Store& s = ThreeRuns();
  CliResult c = RunShardscope("compare --format json --metric ttft --baseline " + s.traces[1] +
                              " " + s.root.string());
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto j = nlohmann::json::parse(c.out);
  ASSERT_EQ(j["runs"].size(), 3u);  // the baseline is not counted twice
  EXPECT_EQ(j["baseline"], "tp2_a100");
  EXPECT_EQ(j["runs"][0]["trace"], s.traces[1]);
  for (const auto& m : j["metrics"]) {
    if (m["metric"] == "ttft") {
      EXPECT_DOUBLE_EQ(double(m["ratios"][0]), 1.0);
    }
  }
}

TEST(StoreCliTest, CompareFiltersTheStoresRunsLikeTheList) {
  const Store& s = ThreeRuns();
  CliResult c =
      RunShardscope("compare --format json --metric ttft --hardware h100-sxm " + s.root.string());
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto j = nlohmann::json::parse(c.out);
  ASSERT_EQ(j["runs"].size(), 2u) << c.out;
  for (const auto& r : j["runs"]) EXPECT_EQ(r["hardware"], "h100-sxm");
  CliResult none = RunShardscope("compare --backend cpu " + s.root.string());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no run under " + s.root.string() + " matches the filters"),
            std::string::npos)
      << none.err;
}

TEST(StoreCliTest, CompareOfSixteenRankRunsIsSummarised) {
  static const Store s = Simulate("sixteen_ranks", kSixteenRanks);
  ASSERT_EQ(s.traces.size(), 2u);
  CliResult md = RunShardscope("compare " + s.traces[0] + " " + s.traces[1]);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  CliResult full = RunShardscope("compare --per-rank " + s.traces[0] + " " + s.traces[1]);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // Before issue 16 the two runs printed 1,607 lines, a row per rank, group and layer.
  EXPECT_LT(Lines(md.out), 400u);
  EXPECT_GT(Lines(full.out), 1000u);
  EXPECT_EQ(md.out.find("[rank 3]"), std::string::npos);
  EXPECT_NE(full.out.find("comm_time[rank 15]"), std::string::npos);

  CliResult json =
      RunShardscope("compare --format json --metric comm_time " + s.traces[0] + " " + s.traces[1]);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  bool found = false;
  const nlohmann::json comparison = nlohmann::json::parse(json.out);
  for (const auto& m : comparison["metrics"]) {
    if (m["metric"] != "comm_time" || m["scope"] != "rank *") continue;
    found = true;
    EXPECT_TRUE(m["summarised"]);
    EXPECT_EQ(m["instances"], nlohmann::json({16, 16}));
    for (int i = 0; i < 2; ++i) {
      EXPECT_LE(double(m["min"][i]), double(m["values"][i]));
      EXPECT_LE(double(m["values"][i]), double(m["max"][i]));
    }
  }
  EXPECT_TRUE(found) << json.out.substr(0, 2000);
}

TEST(StoreCliTest, BadInputExitsTwoNamingTheFileOrField) {
  const Store& s = ThreeRuns();
  CliResult one = RunShardscope("compare " + s.traces[0]);
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("compare needs at least 2"), std::string::npos) << one.err;
  EXPECT_TRUE(one.out.empty());
  CliResult store_baseline =
      RunShardscope("compare --baseline " + s.root.string() + " " + s.traces[0]);
  EXPECT_EQ(store_baseline.exit_code, 2);
  EXPECT_NE(store_baseline.err.find("holds 3 runs"), std::string::npos) << store_baseline.err;
  CliResult missing = RunShardscope("compare " + s.traces[0] + " /no/such/trace.trace");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/no/such/trace.trace"), std::string::npos) << missing.err;

  // A metadata file whose identity field has the wrong type: list, analyze and compare
  // name the file and the field.
  fs::path dir = FreshTempDir("bad_metadata_");
  fs::path run_dir = dir / "m" / "s" / "batch_1_seq_1";
  fs::create_directories(run_dir);
  fs::copy_file(s.traces[0], run_dir / "trace_x.trace");
  std::ofstream(run_dir / "metadata_x.json") << R"({"run": {"dtype": 16}})";
  const std::string meta = (run_dir / "metadata_x.json").string();
  for (const std::string& cmd : {"traces list --root " + dir.string(), "analyze " + dir.string(),
                                 "compare " + s.traces[0] + " " + dir.string()}) {
    CliResult r = RunShardscope(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find(meta + ": metadata field 'run.dtype'"), std::string::npos)
        << cmd << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd;
  }
}

}  // namespace
