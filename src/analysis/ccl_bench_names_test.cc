#include "analysis/ccl_bench_names.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "analysis/analyzer.h"
#include "importers/test_traces.h"

namespace shardscope::analysis {
namespace {

// The value of `key` in `set`, or NaN (with a failure) when absent or not available.
double ValueOf(const MetricSet& set, const std::string& key) {
  const Metric* m = set.Find(key);
  EXPECT_NE(m, nullptr) << key;
  if (m == nullptr) return NAN;
  EXPECT_TRUE(m->value.has_value()) << key << ": " << m->unavailable;
  return m->value.value_or(NAN);
}

std::string ReasonOf(const MetricSet& set, const std::string& key) {
  const Metric* m = set.Find(key);
  EXPECT_NE(m, nullptr) << key;
  if (m == nullptr) return "";
  EXPECT_FALSE(m->value.has_value()) << key;
  return m->unavailable;
}

MetricSet Evaluate(std::string_view name, const MetricSet& ours) {
  const CclBenchMetric* m = FindCclBenchMetric(name);
  EXPECT_NE(m, nullptr) << name;
  return m == nullptr ? MetricSet() : EvaluateCclBench(*m, ours);
}

TEST(CclBenchNamesTest, TableCoversTheIssueNamesAndEveryEntryIsComplete) {
  for (const char* name :
       {"avg_step_time", "ttft", "tpot", "communication_fraction", "total_communication_time",
        "compute_comm_overlap", "collective_vol_total_gb", "bandwidth_utilization",
        "load_imbalance_ratio", "straggler", "mfu", "coll_call_num", "communication_ratio",
        "communication_overlap_ratio", "total_kernel_time", "hockney_alpha_s"}) {
    EXPECT_NE(FindCclBenchMetric(name), nullptr) << name;
  }
  EXPECT_EQ(FindCclBenchMetric("avg_step_tim"), nullptr);
  std::set<std::string_view> seen;
  for (const CclBenchMetric& m : CclBenchMetrics()) {
    EXPECT_TRUE(seen.insert(m.name).second) << "duplicate " << m.name;
    EXPECT_FALSE(m.unit.empty()) << m.name;
    EXPECT_NE(m.ours.empty(), m.unavailable.empty()) << m.name << ": a mapping or a reason";
    EXPECT_GT(m.scale, 0) << m.name;
  }
}

TEST(CclBenchNamesTest, UnitConversionsAndDerivedValues) {
  MetricSet ours;
  ours.Add("ranks", "", 4, "count");
  ours.Add("wall_time", "", 0.5, "s");
  ours.Add("step_time.mean", "", 0.25, "s");
  ours.Add("busy_time.mean", "", 0.3, "s");
  ours.Add("comm_fraction", "", 0.2, "ratio");
  ours.Add("overlap", "", 0.75, "ratio");
  ours.Add("busbw", "", 4e10, "B/s");
  ours.Add("tpot", "", 0.02, "s");
  ours.Add("payload_bytes", "", 5e9, "B");
  ours.Add("payload_bytes", "collective all_reduce", 3e9, "B");
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("avg_step_time", ours), "avg_step_time"), 0.25);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("communication_fraction", ours), "communication_fraction"),
                   20.0);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("communication_overhead", ours), "communication_overhead"),
                   0.2);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("compute_comm_overlap", ours), "compute_comm_overlap"), 75.0);
  // 0.3 s busy of 0.5 s wall = 60 %; Σ busy over 4 ranks = 1.2 s.
  EXPECT_DOUBLE_EQ(
      ValueOf(Evaluate("aggregate_gpu_utilization", ours), "aggregate_gpu_utilization"), 60.0);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("total_kernel_time", ours), "total_kernel_time"), 1.2);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("avg_comm_bandwidth_GBps", ours), "avg_comm_bandwidth_GBps"),
                   40.0);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("tpot_group_6", ours), "tpot_group_6"), 20.0);  // ms
  EXPECT_DOUBLE_EQ(
      ValueOf(Evaluate("collective_vol_allreduce_gb", ours), "collective_vol_allreduce_gb"), 3.0);
  EXPECT_DOUBLE_EQ(ValueOf(Evaluate("collective_vol_total_gb", ours), "collective_vol_total_gb"),
                   5.0);
  // Bytes are known, and no all-gather moved any: a true zero.
  EXPECT_EQ(ValueOf(Evaluate("collective_vol_allgather_gb", ours), "collective_vol_allgather_gb"),
            0.0);
  const MetricSet fraction = Evaluate("communication_fraction", ours);
  const Metric* m = fraction.Find("communication_fraction");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->unit, "%");
  EXPECT_EQ(m->aggregation, "ours: comm_fraction × 100");
}

