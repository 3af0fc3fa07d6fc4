#include "calibrate/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "calibrate/measured_routing.h"
#include "plan/test_experiments.h"
#include "sim/simulator.h"
#include "testing/scratch_dir.h"

namespace shardscope::calibrate {
namespace {

namespace fs = std::filesystem;

Experiment TinyTp2() {
  ParallelSpec p;
  p.tp = 2;
  p.strategy = "tp2";
  Experiment e = testing::ZooExperiment("tiny-dense", "local-cpu", p, 2, 32, 4);
  e.name = "tiny_tp2";
  e.workload.dtype = DType::kFp32;
  return e;
}

const ValidationRow* Row(const ValidationResult& r, const std::string& scope,
                         const std::string& name) {
  for (const ValidationRow& row : r.rows) {
    if (row.scope == scope && row.name == name) return &row;
  }
  return nullptr;
}

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path(); }
  testing::ScratchDir scratch_{"validate_test"};
  fs::path dir_;
};

// A simulated run validated against itself: every error is zero.
TEST_F(ValidateTest, SimulatedRunAgainstItselfHasNoError) {
  const Experiment e = TinyTp2();
  sim::SimOptions o;
  o.trace_file = (dir_ / "measured.trace").string();
  ASSERT_TRUE(sim::SimulateExperiment(e, o).ok());
  auto r = ValidateExperiment(e, {o.trace_file}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->warnings.empty()) << r->warnings[0];
  for (const char* name : {"ttft", "tpot", "decode_throughput", "prefill_throughput", "tps"}) {
    const ValidationRow* row = Row(*r, "run", name);
    ASSERT_NE(row, nullptr) << name;
    ASSERT_TRUE(row->error().has_value()) << name;
    EXPECT_NEAR(*row->error(), 0, 1e-9) << name;
  }
  const ValidationRow* ffn = Row(*r, "decode", "ffn_up");
  ASSERT_NE(ffn, nullptr);
  EXPECT_GT(*ffn->measured, 0);
  EXPECT_NEAR(*ffn->error(), 0, 1e-9);
  ASSERT_NE(Row(*r, "decode", "all_reduce.tp"), nullptr);
  ASSERT_NE(Row(*r, "prefill", "compute (all kinds)"), nullptr);
}

// A calibration with a larger launch overhead makes every op slower: the
// simulated side is then above the measured one, so the errors are positive.
TEST_F(ValidateTest, SlowerCalibrationGivesPositiveErrors) {
  const Experiment e = TinyTp2();
  sim::SimOptions o;
  o.trace_file = (dir_ / "measured.trace").string();
  ASSERT_TRUE(sim::SimulateExperiment(e, o).ok());
  const std::string cal = (dir_ / "slow.yaml").string();
  std::ofstream(cal) << "launch_overhead_us: 500\n";
  ValidateOptions v;
  v.calibration_file = cal;
  auto r = ValidateExperiment(e, {o.trace_file}, v);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(*Row(*r, "run", "ttft")->error(), 0.1);
  EXPECT_GT(*Row(*r, "run", "tpot")->error(), 0.1);
  EXPECT_LT(*Row(*r, "run", "decode_throughput")->error(), -0.1);
  auto md = RenderValidation(*r, "md");
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("| run | ttft | s |"), std::string::npos) << *md;
  EXPECT_FALSE(RenderValidation(*r, "xml").ok());
}

