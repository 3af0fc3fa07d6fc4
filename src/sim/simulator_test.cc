#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "estimate/bounds.h"
#include "plan/placement.h"
#include "plan/test_experiments.h"
#include "program/program_builder.h"
#include "sim/collectives.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/sim_setup.h"
#include "sim/topology.h"
#include "testing/scratch_dir.h"

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
      // Tuned links: NVLS all-reduces, and expert all-to-alls across nodes with the
      // hierarchical (deduplicated) prefill and the low-latency decode kernels.
      {"llama-3.1-70b", "h100-sxm", Par(8, 1, 1, 1), 32, 2048, 3},
      {"deepseek-v2-lite", "h100-sxm", Par(1, 1, 1, 16), 64, 512, 3},
      {"deepseek-v2-lite", "h800", Par(1, 1, 1, 32), 128, 256, 3},
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
  testing::ScratchDir scratch;
  for (int i = 0; i < 2; ++i) {
    SimOptions o;
    o.trace_file = scratch.File("det_" + std::to_string(i) + ".trace");
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
  testing::ScratchDir scratch;
  o.trace_root = scratch.File("store");
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
  testing::ScratchDir scratch;
  const std::string store = scratch.File("cancel_store");
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

namespace shardscope::sim {
namespace {

std::string TermsFile(const std::string& name, const std::string& text) {
  static testing::ScratchDir scratch("simulator_terms");
  const std::string path = scratch.File(name);
  std::ofstream(path) << text;
  return path;
}

SimResult Simulate(const Experiment& e, const std::string& calibration = "") {
  SimOptions o;
  o.write_trace = false;
  o.calibration_file = calibration;
  auto r = SimulateExperiment(e, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : SimResult{};
}

Experiment OneRank() {
  ParallelSpec p;
  p.strategy = "test";
  return testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 64, 5);
}

// The per-iteration scheduler cost is host time before every phase's kernels:
// TTFT and every decode step grow by exactly it; the cold start only the
// first (prefill): TTFT, not TPOT (a steady-state figure).
TEST(SimulatorTermsTest, IterationOverheadAndColdStart) {
  const Experiment e = OneRank();
  const SimResult off = Simulate(e);
  const SimResult on =
      Simulate(e, TermsFile("iter.yaml", "iteration_overhead_us: 50\ncold_start_us: 20000\n"));
  EXPECT_NEAR(on.ttft - off.ttft, 50e-6 + 20e-3, 1e-12);
  EXPECT_NEAR(on.tpot - off.tpot, 50e-6, 1e-12);
  EXPECT_NEAR(on.total - off.total, 20e-3 + 5 * 50e-6, 1e-11);
  EXPECT_TRUE(off.terms.empty());
  ASSERT_EQ(on.terms.size(), 2u);
  EXPECT_EQ(on.terms[0], "iteration_overhead 50 µs");
  EXPECT_EQ(on.terms[1], "cold_start 20000 µs");
}

// Ranks of unequal speed (rank_speed_spread s): DP2's replicas never wait for
// each other, so each phase ends with the slower rank, whose compute takes
// 1 + s·z₂ (z₂ = Φ⁻¹(1.625 / 2.25) = 0.5895) of the model's, and a DP2 step
// is all compute: TTFT and TPOT grow by exactly that factor. The mean of the
// ranks' compute is the model's; the summary says the term is on.
TEST(SimulatorTermsTest, RankSpreadSlowsTheLastRankByTheExpectedSlowestOfTwo) {
  ParallelSpec p;
  p.dp = 2;
  p.strategy = "test";
  const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 64, 5);
  const SimResult off = Simulate(e);
  const SimResult on = Simulate(e, TermsFile("spread.yaml", "rank_speed_spread: 0.04\n"));
  const double factor = 1 + 0.04 * 0.589456;
  EXPECT_NEAR(on.ttft / off.ttft, factor, 1e-5);
  EXPECT_NEAR(on.tpot / off.tpot, factor, 1e-5);
  ASSERT_EQ(on.terms.size(), 1u);
  EXPECT_EQ(on.terms[0], "rank_speed_spread 4 %");
}

// The Program of `e`'s first decode step.
StatusOr<PhaseProgram> FirstDecodeStep(const Experiment& e) {
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, pl));
  return builder.Build(Phase::kDecode, 0);
}