TEST(CclBenchNamesTest, MissingDataIsNotAvailableNeverZero) {
  MetricSet ours;
  ours.AddUnavailable("payload_bytes", "", "B", "the trace's comm ops carry no args.bytes");
  ours.AddUnavailable("mfu.mean", "", "ratio", "metadata lacks workload.dtype");
  ours.Add("busy_time.mean", "", 0.3, "s");
  ours.Add("wall_time", "", 0, "s");
  EXPECT_EQ(ReasonOf(Evaluate("collective_vol_allgather_gb", ours), "collective_vol_allgather_gb"),
            "payload_bytes: the trace's comm ops carry no args.bytes");
  EXPECT_EQ(ReasonOf(Evaluate("mfu", ours), "mfu"), "mfu.mean: metadata lacks workload.dtype");
  EXPECT_EQ(ReasonOf(Evaluate("aggregate_gpu_utilization", ours), "aggregate_gpu_utilization"),
            "wall_time is 0");
  EXPECT_EQ(ReasonOf(Evaluate("avg_step_time", ours), "avg_step_time"),
            "the analysis has no step_time.mean");
  EXPECT_NE(ReasonOf(Evaluate("mean_sm_coverage", ours), "mean_sm_coverage").find("launch grid"),
            std::string::npos);
  EXPECT_NE(ReasonOf(Evaluate("scale_up_bw_utility", ours), "scale_up_bw_utility")
                .find("outside trace analysis"),
            std::string::npos);
}

TEST(CclBenchNamesTest, AllScopesMappingGivesOneValuePerScope) {
  MetricSet ours;
  ours.Add("comm_op_time", "", 6, "s");
  ours.Add("comm_op_time", "collective all_reduce", 2, "s");
  ours.Add("comm_op_time", "collective send", 1, "s");
  ours.Add("comm_op_time", "dim tp", 3, "s");
  MetricSet out = Evaluate("comm_kernel_breakdown_tpu", ours);
  ASSERT_EQ(out.metrics().size(), 2u);
  EXPECT_DOUBLE_EQ(ValueOf(out, "comm_kernel_breakdown_tpu[collective all_reduce]"), 2);
  EXPECT_DOUBLE_EQ(ValueOf(out, "comm_kernel_breakdown_tpu[collective send]"), 1);
  MetricSet window = Evaluate("traffic_window", ours);
  ASSERT_EQ(window.metrics().size(), 1u);
  EXPECT_DOUBLE_EQ(ValueOf(window, "traffic_window[dim tp]"), 3);
  EXPECT_FALSE(ReasonOf(Evaluate("traffic_window", MetricSet()), "traffic_window").empty());
}

TEST(CclBenchNamesTest, SelectKeepsOursAndAddsCclBenchRows) {
  MetricSet ours;
  ours.Add("ttft", "", 0.1, "s");
  ours.Add("mfu", "rank 0", 0.4, "ratio");
  ours.Add("mfu.mean", "", 0.4, "ratio");
  ours.Add("step_time.mean", "", 0.25, "s");
  ours.Add("step_time.count", "", 3, "count");
  ours.Add("wall_time", "", 1, "s");
  MetricSet out = SelectMetrics(ours, {"ttft", "mfu", "avg_step_time", "step_time"});
  std::vector<std::string> keys;
  for (const Metric& m : out.metrics()) keys.push_back(m.key());
  // Ours in their order, then the CCL-Bench rows: "ttft" is ours only, "mfu" gets a row.
  EXPECT_EQ(keys, (std::vector<std::string>{"ttft", "mfu[rank 0]", "mfu.mean", "step_time.mean",
                                            "step_time.count", "mfu", "avg_step_time"}));
  EXPECT_DOUBLE_EQ(ValueOf(out, "mfu"), 40.0);
  EXPECT_EQ(out.Find("mfu")->unit, "%");
  EXPECT_EQ(SelectMetrics(ours, {}).metrics().size(), ours.metrics().size());
}