// Two measured runs, one of them slowed by a larger launch overhead: each
// row's measured value is their mean, with both runs as its bounds, and the
// error is taken against the mean. The CSV carries the bounds and the count.
TEST_F(ValidateTest, SeveralMeasuredRunsAreComparedByTheirMean) {
  const Experiment e = TinyTp2();
  sim::SimOptions o;
  o.trace_file = (dir_ / "fast.trace").string();
  ASSERT_TRUE(sim::SimulateExperiment(e, o).ok());
  const std::string fast = o.trace_file;
  const std::string cal = (dir_ / "slow.yaml").string();
  std::ofstream(cal) << "launch_overhead_us: 500\n";
  o.calibration_file = cal;
  o.trace_file = (dir_ / "slow.trace").string();
  ASSERT_TRUE(sim::SimulateExperiment(e, o).ok());
  const std::string slow = o.trace_file;

  auto one_fast = ValidateExperiment(e, {fast}, {});
  auto one_slow = ValidateExperiment(e, {slow}, {});
  auto both = ValidateExperiment(e, {fast, slow}, {});
  ASSERT_TRUE(one_fast.ok() && one_slow.ok() && both.ok()) << both.status().message();
  EXPECT_TRUE(both->warnings.empty());
  for (const auto& [scope, name] : std::vector<std::pair<std::string, std::string>>{
           {"run", "ttft"}, {"run", "tpot"}, {"decode", "ffn_up"}}) {
    const double f = *Row(*one_fast, scope, name)->measured;
    const double s = *Row(*one_slow, scope, name)->measured;
    ASSERT_GT(s, 1.1 * f) << name;
    const ValidationRow* row = Row(*both, scope, name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->runs, 2) << name;
    EXPECT_NEAR(*row->measured, (f + s) / 2, 1e-12 * s) << name;
    EXPECT_DOUBLE_EQ(*row->measured_min, f) << name;
    EXPECT_DOUBLE_EQ(*row->measured_max, s) << name;
    // The simulated side is the fast run (default calibration).
    EXPECT_NEAR(*row->error(), (f - (f + s) / 2) / ((f + s) / 2), 1e-9) << name;
  }
  auto csv = RenderValidation(*both, "csv");
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(csv->substr(0, csv->find('\n')),
            "experiment,scope,name,unit,simulated,measured,error,measured_min,measured_max,runs");
  auto md = RenderValidation(*both, "md");
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("the mean of 2 runs"), std::string::npos) << *md;
  EXPECT_NE(md->find("measured min – max | runs |"), std::string::npos) << *md;

  EXPECT_FALSE(ValidateExperiment(e, {}, {}).ok());
  // A missing second run names its file.
  auto missing = ValidateExperiment(e, {fast, (dir_ / "absent.trace").string()}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.trace"), std::string::npos);
}

