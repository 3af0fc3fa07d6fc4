#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "estimate/bounds.h"
#include "plan/test_experiments.h"

namespace shardscope::sim {
namespace {

using shardscope::testing::ZooExperiment;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  const char* model;
  const char* cluster;
  ParallelSpec par;
  int64_t batch, prompt, generate;
};

ParallelSpec Par(int64_t tp, int64_t pp, int64_t sp, int64_t ep, int64_t dp = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.sp = sp;
  p.ep = ep;
  p.dp = dp;
  p.strategy = "test";
  return p;
}

TEST(SimulatorTest, NeverBeatsThePhysicalBounds) {
  const std::vector<Case> cases = {
      {"tiny-dense", "h100-sxm", Par(2, 1, 1, 1), 4, 64, 4},
      {"llama-3.1-8b", "h100-sxm", Par(8, 1, 1, 1), 8, 1024, 4},
      {"llama-3.1-8b", "h100-sxm", Par(4, 2, 1, 1), 8, 512, 3},
      {"llama-3.1-8b", "h100-sxm", Par(1, 1, 4, 1), 2, 4096, 3},
      {"tiny-moe-mla", "h100-sxm", Par(1, 1, 1, 4), 8, 128, 3},
      {"tiny-moe-mla", "h100-sxm", Par(2, 1, 1, 8), 16, 64, 3},
      {"deepseek-v2-lite", "tpu-v4", Par(4, 1, 1, 1), 8, 256, 3},
  };
  for (const Case& c : cases) {
    Experiment e = ZooExperiment(c.model, c.cluster, c.par, c.batch, c.prompt, c.generate);
    SimOptions o;
    o.write_trace = false;
    auto r = SimulateExperiment(e, o);
    ASSERT_TRUE(r.ok()) << c.model << ": " << r.status().message();
    auto pl = Placement::Create(e);
    ASSERT_TRUE(pl.ok());
    auto b = ComputeBounds(e, *pl);
    ASSERT_TRUE(b.ok());
    EXPECT_GE(r->ttft, b->ttft.seconds() * (1 - 1e-9)) << c.model;
    EXPECT_GE(r->tpot, b->tpot.seconds() * (1 - 1e-9)) << c.model;
    EXPECT_GT(r->ops, 0);
    EXPECT_GT(r->transfers, 0);
    EXPECT_GE(r->comm_fraction(), 0);
    EXPECT_LE(r->comm_fraction(), 1);
  }
}

TEST(SimulatorTest, SameExperimentGivesByteIdenticalTraces) {
  Experiment e = ZooExperiment("tiny-moe-mla", "h100-sxm", Par(2, 1, 1, 4), 8, 64, 3);
  e.workload.routing.kind = RoutingKind::kZipf;
  e.workload.seed = 7;
  std::string traces[2];
  for (int i = 0; i < 2; ++i) {
    SimOptions o;
    o.trace_file = ::testing::TempDir() + "/det_" + std::to_string(i) + ".trace";
    auto r = SimulateExperiment(e, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    traces[i] = ReadFile(o.trace_file);
  }
  EXPECT_GT(traces[0].size(), 1000u);
  EXPECT_EQ(traces[0], traces[1]);
}

TEST(SimulatorTest, WritesIntoTheStoreAndTruncatesDecodeOnlyWhenAsked) {
  Experiment e = ZooExperiment("tiny-dense", "h100-sxm", Par(2, 2, 1, 1), 4, 32, 6);
  e.parallel.strategy = "tp2_pp2";
  SimOptions o;
  o.trace_root = ::testing::TempDir() + "/store";
  o.max_decode_steps = 2;
  auto r = SimulateExperiment(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->decode_steps, 5);
  EXPECT_EQ(r->decode_steps_simulated, 2);
  EXPECT_NE(r->trace_path.find("/tiny-dense/tp2_pp2/batch_4_seq_32/trace_"), std::string::npos);
  const std::string meta = ReadFile(r->metadata_path);
  EXPECT_NE(meta.find("\"backend\": \"sim\""), std::string::npos) << meta.substr(0, 400);
  EXPECT_NE(meta.find("\"simulated_decode_steps\": 2"), std::string::npos);
  EXPECT_NEAR(r->total, r->ttft + 5 * r->tpot, 1e-12);
}

// issue 17: extrapolating the first steps' mean understated TPOT of long generations
// (sim ÷ bound 0.00× for 1e9 steps). With the last step simulated too, a truncated run's
// TPOT is the full run's to well within the first steps' error.
TEST(SimulatorTest, TruncatedDecodeInterpolatesToTheLastStep) {
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Par(2, 1, 1, 1), 64, 512, 1500);
  SimOptions o;
  o.write_trace = false;
  auto full = SimulateExperiment(e, o);
  ASSERT_TRUE(full.ok()) << full.status().message();
  o.max_decode_steps = 2;
  auto cut = SimulateExperiment(e, o);
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  EXPECT_EQ(cut->decode_steps_simulated, 2);
  EXPECT_GT(cut->last_step_seconds, cut->latency.tpot);  // the KV cache grew 512 → 2011
  const double first_error = std::abs(cut->latency.tpot - full->tpot) / full->tpot;
  const double error = std::abs(cut->tpot - full->tpot) / full->tpot;
  EXPECT_GT(first_error, 0.01);
  EXPECT_LT(error, 0.25 * first_error);
  EXPECT_NEAR(cut->total, cut->ttft + 1499 * cut->tpot, 1e-9);
}

TEST(SimulatorTest, CancelledStopsBeforeTheNextPhaseAndLeavesNoTrace) {
  Experiment e = ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1, 1), 4, 32, 6);
  SimOptions o;
  const std::string store = ::testing::TempDir() + "/cancel_store";
  std::filesystem::remove_all(store);
  o.trace_root = store;
  int phases = 0;
  o.cancelled = [&] { return ++phases > 3; };  // prefill and two decode steps, then stop
  auto r = SimulateExperiment(e, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(phases, 4);
  int files = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(store)) files += f.is_regular_file();
  EXPECT_EQ(files, 0) << "a cancelled run left files in the store";
}

}  // namespace
}  // namespace shardscope::sim
