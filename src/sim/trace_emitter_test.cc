#include "sim/trace_emitter.h"

#include <gtest/gtest.h>

#include <set>

#include "plan/test_experiments.h"
#include "sim/simulator.h"
#include "testing/scratch_dir.h"
#include "trace/trace_reader.h"

namespace shardscope::sim {
namespace {

// Decode steps and "decode" spans of a simulated trace.
struct StepCounter : trace::TraceSink {
  void OnOp(const trace::OpEvent& op) override {
    if (op.step >= 0) op_steps.insert(op.step);
  }
  void OnSpan(const trace::SpanEvent& s) override {
    if (s.kind == trace::SpanKind::kStep) span_steps.insert(s.step);
    if (s.kind == trace::SpanKind::kPhase && s.name == "decode")
      decode_end = std::max(decode_end, s.end_ns());
    if (s.kind == trace::SpanKind::kStep) last_step_end = std::max(last_step_end, s.end_ns());
  }
  std::set<int32_t> op_steps, span_steps;
  int64_t decode_end = 0, last_step_end = 0;
};

StatusOr<StepCounter> Simulate(int64_t trace_steps, const std::string& file, SimResult* result) {
  ParallelSpec p;
  p.tp = 2;
  p.strategy = "test";
  Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 4, 32, 6);
  e.trace_steps = trace_steps;
  SimOptions o;
  o.trace_file = file;
  ASSIGN_OR_RETURN(*result, SimulateExperiment(e, o));
  StepCounter c;
  RETURN_IF_ERROR(trace::ReadTrace(file, &c).status());
  return c;
}

TEST(TraceEmitterTest, TraceStepsBoundsTheTracedDecodeStepsNotTheSimulatedOnes) {
  testing::ScratchDir scratch;
  const std::string dir = scratch.path();
  SimResult all, bounded;
  StatusOr<StepCounter> full = Simulate(-1, dir + "/steps_all.trace", &all);
  StatusOr<StepCounter> two = Simulate(2, dir + "/steps_two.trace", &bounded);
  ASSERT_TRUE(full.ok() && two.ok());
  EXPECT_EQ(full->span_steps, (std::set<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(two->span_steps, (std::set<int32_t>{0, 1}));
  EXPECT_EQ(two->op_steps, (std::set<int32_t>{0, 1}));
  EXPECT_EQ(two->decode_end,
            two->last_step_end);  // the decode span ends with the last written step
  // The summary still covers every step.
  EXPECT_EQ(bounded.decode_steps_simulated, 5);
  EXPECT_DOUBLE_EQ(bounded.tpot, all.tpot);
}

}  // namespace
}  // namespace shardscope::sim