// The per-op host time grows each phase of one rank by exactly per-op × its
// ops (the gap an executor spends recording and preparing them).
TEST(SimulatorTermsTest, IterationOverheadPerOpGrowsWithTheStepsOps) {
  const Experiment e = OneRank();
  const SimResult off = Simulate(e);
  const SimResult on = Simulate(e, TermsFile("per_op.yaml", "iteration_overhead_per_op_us: 0.5\n"));
  auto decode = FirstDecodeStep(e);
  ASSERT_TRUE(decode.ok()) << decode.status().message();
  ASSERT_TRUE(decode->ranks.size() == 1 && decode->ranks[0].ops.size() > 10);
  ASSERT_TRUE(Placement::Create(e).ok());
  auto builder = ProgramBuilder::Create(e, *Placement::Create(e));
  ASSERT_TRUE(builder.ok());
  auto prefill = builder->Build(Phase::kPrefill, 0);
  ASSERT_TRUE(prefill.ok());
  EXPECT_NEAR(on.tpot - off.tpot, 0.5e-6 * static_cast<double>(decode->ranks[0].ops.size()), 1e-12);
  EXPECT_NEAR(on.ttft - off.ttft, 0.5e-6 * static_cast<double>(prefill->ranks[0].ops.size()),
              1e-12);
  ASSERT_EQ(on.terms.size(), 1u);
  EXPECT_EQ(on.terms[0], "iteration_overhead 0.5 µs per op");
}

// Under CUDA graphs a decode step pays one replay instead of a launch per
// kernel; prefill is not replayed. One rank runs its ops one after another,
// so the step changes by replay − launch × (kernels that run).
TEST(SimulatorTermsTest, CudaGraphsReplaceDecodeLaunchesByOneReplay) {
  const Experiment e = OneRank();
  const SimResult off = Simulate(e);
  const SimResult on =
      Simulate(e, TermsFile("graphs.yaml", "cuda_graphs: true\ngraph_replay_us: 8\n"));
  auto decode = FirstDecodeStep(e);
  ASSERT_TRUE(decode.ok()) << decode.status().message();
  const Calibration cal = DefaultCalibration(e.cluster.device);
  auto model = ComputeModel::Create(e.cluster.device, e.workload.dtype, cal);
  ASSERT_TRUE(model.ok());
  // Each replayed kernel saves the launch but keeps its class's measured
  // device-side cost as a graph node (Efficiency::replay: 1.78-3.16 µs here).
  int64_t kernels = 0;
  double saved = 0;
  for (const Op& op : decode->ranks[0].ops) {
    if (op.is_comm() || !(model->Seconds(op) > 0)) continue;
    ASSERT_TRUE(op.expert_tokens.empty());
    const double replay = cal.For(op.kind, static_cast<double>(op.m)).replay;
    ASSERT_GT(replay, 1e-6);
    saved += e.cluster.device.launch_overhead - replay;
    ++kernels;
  }
  ASSERT_GT(kernels, 10);
  EXPECT_NEAR(on.ttft, off.ttft, 1e-15);
  EXPECT_NEAR(on.tpot - off.tpot, 8e-6 - saved, 1e-12);
}

// The bf16 LM head of an FP8 model reads twice the head's weight bytes and
// runs at the bf16 peak: never faster than the all-FP8 model, and the summary
// says the term is on.
TEST(SimulatorTermsTest, Bf16LmHeadOfAnFp8Model) {
  Experiment e = OneRank();
  e.workload.dtype = e.workload.kv_dtype = DType::kFp8;
  const SimResult fp8 = Simulate(e);
  e.workload.lm_head_dtype = DType::kBf16;
  const SimResult head = Simulate(e);
  EXPECT_GT(head.tpot, fp8.tpot);
  EXPECT_GT(head.ttft, fp8.ttft);
  ASSERT_EQ(head.terms.size(), 1u);
  EXPECT_EQ(head.terms[0], "lm_head_dtype bf16");
  auto decode = FirstDecodeStep(e);
  ASSERT_TRUE(decode.ok()) << decode.status().message();
  for (const Op& op : decode->ranks[0].ops) {
    if (op.kind != OpKind::kLmHead) continue;
    EXPECT_EQ(op.weight_bytes, 2 * e.model.hidden_size * e.model.vocab_size);
    EXPECT_EQ(op.bytes_read - op.weight_bytes, op.m * op.k);  // fp8 activations
  }
}

