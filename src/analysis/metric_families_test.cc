// The metric families on small synthetic runs with hand-computed values: step time and
// decode-only TPOT, compute balance across ranks, summed comm op time, payload and
// utilisation aggregated over groups.
#include "analysis/metric_families.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/analyzer.h"

namespace shardscope::analysis {
namespace {

using trace::Category;
using trace::Collective;
using trace::Phase;
using trace::SpanKind;

trace::SpanEvent Span(int32_t rank, SpanKind kind, Phase phase, int32_t step, int64_t ts,
                      int64_t dur) {
  trace::SpanEvent s;
  s.rank = rank;
  s.kind = kind;
  s.phase = phase;
  s.step = step;
  s.ts_ns = ts;
  s.dur_ns = dur;
  return s;
}

trace::OpEvent Compute(int32_t rank, int64_t ts, int64_t dur) {
  trace::OpEvent op;
  op.rank = rank;
  op.ts_ns = ts;
  op.dur_ns = dur;
  return op;
}

trace::OpEvent Collective2(int32_t rank, Collective c, int64_t ts, int64_t dur, int64_t bytes) {
  trace::OpEvent op;
  op.rank = rank;
  op.stream = 1;
  op.category = Category::kComm;
  op.collective = c;
  op.dim = Dim::kTp;
  op.group = {0, 1};
  op.ts_ns = ts;
  op.dur_ns = dur;
  op.bytes = bytes;
  return op;
}

class Metrics {
 public:
  explicit Metrics(RunData* data) : set_(ComputeMetrics(data)) {}
  double Value(const std::string& key) const {
    const Metric* m = set_.Find(key);
    EXPECT_NE(m, nullptr) << key;
    if (m == nullptr) return NAN;
    EXPECT_TRUE(m->value.has_value()) << key << ": " << m->unavailable;
    return m->value.value_or(NAN);
  }
  std::string Unavailable(const std::string& key) const {
    const Metric* m = set_.Find(key);
    EXPECT_NE(m, nullptr) << key;
    if (m == nullptr) return "";
    EXPECT_FALSE(m->value.has_value()) << key << " = " << *m->value;
    return m->unavailable;
  }
  const MetricSet& set() const { return set_; }

 private:
  MetricSet set_;
};

// Relative tolerance for values computed through ns -> s conversions.
void ExpectClose(double got, double want) { EXPECT_NEAR(got, want, 1e-12 * std::fabs(want)); }

TEST(StepTimeTest, ForeignStepsGiveStepTimeButNoTpot) {
  RunData data;
  RunCollector c(&data);
  // Step annotations without a phase, as the Kineto importer writes ProfilerStep#N.
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kNone, 0, 0, 100));
  c.OnSpan(Span(1, SpanKind::kStep, Phase::kNone, 0, 10, 110));  // step 0: [0, 120]
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kNone, 1, 200, 60));
  c.OnSpan(Span(1, SpanKind::kStep, Phase::kNone, 1, 190, 60));   // step 1: [190, 260]
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kNone, 2, 300, 100));  // step 2: [300, 400]
  c.OnOp(Compute(0, 0, 50));
  c.OnOp(Compute(1, 10, 50));
  Metrics m(&data);
  // Windows 120, 70, 100 ns; sorted 70, 100, 120.
  ExpectClose(m.Value("step_time.mean"), 290e-9 / 3);
  ExpectClose(m.Value("step_time.p50"), 100e-9);
  ExpectClose(m.Value("step_time.p90"), 116e-9);    // position 1.8: 100 + 0.8 × 20
  ExpectClose(m.Value("step_time.p99"), 119.6e-9);  // position 1.98
  EXPECT_EQ(m.Value("step_time.count"), 3);
  // Not decode steps: no TPOT, no decode step count.
  EXPECT_FALSE(m.Unavailable("tpot").empty());
  EXPECT_EQ(m.set().Find("decode_steps"), nullptr);
}

TEST(StepTimeTest, OwnDecodeStepSpansStillGiveTpot) {
  RunData data;
  RunCollector c(&data);
  c.OnSpan(Span(0, SpanKind::kPhase, Phase::kPrefill, -1, 0, 1000));
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kDecode, 0, 1000, 300));
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kDecode, 1, 1300, 200));
  c.OnOp(Compute(0, 0, 1500));
  Metrics m(&data);
  ExpectClose(m.Value("ttft"), 1000e-9);
  ExpectClose(m.Value("tpot"), 250e-9);  // (1500 − 1000) / 2 steps
  EXPECT_EQ(m.Value("decode_steps"), 2);
  ExpectClose(m.Value("step_time.mean"), 250e-9);  // windows 300 and 200
  EXPECT_EQ(m.Value("step_time.count"), 2);
}

