#include "sim/run_report.h"

#include <gtest/gtest.h>

#include "plan/test_experiments.h"

namespace shardscope::sim {
namespace {

using shardscope::testing::ZooExperiment;

StatusOr<RunReport> Report(const std::string& model, int64_t tp) {
  ParallelSpec p;
  p.tp = tp;
  SimOptions o;
  o.write_trace = false;
  o.max_decode_steps = 1;
  return BuildRunReport(ZooExperiment(model, "h100-sxm", p, 1, 128, 3), o);
}

// issue 17: `run` printed results for plans that do not fit in memory without a word.
TEST(RunReportTest, APlanThatDoesNotFitIsMarkedInTheTableAndJson) {
  auto big = Report("llama-3.1-70b", 1);  // ~141 GB of bf16 weights on one 80 GB H100
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_FALSE(big->memory.Fits());
  const std::string text = RunReportText({*big});
  EXPECT_NE(text.find("DOES NOT FIT: planned peak"), std::string::npos) << text;
  EXPECT_NE(text.find(" GB!"), std::string::npos) << text;
  const auto j = RunReportJson(*big);
  EXPECT_FALSE(j["fits_in_memory"].get<bool>());
  EXPECT_DOUBLE_EQ(j["memory_capacity_bytes"].get<double>(), 80e9);

  auto small = Report("llama-3.1-8b", 1);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(RunReportText({*small}).find("DOES NOT FIT"), std::string::npos);
  EXPECT_TRUE(RunReportJson(*small)["fits_in_memory"].get<bool>());
}

}  // namespace
}  // namespace shardscope::sim
