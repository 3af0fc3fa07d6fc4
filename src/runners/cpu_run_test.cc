// RunCpuExperiment end to end: mpirun starts `shardscope worker` on each rank,
// the trace lands in the store with backend cpu, and a failing rank stops the
// job naming the rank and the op, leaving no trace. Skipped when the
// shardscope binary is not built beside this test.
#include "runners/cpu_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "analysis/analyzer.h"
#include "plan/plan_loader.h"
#include "plan/test_experiments.h"
#include "runtime/hf_checkpoint_test_util.h"
#include "testing/scratch_dir.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"
#include "trace/trace_store.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

std::string Binary() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return (fs::path(std::string(buf, static_cast<size_t>(n))).parent_path() / "shardscope").string();
}

class CpuRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = Binary();
    if (!fs::exists(binary_)) GTEST_SKIP() << "shardscope binary not built";
    dir_ = scratch_.path();
    config_ = (dir_ / "experiments.yaml").string();
    std::ofstream(config_) << "defaults:\n  hardware: h100-sxm\n  seed: 3\n"
                              "experiments:\n"
                              "  - name: tiny_tp2\n    model: tiny-dense\n    backend: cpu\n"
                              "    parallelism: {strategy: tp2, tp_size: 2}\n"
                              "    batch_size: 2\n    sequence_length: 16\n"
                              "    tokens_to_generate: 3\n";
    auto all = LoadValidExperiments(config_);
    ASSERT_TRUE(all.ok()) << all.status().message();
    experiment_ = all->front();
    options_.shardscope_binary = binary_;
    options_.trace_root = (dir_ / "traces").string();
    options_.warmup_iterations = 0;
    options_.measured_iterations = 1;
  }
  std::string binary_, config_;
  shardscope::testing::ScratchDir scratch_{"cpu_run"};
  fs::path dir_;
  Experiment experiment_;
  CpuRunOptions options_;
};

TEST_F(CpuRunTest, TwoRanksWriteACpuTraceToTheStore) {
  auto r = RunCpuExperiment(experiment_, options_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ranks, 2);
  ASSERT_EQ(r->tokens.size(), 2u);
  EXPECT_EQ(r->tokens[0].size(), 3u);
  EXPECT_GT(r->ttft_seconds, 0.0);
  EXPECT_GT(r->tpot_seconds, 0.0);
  auto stored = trace::TraceStore(options_.trace_root).List();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_TRUE(stored->front().complete());
  auto read = trace::ReadTraceFile(r->trace_path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const trace::Trace& t = *read;
  EXPECT_EQ(t.metadata["backend"], "cpu");
  int allreduces = 0;
  for (const auto& op : t.ops) {
    EXPECT_GE(op.ts_ns, 0);
    if (op.collective == trace::Collective::kAllReduce) {
      ++allreduces;
      EXPECT_EQ(op.group, (std::vector<int32_t>{0, 1}));
      EXPECT_GT(op.bytes, 0);
    }
  }
  // 2 layers × 2 + embedding = 5 per phase per rank, 3 phases, 2 ranks.
  EXPECT_EQ(allreduces, 5 * 3 * 2);
}

// The TTFT/TPOT the ranks report are run/latency.h's over the traced
// generation, so the analyzer over the trace they wrote finds the same.
TEST_F(CpuRunTest, ReportedLatencyEqualsTheAnalyzersOverItsTrace) {
  auto r = RunCpuExperiment(experiment_, options_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->ranks, 2);
  auto a = analysis::AnalyzeTraceFile(r->trace_path);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const analysis::Metric* ttft = a->metrics.Find("ttft");
  const analysis::Metric* tpot = a->metrics.Find("tpot");
  ASSERT_TRUE(ttft != nullptr && ttft->value);
  ASSERT_TRUE(tpot != nullptr && tpot->value);
  // The trace keeps whole nanoseconds, as the ranks measured them.
  EXPECT_NEAR(r->ttft_seconds, *ttft->value, 1e-9);
  EXPECT_NEAR(r->tpot_seconds, *tpot->value, 1e-9);
  EXPECT_GT(r->ttft_seconds, 0.0);
  EXPECT_GT(r->tpot_seconds, 0.0);
}

TEST_F(CpuRunTest, AFailingRankStopsTheJobAndLeavesNoTrace) {
  auto fault = ParseFaultSpec("rank=1,op=L1.attention_decode,phase=decode:1");
  ASSERT_TRUE(fault.ok()) << fault.status().message();
  options_.fault = *fault;
  ::testing::internal::CaptureStderr();
  auto r = RunCpuExperiment(experiment_, options_);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(r.ok());
  // The launcher's error, from rank 1's status record: the rank, the op and why.
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("rank 1 failed in op "), std::string::npos) << m;
  EXPECT_NE(
      m.find("'L1.attention_decode' (attention_decode, layer 1, decode step 1): injected fault"),
      std::string::npos)
      << m;
  // The rank's own message, through mpirun's stderr.
  EXPECT_NE(err.find("rank 1 failed in op "), std::string::npos) << err;
  auto stored = trace::TraceStore(options_.trace_root).List();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
}

