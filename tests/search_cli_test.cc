// End-to-end tests of `shardscope search`: run the binary as a user would and
// check its exit code, stdout, stderr and the files it writes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using Result = shardscope::testing::CliResult;
using shardscope::testing::ReadWholeFile;

fs::path TempPath(const std::string& name) {
  return shardscope::testing::FreshTempDir("search_cli_") / name;
}

Result RunCli(const std::string& args) { return shardscope::testing::RunShardscope(args); }

const std::string kConfig = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/search/search.yaml";

TEST(SearchCliTest, RanksPlansAndWritesTheBestAsAnExperimentCheckAndRunAccept) {
  fs::path best = TempPath("best.yaml"), csv = TempPath("plans.csv"), json = TempPath("plans.json");
  Result r = RunCli("search --config " + kConfig + " --experiment fits_only_at_tp4 --csv " +
                    csv.string() + " --json " + json.string() + " --write-best " + best.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Ranked (top"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Best: tp"), std::string::npos) << r.out;
  // Every candidate is in the CSV and the JSON, one row each.
  auto j = nlohmann::json::parse(ReadWholeFile(json));
  const size_t n = j["plans"].size();
  ASSERT_GT(n, 0u);
  EXPECT_EQ(j["enumerated"].get<size_t>(), n);
  std::string text = ReadWholeFile(csv);
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), n + 1);
  // 141 GB of weights on 48 GB devices: only plans sharding them 4 ways or more fit.
  for (const auto& p : j["plans"]) {
    const int shards = p["parallelism"]["tp"].get<int>() * p["parallelism"]["pp"].get<int>();
    if (p["outcome"] == "simulated") {
      EXPECT_GE(shards, 4) << p;
    }
    if (shards < 4) {
      EXPECT_EQ(p["outcome"], "memory") << p;
    }
  }
  // The best plan is a ready experiment.
  Result check = RunCli("check --strict --config " + best.string());
  EXPECT_EQ(check.exit_code, 0) << check.err << check.out;
  EXPECT_NE(check.out.find("fits"), std::string::npos) << check.out;
  Result run = RunCli("run --config " + best.string() + " --no-trace --decode-steps 1");
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
}

TEST(SearchCliTest, SaysWhenTheSpaceExceedsTheLimitBeforeStarting) {
  Result r =
      RunCli("search --config " + kConfig + " --experiment fits_only_at_tp4 --max-candidates 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("more than the limit of 2"), std::string::npos) << r.err;
}

TEST(SearchCliTest, NoValidPlanNamesTheConstraint) {
  Result r = RunCli("search --config " + kConfig + " --experiment nothing_fits");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no valid plan"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the memory rule removed the last"), std::string::npos) << r.err;
}

TEST(SearchCliTest, AnUnmetSloListsTheClosestPlans) {
  Result r =
      RunCli("search --config " + kConfig + " --experiment fits_only_at_tp4 --slo-ttft-ms 0.001");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no plan meets TTFT ≤ 0.001 ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the closest"), std::string::npos) << r.err;
}