// A TP2 decode step with the collectives entry `entry` in its calibration:
// every all-reduce is on its critical path (both ranks wait for it), so the
// step grows by exactly (`latency` − the model's latency) per all-reduce; the
// model's latency comes from the same decomposition. Returns the run.
SimResult ExpectEachAllReduceTakes(double latency, const std::string& entry) {
  ParallelSpec p;
  p.strategy = "test";
  p.tp = 2;
  const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 64, 5);
  const SimResult off = Simulate(e);
  const SimResult on =
      Simulate(e, TermsFile("collective.yaml", "collectives:\n  - " + entry + "\n"));
  auto decode = FirstDecodeStep(e);
  EXPECT_TRUE(decode.ok()) << decode.status().message();
  if (!decode.ok()) return on;
  int64_t all_reduces = 0, bytes = 0;
  for (const Op& op : decode->ranks[0].ops) {
    if (op.is_comm() && op.collective == Collective::kAllReduce) ++all_reduces, bytes = op.bytes;
  }
  EXPECT_GT(all_reduces, 2);
  auto plan = Decompose(Topology(e.cluster), {Collective::kAllReduce, {0, 1}, bytes});
  EXPECT_TRUE(plan.ok());
  if (!plan.ok()) return on;
  double model_latency = 0;
  for (const Stage& st : plan->stages) model_latency += st.latency;
  EXPECT_LT(model_latency, latency);
  EXPECT_NEAR(on.tpot - off.tpot, static_cast<double>(all_reduces) * (latency - model_latency),
              1e-9);
  EXPECT_GT(on.ttft, off.ttft);
  return on;
}

// A measured all-reduce latency (calibration `collectives:`) on TP2.
TEST(SimulatorTermsTest, MeasuredCollectiveLatencyOnTp2) {
  const SimResult on =
      ExpectEachAllReduceTakes(40e-6, "{collective: all_reduce, group_size: 2, latency_us: 40}");
  ASSERT_EQ(on.terms.size(), 1u);
  EXPECT_EQ(on.terms[0], "all_reduce over 2: latency 40 µs");
}

// The members' wait adds to the measured latency.
TEST(SimulatorTermsTest, MeasuredCollectiveWaitOnTp2) {
  const SimResult on = ExpectEachAllReduceTakes(
      37e-6, "{collective: all_reduce, group_size: 2, latency_us: 12, wait_us: 25}");
  ASSERT_EQ(on.terms.size(), 1u);
  EXPECT_EQ(on.terms[0], "all_reduce over 2: latency 12 µs + wait 25 µs");
}

// A CPU rank computes and drives its MPI calls on one thread, so its comm
// ops do not overlap its compute: on local-cpu every rank's ops of the EP2
// prefill run one after another in program order. On an H100 the same
// Program overlaps the dispatch all-to-all with the shared expert.
TEST(SimulatorTest, CpuRanksDoNotOverlapCommWithCompute) {
  ParallelSpec p;
  p.strategy = "test";
  p.ep = 2;
  for (const char* cluster : {"local-cpu", "h100-sxm"}) {
    Experiment e = testing::ZooExperiment("tiny-moe-mla", cluster, p, 4, 64, 2);
    if (std::string(cluster) == "local-cpu") e.workload.dtype = e.workload.kv_dtype = DType::kFp32;
    auto setup = MakeSimSetup(e, "");
    ASSERT_TRUE(setup.ok()) << setup.status().message();
    const bool cpu = std::string(cluster) == "local-cpu";
    EXPECT_EQ((*setup)->serial_comm, cpu);
    auto pl = Placement::Create(e);
    ASSERT_TRUE(pl.ok()) << pl.status().message();
    auto builder = ProgramBuilder::Create(e, *pl);
    ASSERT_TRUE(builder.ok()) << builder.status().message();
    auto prefill = builder->Build(Phase::kPrefill, 0);
    ASSERT_TRUE(prefill.ok()) << prefill.status().message();
    const EngineOptions options = (*setup)->EngineOptionsFor(Algorithm::kAuto, pl->world_size());
    Engine engine(*pl, (*setup)->compute, (*setup)->topology, options);
    auto r = engine.Run(*prefill);
    ASSERT_TRUE(r.ok()) << r.status().message();
    int overlaps = 0;
    int comm = 0;
    for (size_t rank = 0; rank < prefill->ranks.size(); ++rank) {
      const auto t = r->timings[rank];
      for (size_t i = 1; i < t.size(); ++i) {
        comm += t[i].comm;
        overlaps += t[i].start < t[i - 1].end - 1e-15;
      }
    }
    EXPECT_GT(comm, 2) << cluster;
    if (cpu) {
      EXPECT_EQ(overlaps, 0) << "an op of a CPU rank started before its previous op ended";
    } else {
      EXPECT_GT(overlaps, 0) << "no comm overlapped compute on the H100: the test sees nothing";
    }
  }
}

