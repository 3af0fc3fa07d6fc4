// The analyzer over Kineto traces (moved from importers/kineto_importer_test.cc,
// which keeps the import-only assertions).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/analyzer.h"
#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"

namespace shardscope::analysis {
namespace {

using testing::ScratchDir;
using trace::WriteFile;

const std::string kTestData = importers::SharedTestData("kineto");
const std::string kExpected = importers::RealTraceGolden("kineto_expected.json");

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
// kineto_expected.json (written by tests/data/real_traces/kineto_expected.py).
class KinetoGoldenAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kTestData);
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

// issue 35: the 8-rank DLRM set records shapes (nccl:all_reduce / nccl:all_to_all
// annotations with "Input Dims" × "Input type", linked to the kernel by its launch) but no
// process group. Each kernel gets its size from them and, every rank having run the same
// calls, the whole world as its group: payload, wire traffic per collective and bus
// bandwidth are available, and the clocks are measured on an all-reduce (whose ends
// coincide), so no false skew is reported.
TEST_F(KinetoGoldenAnalysisTest, KinetoSizesFromHostAnnotations) {
  const nlohmann::json& want = expected_["sets"]["param_dlrm_8rank"];
  auto runs = AnalyzePaths({kTestData + "/param_dlrm_8rank"});
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  const AnalysisResult& r = (*runs)[0];
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  const MetricSet& m = r.metrics;
  ASSERT_TRUE(m.Find("payload_bytes")->value) << m.Find("payload_bytes")->unavailable;
  EXPECT_EQ(*m.Find("payload_bytes")->value, want["comm_bytes_sum"].get<double>());
  for (const char* key : {"traffic_bytes", "traffic_bytes[collective all_reduce]",
                          "traffic_bytes[collective "
                          "all_to_all]",
                          "payload_bytes[collective all_to_all]", "busbw",
                          "busbw[collective all_reduce]", "busbw[group 0-7 all_to_all]"}) {
    ASSERT_TRUE(m.Find(key)) << key;
    EXPECT_TRUE(m.Find(key)->value.has_value()) << key << ": " << m.Find(key)->unavailable;
  }
  // all-reduce over 8 ranks: each rank sends 2·7/8 of its payload on the wire.
  EXPECT_NEAR(*m.Find("traffic_bytes[collective all_reduce]")->value,
              *m.Find("payload_bytes[collective all_reduce]")->value * 2 * 7 / 8, 1);
  ASSERT_TRUE(m.Find("clock_spread")->value);
  EXPECT_NEAR(*m.Find("clock_spread")->value, want["collective_end_spread_ns"].get<double>() * 1e-9,
              1e-12);
  EXPECT_LT(*m.Find("clock_spread")->value, 100e-6);
}

// issue 35: without a rank's file the set cannot show the group; payload bytes (which need
// sizes only) stay available, per collective too, and wire bytes say why they are not.
TEST_F(KinetoGoldenAnalysisTest, PayloadBytesWithoutGroupSayWhyWireBytesAreNot) {
  ScratchDir dir;
  for (const auto& e : std::filesystem::directory_iterator(kTestData + "/param_dlrm_8rank")) {
    if (e.path().filename().string().starts_with("worker7")) continue;
    std::filesystem::copy_file(e.path(), dir.File(e.path().filename().string()));
  }
  auto runs = AnalyzePaths({dir.path()});
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  const MetricSet& m = (*runs)[0].metrics;
  EXPECT_TRUE(m.Find("payload_bytes")->value.has_value());
  EXPECT_TRUE(m.Find("payload_bytes[collective all_reduce]")->value.has_value());
  const Metric* traffic = m.Find("traffic_bytes");
  ASSERT_FALSE(traffic->value.has_value());
  EXPECT_NE(
      traffic->unavailable.find("56 comm op(s) without a group: the wire bytes of a collective "
                                "depend on its group size"),
      std::string::npos)
      << traffic->unavailable;
  EXPECT_EQ(traffic->unavailable.find("known collective"), std::string::npos)
      << traffic->unavailable;
  EXPECT_FALSE(m.Find("traffic_bytes[collective all_reduce]")->value.has_value());
  ASSERT_FALSE(m.Find("busbw")->value.has_value());
  EXPECT_NE(m.Find("busbw")->unavailable.find("56 comm op(s) without a group: the bus factor"),
            std::string::npos)
      << m.Find("busbw")->unavailable;
}

}  // namespace
}  // namespace shardscope::analysis