// issue 35: metadata batch 1e300 (a double beyond int64, cast undefined) and
// sequence -5 gave throughputs of -7e22; each is now not available, naming the field.
TEST(StepTimeTest, MetadataBatchOrSequenceOutOfRangeIsNotAvailableNamingTheField) {
  RunData data;
  RunCollector c(&data);
  c.OnSpan(Span(0, SpanKind::kPhase, Phase::kPrefill, -1, 0, 1000));
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kDecode, 0, 1000, 300));
  c.OnOp(Compute(0, 0, 1300));
  data.metadata = {{"workload", {{"batch_size", 1e300}, {"sequence_length", -5}}}};
  Metrics m(&data);
  const std::string batch =
      "metadata's workload.batch_size is 1e+300, not a whole number from 1 to 2^53";
  const std::string seq =
      "metadata's workload.sequence_length is -5, not a whole number from 1 to 2^53";
  EXPECT_EQ(m.Unavailable("decode_throughput"), batch);
  EXPECT_EQ(m.Unavailable("prefill_throughput"), batch + "; " + seq);
  EXPECT_EQ(m.Unavailable("tps"), batch + "; " + seq);
  ExpectClose(m.Value("tpot"), 300e-9);  // the trace's own figures are unaffected
  // A fraction and a string are refused the same way; a usable run.batch_size wins.
  data.metadata = {{"workload", {{"batch_size", 2.5}, {"sequence_length", "long"}}},
                   {"run", {{"batch_size", 4}}}};
  Metrics n(&data);
  ExpectClose(n.Value("decode_throughput"), 4 / 300e-9);
  EXPECT_EQ(n.Unavailable("tps"),
            "metadata's workload.sequence_length is \"long\", not a whole number from 1 to 2^53");
}

// issue 35: zero or negative windows gave TTFT or TPOT <= 0 (and infinite or
// negative throughputs); they are not available, saying why.
TEST(StepTimeTest, ZeroOrNegativeWindowsGiveNoTtftOrTpot) {
  RunData data;
  RunCollector c(&data);
  c.OnSpan(Span(0, SpanKind::kPhase, Phase::kPrefill, -1, 1000, 0));  // zero-length prefill
  c.OnSpan(Span(0, SpanKind::kStep, Phase::kDecode, 0, 500, 300));    // ends before it ends
  c.OnOp(Compute(0, 500, 500));
  data.metadata = {{"workload", {{"batch_size", 2}, {"sequence_length", 8}}}};
  Metrics m(&data);
  EXPECT_EQ(m.Unavailable("ttft"),
            "the prefill window is 0 s long (its spans and ops have zero duration)");
  EXPECT_EQ(m.Unavailable("prefill_throughput"), m.Unavailable("ttft"));
  EXPECT_EQ(m.Unavailable("tpot"),
            "the decode time (last decode step end − prefill end) is -2e-07 s, not positive: zero "
            "or out-of-order durations in the trace");
  EXPECT_EQ(m.Unavailable("decode_throughput"), m.Unavailable("tpot"));
}

TEST(StepTimeTest, NoStepAnnotationsIsNotAvailable) {
  RunData data;
  RunCollector c(&data);
  c.OnOp(Compute(0, 0, 10));
  Metrics m(&data);
  EXPECT_EQ(m.Unavailable("step_time.mean"), "no step annotations");
  EXPECT_EQ(m.Unavailable("step_time.count"), "no step annotations");
}

TEST(ComputeBalanceTest, ImbalanceAndStragglerSlowdown) {
  RunData data;
  RunCollector c(&data);
  c.OnOp(Compute(0, 0, 10));
  c.OnOp(Compute(1, 0, 20));
  c.OnOp(Compute(2, 0, 40));
  c.OnOp(Compute(2, 40, 20));  // rank 2: 60 ns of compute
  Metrics m(&data);
  // Compute times 10, 20, 60: mean 30, median 20.
  ExpectClose(m.Value("compute_imbalance"), 2.0);
  ExpectClose(m.Value("straggler_slowdown"), 3.0);
  EXPECT_EQ(m.Value("straggler_slowdown.rank"), 2);
}

