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

}  // namespace
