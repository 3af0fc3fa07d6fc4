// The simulator through the backend interface, and the agreement of its
// reported TTFT/TPOT/throughput with the analyzer's over the trace it wrote.
#include "runners/sim_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "analysis/analyzer.h"
#include "plan/test_experiments.h"
#include "runners/run_output.h"
#include "testing/scratch_dir.h"

namespace shardscope::runners {
namespace {

namespace fs = std::filesystem;

double MetricValue(const analysis::AnalysisResult& a, const std::string& key) {
  const analysis::Metric* m = a.metrics.Find(key);
  if (m == nullptr || !m->value) {
    ADD_FAILURE() << "analyzer has no " << key;
    return std::nan("");
  }
  return *m->value;
}

ParallelSpec Par(int64_t tp, int64_t pp, int64_t ep) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  p.strategy = "test";
  return p;
}

TEST(SimRunnerTest, ReportedLatencyEqualsTheAnalyzersOverItsTrace) {
  testing::ScratchDir scratch("sim_runner");
  const fs::path dir = scratch.path();
  struct Case {
    const char* model;
    ParallelSpec par;
  };
  for (const Case& c : {Case{"tiny-dense", Par(2, 1, 1)}, Case{"tiny-dense", Par(2, 2, 1)},
                        Case{"tiny-moe-mla", Par(1, 1, 4)}}) {
    const Experiment e = testing::ZooExperiment(c.model, "h100-sxm", c.par, 4, 64, 5);
    run::RunOptions o;
    o.trace_file = (dir / (std::string(c.model) + ".trace")).string();
    auto backend = SimRunner::Create(o);
    ASSERT_TRUE(backend.ok());
    auto r = (*backend)->Run(e, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->backend, "sim");
    EXPECT_EQ(r->ranks, c.par.world_size());
    EXPECT_EQ(r->trace_path, o.trace_file);
    ASSERT_NE(dynamic_cast<const SimRunDetail*>(r->detail.get()), nullptr);
    auto a = analysis::AnalyzeTraceFile(r->trace_path);
    ASSERT_TRUE(a.ok()) << a.status().message();
    // The trace rounds times to whole nanoseconds.
    EXPECT_NEAR(r->latency.ttft, MetricValue(*a, "ttft"), 1e-9) << c.model;
    EXPECT_NEAR(r->latency.tpot, MetricValue(*a, "tpot"), 1e-9) << c.model;
    EXPECT_EQ(r->latency.decode_steps, static_cast<int64_t>(MetricValue(*a, "decode_steps")));
    // A rate over a span with both ends rounded: off by at most 2 ns of the span.
    EXPECT_NEAR(r->throughput.prefill_tokens_per_s, MetricValue(*a, "prefill_throughput"),
                2e-9 / r->latency.ttft * r->throughput.prefill_tokens_per_s);
    EXPECT_NEAR(r->throughput.decode_tokens_per_s, MetricValue(*a, "decode_throughput"),
                1e-6 * r->throughput.decode_tokens_per_s);
    EXPECT_GT(r->latency.ttft, 0);
    EXPECT_GT(r->latency.tpot, 0);
  }
}

TEST(SimRunnerTest, SameFiguresWithoutATrace) {
  const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1), 2, 32, 3);
  run::RunOptions o;
  o.write_trace = false;
  auto backend = SimRunner::Create(o);
  ASSERT_TRUE(backend.ok());
  auto r = (*backend)->Run(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->trace_path.empty());
  const auto* d = dynamic_cast<const SimRunDetail*>(r->detail.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(r->latency.ttft, d->report.sim.ttft);
  EXPECT_EQ(r->latency.tpot, d->report.sim.tpot);
  EXPECT_EQ(r->throughput.tps, d->report.sim.tps);
}

// A small served workload: 6 Poisson requests on tiny-dense at TP2.
Experiment Served() {
  Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1), 1, 32, 4);
  e.name = "served";
  ServingSpec s;
  s.arrivals.process = ArrivalProcess::kPoisson;
  s.arrivals.rate = 50;
  s.prompt_tokens = {LengthDist::Kind::kFixed, 32, 0, 0, 32, 32};
  s.output_tokens = {LengthDist::Kind::kFixed, 4, 0, 0, 4, 4};
  s.requests = 6;
  s.warmup_requests = 1;
  e.serving = s;
  return e;
}

// issue 33: `run --json` of a served experiment has a row per request, with
// --no-trace too, and its figures are the statistics' own.
TEST(SimRunnerTest, ServedRunsListEveryRequestWithoutATrace) {
  run::RunOptions o;
  o.write_trace = false;
  auto backend = SimRunner::Create(o);
  ASSERT_TRUE(backend.ok());
  auto r = (*backend)->Run(Served(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->trace_path.empty());
  const nlohmann::json j = RunResultsJson({*r})[0];
  ASSERT_TRUE(j.contains("requests")) << j.dump();
  const nlohmann::json& rows = j["requests"];
  ASSERT_EQ(rows.size(), 6u);
  double ttft_sum = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["id"], static_cast<int64_t>(i));
    EXPECT_EQ(rows[i]["prompt_tokens"], 32);
    EXPECT_EQ(rows[i]["warmup"], i == 0);
    EXPECT_NEAR(rows[i]["ttft_s"].get<double>(),
                rows[i]["first_token_s"].get<double>() - rows[i]["arrival_s"].get<double>(), 1e-15);
    if (i > 0) ttft_sum += rows[i]["ttft_s"].get<double>();
  }
  EXPECT_NEAR(ttft_sum / 5, j["metrics"]["ttft_s"]["mean"].get<double>(), 1e-12);
}

// issue 33: --decode-steps on a served experiment is an error naming the flag,
// found before anything runs (Supports), and again if Run is called anyway.
TEST(SimRunnerTest, DecodeStepsOnAServedExperimentIsAnError) {
  run::RunOptions o;
  o.write_trace = false;
  o.max_decode_steps = 8;
  auto backend = SimRunner::Create(o);
  ASSERT_TRUE(backend.ok());
  const Status s = (*backend)->Supports(Served());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--decode-steps 8: experiment 'served' is a served workload"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE((*backend)->Run(Served(), o).ok());
  // A fixed batch takes the flag.
  const Experiment fixed = testing::ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1), 2, 32);
  EXPECT_TRUE((*backend)->Supports(fixed).ok());
}

}  // namespace
}  // namespace shardscope::runners