TEST(ComputeBalanceTest, TiesNameTheLowestRankAndNoComputeIsNotAvailable) {
  RunData data;
  RunCollector c(&data);
  c.OnOp(Compute(3, 0, 30));
  c.OnOp(Compute(1, 0, 30));
  c.OnOp(Compute(2, 0, 10));
  Metrics m(&data);
  ExpectClose(m.Value("straggler_slowdown"), 1.0);  // median 30
  EXPECT_EQ(m.Value("straggler_slowdown.rank"), 1);

  RunData comm_only;
  RunCollector c2(&comm_only);
  c2.OnOp(Collective2(0, Collective::kAllReduce, 0, 10, 8));
  Metrics m2(&comm_only);
  EXPECT_EQ(m2.Unavailable("compute_imbalance"), "the trace has no compute ops");
  EXPECT_EQ(m2.Unavailable("straggler_slowdown"), "the trace has no compute ops");
}

TEST(CommAggregatesTest, OpTimePayloadAndUtilisationOverGroups) {
  RunData data;
  RunCollector c(&data);
  c.OnMetadata(nlohmann::json::parse(
      R"({"cluster":{"scale_up":{"domain_size":2,"bandwidth_per_device":2e10}}})"));
  for (int32_t r : {0, 1}) {
    c.OnOp(Collective2(r, Collective::kAllReduce, 0, 100, 1000));
    c.OnOp(Collective2(r, Collective::kAllGather, 200, 50, 400));
  }
  Metrics m(&data);
  // Op durations: 2 × 100 + 2 × 50 ns.
  ExpectClose(m.Value("comm_op_time"), 300e-9);
  ExpectClose(m.Value("comm_op_time[collective all_reduce]"), 200e-9);
  ExpectClose(m.Value("comm_op_time[collective all_gather]"), 100e-9);
  ExpectClose(m.Value("comm_op_time[dim tp]"), 300e-9);
  ExpectClose(m.Value("comm_op_duration.mean"), 75e-9);
  EXPECT_EQ(m.Value("comm_ops[collective all_gather]"), 2);
  EXPECT_EQ(m.Value("payload_bytes"), 2800);
  EXPECT_EQ(m.Value("payload_bytes[collective all_gather]"), 800);
  // Bus bytes: all-reduce over 2 ranks × 1 (2000), all-gather × 1/2 (400).
  ExpectClose(m.Value("busbw_util[group tp 0,1 all_reduce]"), 0.5);  // 1e10 / 2e10
  ExpectClose(m.Value("busbw_util[collective all_gather]"), 0.2);    // 400 / (100 ns × 2e10)
  ExpectClose(m.Value("busbw_util"), 0.4);                           // 2400 / (300 ns × 2e10)
  ExpectClose(m.Value("busbw"), 8e9);                                // 2400 B / 300 ns
  ExpectClose(m.Value("algbw"), 2800 / 300e-9);
}

TEST(CommAggregatesTest, MissingPeakAndMissingBytesAreNamed) {
  RunData data;
  RunCollector c(&data);
  for (int32_t r : {0, 1}) c.OnOp(Collective2(r, Collective::kAllReduce, 0, 100, 0));
  Metrics m(&data);
  EXPECT_EQ(m.Unavailable("payload_bytes"),
            "no comm op of the trace has a message size (args.bytes)");
  EXPECT_FALSE(m.Unavailable("busbw_util").empty());
  // issue 17: a Kineto trace's reason names Kineto's fields, not args.bytes.
  RunData kineto;
  kineto.format = "kineto";
  RunCollector ck(&kineto);
  for (int32_t r : {0, 1}) ck.OnOp(Collective2(r, Collective::kAllReduce, 0, 100, 0));
  Metrics mk(&kineto);
  EXPECT_EQ(mk.Unavailable("payload_bytes").find("args.bytes"), std::string::npos);
  EXPECT_NE(mk.Unavailable("payload_bytes").find("\"In msg nelems\""), std::string::npos);

  RunData no_peak;
  RunCollector c2(&no_peak);
  for (int32_t r : {0, 1}) c2.OnOp(Collective2(r, Collective::kAllReduce, 0, 100, 64));
  Metrics m2(&no_peak);
  EXPECT_EQ(m2.Unavailable("busbw_util"),
            "metadata lacks cluster.scale_up.domain_size and cluster.devices_per_node");
  EXPECT_EQ(m2.Value("payload_bytes"), 128);
}

TEST(UtilizationTest, TotalFlopsAndAchievedMean) {
  RunData data;
  RunCollector c(&data);
  trace::OpEvent a = Compute(0, 0, 100);
  a.flops = 3000;
  trace::OpEvent b = Compute(1, 0, 50);
  b.flops = 1000;
  c.OnOp(a);
  c.OnOp(b);
  Metrics m(&data);
  EXPECT_EQ(m.Value("total_flops"), 4000);
  // Over the 100 ns wall time: 3e10 and 1e10 FLOP/s.
  ExpectClose(m.Value("achieved_flops.mean"), 2e10);
}

}  // namespace
}  // namespace shardscope::analysis