// `weights: {checkpoint: ...}` from the YAML, through mpirun and the worker's
// reload of the experiment, on TP2: the tokens of the one-rank run from the
// same checkpoint.
TEST(CpuRunCheckpointTest, ExperimentCheckpointFieldRunsOnTwoRanks) {
  const std::string binary = Binary();
  if (!fs::exists(binary)) GTEST_SKIP() << "shardscope binary not built";
  shardscope::testing::ScratchDir scratch("cpu_run_ckpt");
  const fs::path dir = scratch.path();
  const std::string config = (dir / "experiments.yaml").string();
  std::ofstream(config) << "experiments:\n"
                           "  - name: ckpt_tp2\n    model: tiny-dense\n    hardware: h100-sxm\n"
                           "    backend: cpu\n    seed: 3\n    weights: {checkpoint: ckpt}\n"
                           "    parallelism: {tp_size: 2}\n    batch_size: 2\n"
                           "    sequence_length: 8\n    tokens_to_generate: 3\n";
  Experiment single = shardscope::testing::ZooExperiment("tiny-dense", "h100-sxm", {}, 2, 8, 3);
  ASSERT_TRUE(testing::WriteSeededCheckpoint(single, 11, (dir / "ckpt").string(),
                                             SafetensorsDtype::kBF16, 1)
                  .ok());
  auto all = LoadValidExperiments(config);
  ASSERT_TRUE(all.ok()) << all.status().message();
  const Experiment& e = all->front();
  EXPECT_EQ(e.workload.checkpoint, (dir / "ckpt").string());
  single.workload.seed = 3;
  single.workload.checkpoint = e.workload.checkpoint;
  std::map<int64_t, std::vector<int32_t>> want, seeded;
  for (const SampleRecord& s : testing::RunSingle(single)) want[s.request].push_back(s.token);
  single.workload.checkpoint.clear();
  for (const SampleRecord& s : testing::RunSingle(single)) seeded[s.request].push_back(s.token);
  ASSERT_NE(want, seeded) << "the check cannot tell checkpoint from seeded weights";
  CpuRunOptions o;
  o.shardscope_binary = binary;
  o.write_trace = false;
  o.warmup_iterations = 0;
  o.measured_iterations = 1;
  auto r = RunCpuExperiment(e, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->tokens.size(), 2u);
  for (int64_t q = 0; q < 2; ++q) EXPECT_EQ(r->tokens[q], want[q]) << "request " << q;
}

// For checks that refuse a checkpoint before the ranks start: a tiny-dense TP2
// experiment in `dir`, the HF tensors of its one-rank weights (BF16) to spoil
// and write, and launcher options whose mpirun and binary do not exist (starting
// them would fail differently).
struct PreflightSetup {
  Experiment experiment;
  std::vector<SafetensorsTensor> tensors;
  CpuRunOptions options;
};

void MakePreflightSetup(const fs::path& dir, PreflightSetup* p) {
  p->experiment = shardscope::testing::ZooExperiment("tiny-dense", "h100-sxm", {}, 2, 8, 3);
  p->experiment.parallel.tp = 2;
  p->experiment.source_file = (dir / "experiments.yaml").string();
  Experiment whole = p->experiment;
  whole.parallel = ParallelSpec{};
  auto pl1 = Placement::Create(whole);
  ASSERT_TRUE(pl1.ok());
  auto w1 = Weights::Create(whole, *pl1, 0);
  ASSERT_TRUE(w1.ok());
  p->tensors = testing::ExportHf(p->experiment.model, *w1, SafetensorsDtype::kBF16);
  p->options.mpirun = "/nonexistent/mpirun";
  p->options.shardscope_binary = "/nonexistent/shardscope";
  p->options.write_trace = false;
}

// A checkpoint that cannot serve the model is bad input found by the launcher,
// before mpirun starts, once, naming the file and the tensor.
TEST(CpuRunCheckpointTest, ABadCheckpointIsRejectedBeforeTheRanksStart) {
  shardscope::testing::ScratchDir scratch("cpu_run_bad_ckpt");
  const fs::path dir = scratch.path();
  PreflightSetup p;
  ASSERT_NO_FATAL_FAILURE(MakePreflightSetup(dir, &p));
  Experiment& e = p.experiment;
  const std::string dropped = "model.layers.1.mlp.down_proj.weight";
  std::erase_if(p.tensors, [&](const SafetensorsTensor& t) { return t.name == dropped; });
  ASSERT_TRUE(WriteSafetensorsCheckpoint((dir / "missing").string(), p.tensors).ok());
  e.workload.checkpoint = (dir / "missing").string();
  auto r = RunCpuExperiment(e, p.options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().message();
  EXPECT_NE(r.status().message().find("no tensor '" + dropped + "'"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("mpirun"), std::string::npos) << r.status().message();

  // A truncated shard: the header promises more bytes than the file holds.
  const fs::path file = dir / "missing" / "model.safetensors";
  ASSERT_TRUE(fs::exists(file));
  fs::resize_file(file, fs::file_size(file) / 2);
  r = RunCpuExperiment(e, p.options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(file.string()), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("mpirun"), std::string::npos) << r.status().message();
}

// issue 35: a checkpoint of all-NaN weights generated token 0 without a word; it is
// refused before mpirun, naming the tensor.
TEST(CpuRunCheckpointTest, AnAllNaNCheckpointIsRejectedNamingTheTensor) {
  shardscope::testing::ScratchDir scratch("cpu_run_nan_ckpt");
  const fs::path dir = scratch.path();
  PreflightSetup p;
  ASSERT_NO_FATAL_FAILURE(MakePreflightSetup(dir, &p));
  for (SafetensorsTensor& t : p.tensors) {
    std::fill(t.values.begin(), t.values.end(), std::numeric_limits<float>::quiet_NaN());
  }
  ASSERT_TRUE(WriteSafetensorsCheckpoint((dir / "nan").string(), p.tensors).ok());
  p.experiment.workload.checkpoint = (dir / "nan").string();
  auto r = RunCpuExperiment(p.experiment, p.options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
  EXPECT_NE(r.status().message().find("': all of its "), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("values are NaN or infinite"), std::string::npos);
  EXPECT_NE(r.status().message().find("tensor 'model."), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("mpirun"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace shardscope::runtime
