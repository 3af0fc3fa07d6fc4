// The analyzer over an XLA XSpace trace (moved from importers/xspace_importer_test.cc,
// which keeps the import-only assertions). Built only with protobuf.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/analyzer.h"
#include "importers/test_traces.h"
#include "importers/xspace_importer.h"

namespace shardscope::analysis {
namespace {

using importers::ImportXspace;

const std::string kXplane = importers::SharedTestData("xla/tpu_inference_2.xplane.pb");
const std::string kExpected = importers::RealTraceGolden("xla_tpu_inference_2_expected.json");

// Golden values from tests/data/real_traces/xla_tpu_inference_2_expected.py (an independent
// decoder).
class RealXplaneAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kXplane);
    std::ifstream in(kExpected);
    ASSERT_TRUE(in.good()) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(RealXplaneAnalysisTest, AnalyzerSeesCommTimeAndTraffic) {
  RunData data;
  RunCollector collector(&data);
  auto stats = ImportXspace(kXplane, &collector);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  MetricSet m = ComputeMetrics(&data);
  for (const auto& [rank_text, dev] : expected_["devices"].items()) {
    SCOPED_TRACE("TPU " + rank_text);
    // The all-reduces do not overlap each other: comm time is the sum of their intervals.
    int64_t comm_ns = 0;
    for (const auto& iv : dev["comm_intervals_ns"]) {
      comm_ns += iv[1].get<int64_t>() - iv[0].get<int64_t>();
    }
    const Metric* comm = m.Find("comm_time[rank " + rank_text + "]");
    ASSERT_NE(comm, nullptr);
    ASSERT_TRUE(comm->value.has_value()) << comm->unavailable;
    EXPECT_NEAR(*comm->value, comm_ns * 1e-9, 1e-12);
    const Metric* ops = m.Find("comm_ops[rank " + rank_text + "]");
    ASSERT_NE(ops, nullptr);
    EXPECT_EQ(*ops->value, 3);
    // Ring all-reduce over a pair: each member sends 2·(2−1)/2 = 1× the buffer per op to
    // the other (ranks 4-7 are not in the trace, but the pair is named by replica_groups).
    const int32_t rank = std::stoi(rank_text);
    const Metric* traffic =
        m.Find(fmt::format("traffic_matrix[rank {} -> rank {}]", rank, rank + 4));
    ASSERT_NE(traffic, nullptr);
    EXPECT_DOUBLE_EQ(*traffic->value, dev["all_reduce_bytes_total"].get<double>());
  }
  // The plane stats give the peak, so MFU is available.
  const Metric* mfu = m.Find("mfu[rank 0]");
  ASSERT_NE(mfu, nullptr);
  ASSERT_TRUE(mfu->value.has_value()) << mfu->unavailable;
  EXPECT_GT(*mfu->value, 0);
  EXPECT_LT(*mfu->value, 1);
}

}  // namespace
}  // namespace shardscope::analysis