// issue 35: Ctrl-C during the last phase, or while the trace was written, let the
// run finish and keep its trace; the last question comes before the trace is kept.
TEST(SimulatorTest, CancelledAtTheLastQuestionStillLeavesNoTrace) {
  Experiment e = ZooExperiment("tiny-dense", "h100-sxm", Par(2, 1, 1, 1), 4, 32, 6);
  SimOptions o;
  testing::ScratchDir scratch;
  const std::string store = scratch.File("cancel_last_store");
  o.trace_root = store;
  int asked = 0, reported = 0, reported_before_last_question = -1;
  o.progress = [&](const std::string&) { ++reported; };
  o.cancelled = [&] {  // never: count the questions and what came before the last
    ++asked;
    reported_before_last_question = reported;
    return false;
  };
  ASSERT_TRUE(SimulateExperiment(e, o).ok());
  EXPECT_EQ(reported_before_last_question, reported) << "a phase ran after the last question";
  std::filesystem::remove_all(store);
  const int questions = asked;
  asked = 0;
  o.cancelled = [&] { return ++asked == questions; };  // only the last one
  auto r = SimulateExperiment(e, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  int files = 0;
  std::error_code ec;
  for (auto& f : std::filesystem::recursive_directory_iterator(store, ec)) {
    files += f.is_regular_file();
  }
  EXPECT_EQ(files, 0) << "a run cancelled at its end left files in the store";
}

// Speculative decoding with MTP in a fixed batch: 1 + 0.75 = 1.75 tokens per
// step, so 7 generated tokens after the prefill's take ⌈7 / 1.75⌉ = 4 steps,
// and TPOT is the decode time over the 7 tokens (each step a verify pass of 2
// tokens per request plus one MTP draft pass: slower than a plain step).
TEST(SimulatorTest, MtpDecodesInFewerLongerSteps) {
  Experiment e = ZooExperiment("tiny-moe-mla", "h100-sxm", Par(1, 1, 1, 4), 8, 128, 8);
  e.model.num_mtp_layers = 1;
  SimOptions o;
  o.write_trace = false;
  auto plain = SimulateExperiment(e, o);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  e.speculative.method = SpeculativeMethod::kMtp;
  e.speculative.draft_tokens = 1;
  e.speculative.acceptance = {0.75};
  auto mtp = SimulateExperiment(e, o);
  ASSERT_TRUE(mtp.ok()) << mtp.status().message();
  EXPECT_EQ(plain->decode_steps, 7);
  EXPECT_EQ(mtp->decode_steps, 4);
  EXPECT_EQ(mtp->latency.decode_steps, 4);
  EXPECT_NEAR(mtp->tpot, mtp->latency.decode_seconds / 7, 1e-15);
  EXPECT_GT(mtp->latency.tpot, plain->latency.tpot);  // a step does more work
  EXPECT_NEAR(mtp->total, mtp->ttft + mtp->latency.decode_seconds, 1e-12);
  EXPECT_NEAR(mtp->decode_tokens_per_s, 8 / mtp->tpot, 1e-6 * mtp->decode_tokens_per_s);
}

}  // namespace
}  // namespace shardscope::sim