// A served workload is searched by serving it: each plan's p99 TTFT / TPOT and output
// tokens/s are those `run` reports when the best plan is served on its own.
TEST(SearchCliTest, AServedWorkloadIsSearchedByServingEachPlan) {
  const fs::path cfg = TempPath("served.yaml");
  const fs::path best = TempPath("served_best.yaml"), json = TempPath("served.json");
  std::ofstream(cfg) << R"(
experiments:
  - name: s
    model: llama-3.1-8b
    hardware: {base: h100-sxm, nodes: 1}
    batch_size: 16
    sequence_length: 512
    tokens_to_generate: 32
    workload: {arrivals: {process: poisson, rate_per_s: 20}, prompt_tokens: 512,
               output_tokens: 32, requests: 60, warmup_requests: 5}
    scheduler: {grid_points_per_octave: 2}
    search: {tp: [1, 2, 4], pp: [1], sp: [1], dp: [1, 2], objective: tpot}
)";
  Result r = RunCli("search --config " + cfg.string() + " --experiment s --json " + json.string() +
                    " --write-best " + best.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(ReadWholeFile(json));
  int simulated = 0;
  for (const auto& p : j["plans"]) {
    EXPECT_EQ(p["batch"], 16) << p;  // one replica set serves every request
    if (p["outcome"] == "simulated") ++simulated;
  }
  EXPECT_GE(simulated, 4);  // tp 1, 2, 4, dp2, ...: none dominated, none bounded out
  ASSERT_FALSE(j["ranked"].empty());
  const auto& top = j["plans"][j["ranked"][0].get<size_t>()];
  Result run = RunCli("run --json --no-trace --config " + best.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto served = nlohmann::json::parse(run.out);
  ASSERT_EQ(served.size(), 1u);
  const auto& m = served[0]["metrics"];
  EXPECT_DOUBLE_EQ(top["ttft_s"].get<double>(), m["ttft_s"]["p99"].get<double>());
  EXPECT_DOUBLE_EQ(top["tpot_s"].get<double>(), m["tpot_s"]["p99"].get<double>());
  EXPECT_DOUBLE_EQ(top["tokens_per_s"].get<double>(), m["output_tokens_per_s"].get<double>());
  // Ranked by TPOT: no ranked plan has a lower p99 TPOT than the first.
  for (const auto& k : j["ranked"]) {
    EXPECT_GE(j["plans"][k.get<size_t>()]["tpot_s"].get<double>(), top["tpot_s"].get<double>());
  }
}

TEST(SearchCliTest, BadInputNamesTheField) {
  Result obj =
      RunCli("search --config " + kConfig + " --experiment fits_only_at_tp4 --objective speed");
  EXPECT_EQ(obj.exit_code, 2);
  EXPECT_NE(obj.err.find("unknown objective 'speed'"), std::string::npos) << obj.err;
  Result name = RunCli("search --config " + kConfig + " --experiment nope");
  EXPECT_EQ(name.exit_code, 2);
  EXPECT_NE(name.err.find("no experiment named 'nope'"), std::string::npos) << name.err;
}

// check and plan read search files: a search is checked (its block included)
// and its candidates counted; run runs the other experiments and says how to
// run the search; a file of searches alone is a clear error for run.
TEST(SearchCliTest, CheckAndPlanReadSearchFiles) {
  const fs::path cfg = TempPath("mixed.yaml");
  std::ofstream(cfg) << R"(
defaults: {hardware: h100-sxm, batch_size: 1, sequence_length: 64, tokens_to_generate: 2}
experiments:
  - {name: plain, model: tiny-dense, parallelism: {tp_size: 1}}
  - {name: space, model: tiny-dense, search: {tp: [1, 2], pp: [1], sp: [1], dp: [1],
                                               batch_sizes: [1], max_devices: 2}}
)";
  Result check = RunCli("check --json --config " + cfg.string());
  ASSERT_EQ(check.exit_code, 0) << check.err;
  auto j = nlohmann::json::parse(check.out);
  ASSERT_EQ(j.size(), 2u) << check.out;
  EXPECT_EQ(j[1]["experiment"], "space");
  EXPECT_EQ(j[1]["search"]["candidates"], 2) << check.out;  // tp 1 and tp 2
  EXPECT_EQ(j[1]["search"]["device_budget"], 2) << check.out;
  Result plan = RunCli("plan --config " + cfg.string() + " --experiment space");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("space: a search of 2 candidate plans on up to 2 devices"),
            std::string::npos)
      << plan.out;
  Result run = RunCli("run --no-trace --config " + cfg.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("plain"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("skipped: " + cfg.string() + ": experiment 'space' is a search"),
            std::string::npos)
      << run.err;
  Result only = RunCli("run --no-trace --config " + cfg.string() + " --experiment space");
  EXPECT_EQ(only.exit_code, 2);
  EXPECT_NE(only.err.find("`shardscope search --config " + cfg.string() + " --experiment space`"),
            std::string::npos)
      << only.err;

  const fs::path bad = TempPath("bad.yaml");
  std::ofstream(bad) << R"(
experiments:
  - {name: space, model: tiny-dense, hardware: h100-sxm, batch_size: 1, sequence_length: 64,
     search: {tp: [0]}}
)";
  Result wrong = RunCli("check --config " + bad.string());
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("search.tp"), std::string::npos) << wrong.err;
}

// The seeds' comparisons (configs/experiments.yaml), asked of search and of run +
// compare: the plans search simulates have the TTFT and TPOT that compare reads
// from the traces of the same plans run as experiments, in the same order; the
// plans search rejects for memory are the ones run marks as not fitting, with the
// same peak. Seed 003 generates 2 tokens here instead of 32 to keep its traces small.
const std::string kSeeds = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/experiments.yaml";

