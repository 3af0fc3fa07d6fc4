#include "sim/run_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "plan/test_experiments.h"
#include "testing/scratch_dir.h"

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
  auto big = Report("llama-3.1-70b", 1);  // ~141 GB of bf16 weights on one H100 (81,559 MiB)
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_FALSE(big->memory.Fits());
  const std::string text = RunReportText({*big});
  EXPECT_NE(text.find("DOES NOT FIT: planned peak"), std::string::npos) << text;
  EXPECT_NE(text.find(" GB!"), std::string::npos) << text;
  const auto j = RunReportJson(*big);
  EXPECT_FALSE(j["fits_in_memory"].get<bool>());
  EXPECT_DOUBLE_EQ(j["memory_capacity_bytes"].get<double>(), 81559.0 * 1024 * 1024);

  auto small = Report("llama-3.1-8b", 1);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(RunReportText({*small}).find("DOES NOT FIT"), std::string::npos);
  EXPECT_TRUE(RunReportJson(*small)["fits_in_memory"].get<bool>());
}

// The summary says which fidelity terms were on, and says nothing of them when
// none is (its output then is what it always was).
TEST(RunReportTest, SaysWhichFidelityTermsWereOn) {
  testing::ScratchDir scratch;
  const std::string path = scratch.File("report_terms.yaml");
  std::ofstream(path) << "iteration_overhead_us: 30\ncuda_graphs: true\ngraph_replay_us: 10\n";
  ParallelSpec p;
  SimOptions o;
  o.write_trace = false;
  o.calibration_file = path;
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", p, 1, 128, 3);
  e.workload.dtype = DType::kFp8;
  e.workload.lm_head_dtype = DType::kBf16;
  auto on = BuildRunReport(e, o);
  ASSERT_TRUE(on.ok()) << on.status().message();
  const std::string text = RunReportText({*on});
  EXPECT_NE(text.find("fidelity terms on (calibration, docs/fidelity.md): iteration_overhead 30 "
                      "µs, cuda_graphs (replay 10 µs), lm_head_dtype bf16"),
            std::string::npos)
      << text;
  const auto j = RunReportJson(*on);
  ASSERT_TRUE(j.contains("fidelity_terms"));
  EXPECT_EQ(j["fidelity_terms"].size(), 3u);
  auto off = Report("llama-3.1-8b", 1);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(RunReportText({*off}).find("fidelity terms"), std::string::npos);
  EXPECT_FALSE(RunReportJson(*off).contains("fidelity_terms"));
}

}  // namespace
}  // namespace shardscope::sim
