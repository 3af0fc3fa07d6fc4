// The data-driven golden test: every tests/data/golden/<case>/trace.json is
// analysed and each metric listed in expected.json beside it must match (a
// number to 1e-9 relative, or "not available"). Properties that must hold on
// every trace are checked on each case too.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/analyzer.h"

namespace shardscope::analysis {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> GoldenCases() {
  std::vector<std::string> cases;
  fs::path root = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/data/golden";
  for (const auto& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "trace.json") && fs::exists(e.path() / "expected.json")) {
      cases.push_back(e.path().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesHandComputedMetrics) {
  const std::string dir = GetParam();
  auto result = AnalyzeTraceFile(dir + "/trace.json");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->stats.skipped_total(), 0) << result->stats.Summary();
  std::ifstream in(dir + "/expected.json");
  nlohmann::json expected = nlohmann::json::parse(in);
  ASSERT_FALSE(expected["metrics"].empty());
  for (const auto& [key, want] : expected["metrics"].items()) {
    const Metric* m = result->metrics.Find(key);
    ASSERT_NE(m, nullptr) << dir << ": no metric " << key;
    if (want.is_string()) {
      EXPECT_FALSE(m->value.has_value()) << dir << ": " << key << " = " << *m->value;
      EXPECT_FALSE(m->unavailable.empty()) << key;
      continue;
    }
    ASSERT_TRUE(m->value.has_value()) << dir << ": " << key << ": " << m->unavailable;
    double w = want.get<double>();
    EXPECT_NEAR(*m->value, w, 1e-9 * std::fabs(w) + 1e-15) << dir << ": " << key;
  }
}

// Properties: 0 <= overlap <= 1; idle + busy = wall time; traffic-matrix row sums = bytes sent.
TEST_P(GoldenTest, PropertiesHold) {
  auto result = AnalyzeTraceFile(GetParam() + "/trace.json");
  ASSERT_TRUE(result.ok());
  const MetricSet& ms = result->metrics;
  double wall = *ms.Find("wall_time")->value;
  std::map<std::string, double> row_sums;
  int ranks_checked = 0;
  for (const Metric& m : ms.metrics()) {
    if (m.name == "overlap" && m.value) {
      EXPECT_GE(*m.value, 0.0) << m.key();
      EXPECT_LE(*m.value, 1.0) << m.key();
    }
    if (m.name == "busy_time" && m.scope.rfind("rank ", 0) == 0) {
      const Metric* idle = ms.Find("idle_time[" + m.scope + "]");
      ASSERT_NE(idle, nullptr);
      EXPECT_NEAR(*idle->value + *m.value, wall, 1e-15) << m.scope;
      ++ranks_checked;
    }
    if (m.name == "traffic_matrix") {
      row_sums[m.scope.substr(0, m.scope.find(" ->"))] += *m.value;
    }
  }
  EXPECT_GT(ranks_checked, 0);
  for (const Metric& m : ms.metrics()) {
    if (m.name != "bytes_sent") continue;
    EXPECT_DOUBLE_EQ(row_sums[m.scope], *m.value) << m.scope;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, ::testing::ValuesIn(GoldenCases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return fs::path(info.param).filename().string();
                         });

}  // namespace
}  // namespace shardscope::analysis
