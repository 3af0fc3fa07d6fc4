// The analyzer over Kineto traces (moved from importers/kineto_importer_test.cc,
// which keeps the import-only assertions).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/analyzer.h"
#include "trace/test_util.h"

namespace shardscope::analysis {
namespace {

using trace::ScratchDir;
using trace::WriteFile;

const std::string kTestData = std::string(SHARDSCOPE_SOURCE_DIR) + "/../shared/testdata/kineto";
const std::string kExpected =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/src/importers/testdata/kineto_expected.json";

TEST(KinetoAnalysisTest, OverlappingKernelsCountOnceInBusyTime) {
  // Two kernels on one stream overlapping by 5 us, a third inside the first:
  // busy = [200, 215) = 15 us; all three ops are kept.
  ScratchDir dir;
  WriteFile(dir.File("overlap.json"), R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 200, "dur": 10},
  {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 205, "dur": 10},
  {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 201, "dur": 2}]})");
  auto r = AnalyzeTraceFile(dir.File("overlap.json"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->format, "kineto");
  EXPECT_EQ(r->stats.ops, 3);
  ASSERT_TRUE(r->metrics.Find("busy_time[rank 0]"));
  EXPECT_NEAR(*r->metrics.Find("busy_time[rank 0]")->value, 15e-6, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("compute_time[rank 0]")->value, 15e-6, 1e-15);
}

// Golden values on the real traces of ../shared/testdata/kineto from
// kineto_expected.json (written by importers/testdata/kineto_expected.py).
class KinetoGoldenAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kTestData)) {
      GTEST_SKIP() << "no Kineto test data at " << kTestData << " (../shared is absent)";
    }
    std::ifstream in(kExpected);
    ASSERT_TRUE(in) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(KinetoGoldenAnalysisTest, EveryFileMatchesTheIndependentScript) {
  int files = 0;
  for (const auto& [name, want] : expected_.items()) {
    if (name == "sets") continue;
    SCOPED_TRACE(name);
    ++files;
    std::string path = kTestData + "/" + name;
    // Busy, compute and comm time per rank, and the wall time, from the analyzer.
    auto r = AnalyzeTraceFile(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string rank = fmt::format("[rank {}]", want["rank"].get<int32_t>());
    for (const char* metric : {"busy_time", "compute_time", "comm_time"}) {
      std::string key = std::string(metric) + rank;
      std::string field = std::string(metric).substr(0, std::string(metric).find('_')) + "_ns";
      ASSERT_TRUE(r->metrics.Find(key)) << key;
      EXPECT_NEAR(*r->metrics.Find(key)->value, want[field].get<int64_t>() * 1e-9, 1e-12) << key;
    }
    EXPECT_NEAR(*r->metrics.Find("wall_time")->value, want["wall_ns"].get<int64_t>() * 1e-9, 1e-12);
  }
  EXPECT_EQ(files, 13);
}

}  // namespace
}  // namespace shardscope::analysis