TEST(CclBenchNamesTest, UnknownNamesListCloseNames) {
  MetricSet ours;
  ours.Add("step_time.mean", "", 0.25, "s");
  ours.Add("comm_time.max", "", 1, "s");
  EXPECT_TRUE(CheckMetricNames({&ours}, {"step_time", "step_time.mean", "comm_time", "straggler",
                                         "avg_step_time"})
                  .ok());
  Status typo = CheckMetricNames({&ours}, {"step_time", "avg_step_tim"});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.message().find("--metric avg_step_tim: unknown metric"), std::string::npos)
      << typo.message();
  EXPECT_NE(typo.message().find("closest: avg_step_time"), std::string::npos) << typo.message();
  Status far = CheckMetricNames({&ours}, {"zzzzqqqxxx"});
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.message().find("without --metric"), std::string::npos) << far.message();
}

// End to end on a synthetic two-rank run: CCL-Bench names through ComputeMetrics.
TEST(CclBenchNamesTest, NamesOnAnAnalysedRun) {
  RunData data;
  RunCollector c(&data);
  for (int32_t r : {0, 1}) {
    trace::OpEvent compute;
    compute.rank = r;
    compute.dur_ns = r == 0 ? 100 : 300;  // compute 100 and 300 ns
    c.OnOp(compute);
    trace::OpEvent comm;
    comm.rank = r;
    comm.stream = 1;
    comm.category = trace::Category::kComm;
    comm.collective = trace::Collective::kAllReduce;
    comm.group = {0, 1};
    comm.ts_ns = 50;
    comm.dur_ns = 100;  // [50, 150]: overlaps compute by 50 ns on rank 0, 100 ns on rank 1
    comm.bytes = 2'000'000'000;
    c.OnOp(comm);
    trace::SpanEvent step;
    step.rank = r;
    step.kind = trace::SpanKind::kStep;
    step.step = 7;
    step.dur_ns = 200 + 100 * r;  // one step: [0, 300]
    c.OnSpan(step);
  }
  MetricSet out = SelectMetrics(ComputeMetrics(&data),
                                {"avg_step_time", "load_imbalance_ratio", "straggler",
                                 "compute_comm_overlap", "collective_vol_allreduce_gb", "mfu"});
  EXPECT_NEAR(ValueOf(out, "avg_step_time"), 300e-9, 1e-20);
  EXPECT_DOUBLE_EQ(ValueOf(out, "load_imbalance_ratio"), 1.5);   // 300 / mean 200
  EXPECT_DOUBLE_EQ(ValueOf(out, "straggler"), 1.5);              // 300 / median 200
  EXPECT_DOUBLE_EQ(ValueOf(out, "compute_comm_overlap"), 75.0);  // 150 of 200 ns
  EXPECT_DOUBLE_EQ(ValueOf(out, "collective_vol_allreduce_gb"), 4.0);
  EXPECT_NE(ReasonOf(out, "mfu").find("mfu.mean: "), std::string::npos);
}

// The real 8-rank Kineto set of ../shared/testdata (SOURCES.md): one ProfilerStep#12 per rank.
// Expected values from this independent script over the raw files:
//   lo, hi, n = 1e30, -1e30, 0
//   for f in sorted(glob.glob("param_dlrm_8rank/*.json")):
//     for e in json.load(open(f))["traceEvents"]:
//       if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"):
//         lo, hi = min(lo, e["ts"]), max(hi, e["ts"] + e["dur"])
//       if e.get("cat") == "kernel" and e.get("name", "").startswith("ncclKernel_"): n += 1
//   print(hi - lo, n)  # 20823 (µs), 64
// CCL-Bench's avg_step_time gives the mean of the per-rank durations instead: 16007.75 µs.
TEST(CclBenchNamesTest, RealKinetoSetGivesStepTimeAndCallCount) {
  const std::string dir = importers::SharedTestData("kineto/param_dlrm_8rank");
  SHARDSCOPE_NEED_SHARED_DATA(dir);
  auto results = AnalyzePaths({dir});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 1u);
  MetricSet out = SelectMetrics((*results)[0].metrics,
                                {"avg_step_time", "coll_call_num", "collective_vol_total_gb"});
  EXPECT_NEAR(ValueOf(out, "avg_step_time"), 20823e-6, 1e-12);
  EXPECT_EQ(ValueOf(out, "coll_call_num"), 64);
  // The kernels carry no message sizes, their host calls' "Input Dims" do (issue 17):
  // 2,549,700 B per rank, as tests/data/real_traces/kineto_expected.py sums them.
  EXPECT_NEAR(ValueOf(out, "collective_vol_total_gb"), 8 * 2549700e-9, 1e-15);
}

}  // namespace
}  // namespace shardscope::analysis