TEST_F(ValidateTest, OtherExperimentIsAWarning) {
  Experiment e = TinyTp2();
  sim::SimOptions o;
  o.trace_file = (dir_ / "measured.trace").string();
  ASSERT_TRUE(sim::SimulateExperiment(e, o).ok());
  e.name = "other";
  e.workload.batch_size = 4;
  auto r = ValidateExperiment(e, {o.trace_file}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_NE(r->warnings[0].find("'tiny_tp2', not 'other'"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[1].find("batch_size: measured 2, simulated 4"), std::string::npos);
}

TEST_F(ValidateTest, MissingMeasuredTraceIsAnError) {
  auto r = ValidateExperiment(TinyTp2(), {(dir_ / "absent.trace").string()}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("absent.trace"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::calibrate

namespace shardscope::calibrate {
namespace {

// Simulates `e` with fixed routing `weights` into a trace under the process's
// scratch dir's `dir`, the "measured" run; its path, or "" on failure.
std::string SkewedTrace(const Experiment& e, std::vector<double> weights, const std::string& dir) {
  Experiment skewed = e;
  skewed.workload.routing.kind = RoutingKind::kFixed;
  skewed.workload.routing.fixed_weights = std::move(weights);
  static testing::ScratchDir scratch("validate_test");
  const fs::path folder = fs::path(scratch.path()) / dir;
  fs::create_directories(folder);
  sim::SimOptions o;
  o.trace_file = (folder / "measured.trace").string();
  return sim::SimulateExperiment(skewed, o).ok() ? o.trace_file : "";
}

// A tiny MoE over EP2 whose "measured" run routed 3 of every 4 tokens to EP
// rank 0's experts (the real router's uneven split) while the experiment says
// uniform: validate takes the split from the trace's dispatch all-to-alls and
// simulates the run it measured; with the experiment's routing it would not.
TEST(MeasuredRoutingTest, ValidateSimulatesTheMeasuredSplit) {
  ParallelSpec p;
  p.ep = 2;
  p.strategy = "ep2";
  Experiment e = testing::ZooExperiment("tiny-moe-mla", "local-cpu", p, 4, 64, 3);
  e.name = "tiny_moe_ep2";
  e.workload.dtype = DType::kFp32;
  // Experts 0–3 on EP rank 0.
  const std::string trace = SkewedTrace(e, {3, 3, 3, 3, 1, 1, 1, 1}, "measured_routing_test");
  ASSERT_FALSE(trace.empty());

  auto routing = ReadMeasuredRouting(trace, e);
  ASSERT_TRUE(routing.ok()) << routing.status().message();
  EXPECT_EQ(routing->source, "dispatch all-to-all");
  ASSERT_EQ(routing->layer_weights.size(), 1u);  // layer 1, the MoE layer
  const std::vector<double>& w = routing->layer_weights.at(1);
  ASSERT_EQ(w.size(), 8u);
  const double rank0 = w[0] + w[1] + w[2] + w[3], rank1 = w[4] + w[5] + w[6] + w[7];
  EXPECT_NEAR(rank0 / (rank0 + rank1), 0.75, 0.01);
  EXPECT_NEAR(routing->imbalance, 1.5, 0.02);

  auto measured = ValidateExperiment(e, {trace}, {});
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  EXPECT_NE(measured->routing.find("dispatch all-to-all"), std::string::npos);
  ValidateOptions plain;
  plain.measured_routing = false;
  auto assumed = ValidateExperiment(e, {trace}, plain);
  ASSERT_TRUE(assumed.ok()) << assumed.status().message();
  EXPECT_TRUE(assumed->routing.empty());
  const ValidationRow* with = Row(*measured, "run", "ttft");
  const ValidationRow* without = Row(*assumed, "run", "ttft");
  ASSERT_TRUE(with && without && with->error() && without->error());
  EXPECT_LT(std::abs(*with->error()), 0.005);
  EXPECT_GT(std::abs(*without->error()), 0.02);
  EXPECT_LT(*without->error(), 0);  // uniform routing is the optimistic one
  fs::remove_all(fs::path(trace).parent_path());
}

// Without expert parallelism there is no all-to-all: the split comes from the
// experts' recorded token counts, expert by expert.
TEST(MeasuredRoutingTest, WithoutAllToAllsTheExpertTokenCounts) {
  ParallelSpec p;
  p.strategy = "tp1";
  Experiment e = testing::ZooExperiment("tiny-moe-mla", "local-cpu", p, 2, 64, 2);
  e.workload.dtype = DType::kFp32;
  const std::string trace =
      SkewedTrace(e, {8, 4, 2, 1, 1, 1, 1, 0}, "measured_routing_tokens_test");
  ASSERT_FALSE(trace.empty());
  auto routing = ReadMeasuredRouting(trace, e);
  ASSERT_TRUE(routing.ok()) << routing.status().message();
  EXPECT_EQ(routing->source, "expert token counts");
  ASSERT_EQ(routing->layer_weights.count(1), 1u);
  const std::vector<double>& w = routing->layer_weights.at(1);
  double sum = 0;
  for (double x : w) sum += x;
  ASSERT_GT(sum, 0);
  EXPECT_NEAR(w[0] / sum, 8.0 / 18, 0.01);
  EXPECT_NEAR(w[3] / sum, 1.0 / 18, 0.01);
  EXPECT_EQ(w[7], 0);
  EXPECT_DOUBLE_EQ(routing->imbalance, 1);  // one EP rank holds every expert
  fs::remove_all(fs::path(trace).parent_path());
}

}  // namespace
}  // namespace shardscope::calibrate
