// The analyzer over NCCL profiler traces (moved from
// importers/nccl_profiler_importer_test.cc, which keeps the import-only assertions).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/analyzer.h"
#include "importers/nccl_profiler_importer.h"
#include "importers/test_traces.h"

namespace shardscope::analysis {
namespace {

using importers::ImportNcclProfiler;
using importers::ImportNcclProfilerJsonl;

const std::string kDir = importers::SharedTestData("nccl_profiler");
const std::string kExample =
    kDir + "/nccl_example_plugin_point_to_point_1737594_12715772615376301750_1.json";
const std::string kExpected = importers::RealTraceGolden("nccl_profiler_expected.json");

class RealNcclAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kDir);
    std::ifstream in(kExpected);
    ASSERT_TRUE(in.good()) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(RealNcclAnalysisTest, ExamplePluginPointToPoint) {
  // The traffic matrix gets the per-peer bytes: 0 → 1 → 2 → 3 → 0.
  RunData data;
  RunCollector collector(&data);
  ASSERT_TRUE(ImportNcclProfiler(kExample, &collector).ok());
  MetricSet m = ComputeMetrics(&data);
  for (int r = 0; r < 4; ++r) {
    const Metric* cell = m.Find(fmt::format("traffic_matrix[rank {} -> rank {}]", r, (r + 1) % 4));
    ASSERT_NE(cell, nullptr) << r;
    EXPECT_DOUBLE_EQ(*cell->value, 1073741824.0);
  }
  EXPECT_EQ(m.Find("traffic_matrix[rank 1 -> rank 0]"), nullptr);
  EXPECT_EQ(*m.Find("matched_p2p")->value, 4);
}

TEST_F(RealNcclAnalysisTest, MinimalPluginJsonl) {
  for (const char* name :
       {"minimal_plugin_allreduce_4rank_a.jsonl", "minimal_plugin_allreduce_4rank_b.jsonl"}) {
    SCOPED_TRACE(name);
    const nlohmann::json& want = expected_[name];
    const int64_t n = want["nranks"].get<int64_t>();
    RunData data;
    RunCollector collector(&data);
    ASSERT_TRUE(ImportNcclProfilerJsonl(kDir + "/" + name, &collector).ok());
    MetricSet m = ComputeMetrics(&data);
    for (const auto& [rank_text, w] : want["ranks"].items()) {
      const int r = std::stoi(rank_text);
      const Metric* cell =
          m.Find(fmt::format("traffic_matrix[rank {} -> rank {}]", r, (r + 1) % n));
      ASSERT_NE(cell, nullptr) << r;
      EXPECT_DOUBLE_EQ(*cell->value, w["ring_bytes_to_next"].get<double>());
    }
    // Rank 3 launched first and waited longest for rank 0, the last to arrive.
    const Metric* straggler = m.Find("straggler_rank");
    ASSERT_NE(straggler, nullptr);
    ASSERT_TRUE(straggler->value.has_value()) << straggler->unavailable;
    EXPECT_EQ(*straggler->value, 0);
  }
}

}  // namespace
}  // namespace shardscope::analysis