nlohmann::json RunJson(const std::string& config, const std::string& experiment,
                       const fs::path& store) {
  Result r = RunCli("run --json --config " + config + " --experiment " + experiment + " --out " +
                    store.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::array();
}

nlohmann::json SearchJson(const std::string& config, const std::string& experiment) {
  fs::path json = TempPath(experiment + ".json");
  Result r = RunCli("search --config " + config + " --experiment " + experiment + " --json " +
                    json.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(ReadWholeFile(json));
}

const nlohmann::json& Plan(const nlohmann::json& search, const std::string& label) {
  for (const auto& p : search["plans"]) {
    if (p["plan"] == label) return p;
  }
  ADD_FAILURE() << "no plan '" << label << "' in the search";
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

// Place of a plan in the ranking (0 = best), or -1.
int RankOf(const nlohmann::json& search, const nlohmann::json& plan) {
  const auto& ranked = search["ranked"];
  for (size_t k = 0; k < ranked.size(); ++k) {
    if (ranked[k] == plan["index"]) return static_cast<int>(k);
  }
  return -1;
}

// compare's value of `metric` for the baseline and proposed trace, and the ratio.
struct Compared {
  double baseline = 0, proposed = 0, ratio = 0;
};
Compared CompareMetric(const std::string& baseline, const std::string& proposed,
                       const std::string& metric) {
  Result r = RunCli("compare " + baseline + " " + proposed + " --format json --metric " + metric);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const auto& m : j["metrics"]) {
    if (m["metric"] == metric && m["scope"] == "" && m["values"].size() == 2 &&
        m["values"][0].is_number() && m["values"][1].is_number() && m["ratios"][1].is_number()) {
      return {m["values"][0].get<double>(), m["values"][1].get<double>(),
              m["ratios"][1].get<double>()};
    }
  }
  ADD_FAILURE() << "compare gave no " << metric << ":\n" << r.out;
  return {};
}

// Search's figure (seconds) and compare's value read from a trace agree to the
// trace's microsecond timestamps.
void ExpectSameSeconds(double search_s, double compare_s, const std::string& what) {
  EXPECT_NEAR(compare_s, search_s, 1e-6 + 1e-9 * search_s) << what;
}

TEST(SearchCliTest, TheSeedsComparisonsComeOutAsCompareReportsThem) {
  const fs::path store = TempPath("store");
  const fs::path cfg = TempPath("seeds.yaml");
  std::ofstream(cfg) << R"(
defaults: {backend: sim, seed: 0}
experiments:
  - name: s001
    model: seed-dense-16l
    hardware: {base: h100-sxm, nodes: 2}
    batch_size: 128
    sequence_length: 100000
    tokens_to_generate: 1
    search: {tp: [1, 8], pp: [1, 2], sp: [1, 16], sp_variants: [zigzag], dp: [1],
             batch_sizes: [128]}
  - name: s004
    model: seed-dense-16l
    hardware: {base: h100-sxm, nodes: 2}
    batch_size: 128
    sequence_length: 10000
    tokens_to_generate: 1
    dtype: fp16
    search: {tp: [1, 8], pp: [2, 16], sp: [1], dp: [1], batch_sizes: [128],
             micro_batch_factors: [1, 4]}
  - name: s004_layerwise_mb16
    model: seed-dense-16l
    hardware: {base: h100-sxm, nodes: 2}
    parallelism: {strategy: layerwise, pp_size: 16, micro_batches: 16}
    batch_size: 128
    sequence_length: 10000
    tokens_to_generate: 1
    dtype: fp16
  - name: s003
    model: seed-moe-61l
    hardware: h100-sxm
    batch_size: 128
    sequence_length: 1024
    tokens_to_generate: 2
    search: {tp: [1], pp: [1], sp: [1], dp: [1], ep: [8, 64, 128], batch_sizes: [128]}
  - name: s003_run
    model: seed-moe-61l
    hardware: h100-sxm
    parallelism: {strategy: expert, ep_size: [8, 64, 128]}
    batch_size: 128
    sequence_length: 1024
    tokens_to_generate: 2
)";

  // Seed 001: neither TP8×PP2 nor ring attention over SP16 fits 16 H100s; search
  // finds no plan, run marks both.
  Result s001 = RunCli("search --config " + cfg.string() + " --experiment s001");
  EXPECT_EQ(s001.exit_code, 2);
  EXPECT_NE(s001.err.find("the memory rule removed the last"), std::string::npos) << s001.err;
  for (const char* seed : {"seed001_tp8_pp2", "seed001_sp16_ring"}) {
    auto run = RunJson(kSeeds, seed, store);
    ASSERT_EQ(run.size(), 1u);
    EXPECT_FALSE(run[0]["fits_in_memory"].get<bool>()) << seed;
  }

  // Seed 004: the layer-wise plan as the seed states it (one micro-batch) does not
  // fit; with 16 micro-batches it does, and compare orders it against TP8×PP2 as
  // search ranks them.
  auto s004 = SearchJson(cfg.string(), "s004");
  const auto& tp8pp2 = Plan(s004, "tp8·pp2 mb8 b128");
  const auto& layerwise = Plan(s004, "pp16 mb1 b128");
  const auto& layerwise16 = Plan(s004, "pp16 mb16 b128");
  ASSERT_EQ(tp8pp2["outcome"], "simulated");
  ASSERT_EQ(layerwise16["outcome"], "simulated");
  EXPECT_EQ(layerwise["outcome"], "memory");
  auto run_tp8pp2 = RunJson(kSeeds, "seed004_tp8_pp2", store);
  auto run_layerwise = RunJson(kSeeds, "seed004_layerwise", store);
  auto run_layerwise16 = RunJson(cfg.string(), "s004_layerwise_mb16", store);
  ASSERT_TRUE(run_tp8pp2.size() == 1 && run_layerwise.size() == 1 && run_layerwise16.size() == 1);
  EXPECT_FALSE(run_layerwise[0]["fits_in_memory"].get<bool>());
  EXPECT_DOUBLE_EQ(run_layerwise[0]["memory_peak_bytes"].get<double>(),
                   layerwise["memory_peak_bytes"].get<double>());
  Compared ttft004 = CompareMetric(run_tp8pp2[0]["trace"], run_layerwise16[0]["trace"], "ttft");
  ExpectSameSeconds(tp8pp2["ttft_s"], ttft004.baseline, "seed 004 TP8×PP2 TTFT");
  ExpectSameSeconds(layerwise16["ttft_s"], ttft004.proposed, "seed 004 layer-wise TTFT");
  EXPECT_EQ(RankOf(s004, layerwise16) < RankOf(s004, tp8pp2), ttft004.ratio < 1);

  // Seed 003: EP=8 does not fit; EP=64 against EP=128, TTFT and TPOT.
  auto s003 = SearchJson(cfg.string(), "s003");
  EXPECT_EQ(Plan(s003, "ep8 b128")["outcome"], "memory");
  const auto& ep64 = Plan(s003, "ep64 b128");
  const auto& ep128 = Plan(s003, "ep128 b128");
  ASSERT_TRUE(ep64["outcome"] == "simulated" && ep128["outcome"] == "simulated");
  auto run003 = RunJson(cfg.string(), "s003_run", store);
  ASSERT_EQ(run003.size(), 3u);
  EXPECT_FALSE(run003[0]["fits_in_memory"].get<bool>()) << run003[0]["experiment"];
  Compared ttft003 = CompareMetric(run003[1]["trace"], run003[2]["trace"], "ttft");
  Compared tpot003 = CompareMetric(run003[1]["trace"], run003[2]["trace"], "tpot");
  ExpectSameSeconds(ep64["ttft_s"], ttft003.baseline, "seed 003 EP64 TTFT");
  ExpectSameSeconds(ep128["ttft_s"], ttft003.proposed, "seed 003 EP128 TTFT");
  ExpectSameSeconds(ep64["tpot_s"], tpot003.baseline, "seed 003 EP64 TPOT");
  ExpectSameSeconds(ep128["tpot_s"], tpot003.proposed, "seed 003 EP128 TPOT");
  // Faster per user at EP=128 in both; search's per-user figure is 1 / TPOT.
  EXPECT_LT(tpot003.ratio, 1);
  EXPECT_GT(ep128["tokens_per_s_per_user"].get<double>(),
            ep64["tokens_per_s_per_user"].get<double>());
  fs::remove_all(store);  // ~180 MB of traces
}

}  // namespace
