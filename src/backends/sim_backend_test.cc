// The simulator through the backend interface, and the agreement of its
// reported TTFT/TPOT/throughput with the analyzer's over the trace it wrote.
#include "backends/sim_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "analysis/analyzer.h"
#include "plan/test_experiments.h"

namespace shardscope::backends {
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

TEST(SimBackendTest, ReportedLatencyEqualsTheAnalyzersOverItsTrace) {
  const fs::path dir =
      fs::temp_directory_path() / ("shardscope_sim_backend_" + std::to_string(getpid()));
  fs::create_directories(dir);
  struct Case {
    const char* model;
    ParallelSpec par;
  };
  for (const Case& c : {Case{"tiny-dense", Par(2, 1, 1)}, Case{"tiny-dense", Par(2, 2, 1)},
                        Case{"tiny-moe-mla", Par(1, 1, 4)}}) {
    const Experiment e = testing::ZooExperiment(c.model, "h100-sxm", c.par, 4, 64, 5);
    run::RunOptions o;
    o.trace_file = (dir / (std::string(c.model) + ".trace")).string();
    auto backend = SimBackend::Create(o);
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
  fs::remove_all(dir);
}

TEST(SimBackendTest, SameFiguresWithoutATrace) {
  const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1), 2, 32, 3);
  run::RunOptions o;
  o.write_trace = false;
  auto backend = SimBackend::Create(o);
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

}  // namespace
}  // namespace shardscope::backends
