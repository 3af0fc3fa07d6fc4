// The executor on the Backend seam: decode steps take no memory from the
// system (activations from the step arena, KV caches sized for the whole
// generation at prefill), and a second generation on the reused memory gives
// the same tokens; an error of a backend op stops the run naming the rank and
// op; MLA's q_a norm, in place, keeps its input.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "plan/test_experiments.h"
#include "program/program_builder.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/device/arena.h"
#include "runtime/hf_checkpoint_test_util.h"
#include "testing/scratch_dir.h"

namespace shardscope::runtime {
namespace {

std::vector<int32_t> Tokens(const Executor& ex) {
  std::vector<int32_t> t;
  for (const SampleRecord& s : ex.samples()) t.push_back(s.token);
  return t;
}

void ExpectSteadyDecode(const std::string& model) {
  SCOPED_TRACE(model);
  constexpr int64_t kGenerate = 7;
  Experiment e = shardscope::testing::ZooExperiment(model, "local-cpu", {}, 3, 16, kGenerate);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  auto builder = ProgramBuilder::Create(e, *pl);
  ASSERT_TRUE(builder.ok()) << builder.status().message();
  LocalCommunicator comm;
  std::unique_ptr<Backend> backend = NewCpuBackend();
  auto ex = Executor::Create(e, *pl, backend.get(), &comm);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  Executor& x = **ex;

  ASSERT_TRUE(x.Reset().ok());
  auto prefill = builder->Build(Phase::kPrefill, 0);
  ASSERT_TRUE(prefill.ok());
  ASSERT_TRUE(x.Run(*prefill).ok());
  auto step0 = builder->Build(Phase::kDecode, 0);
  ASSERT_TRUE(step0.ok());
  Status s = x.Run(*step0);
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t after_first = x.system_allocations();
  EXPECT_GT(after_first, 0);
  for (int64_t k = 1; k < kGenerate - 1; ++k) {
    auto step = builder->Build(Phase::kDecode, k);
    ASSERT_TRUE(step.ok());
    s = x.Run(*step);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(x.system_allocations(), after_first) << "decode step " << k;
  }
  const std::vector<int32_t> first = Tokens(x);
  EXPECT_EQ(first.size(), 3u * kGenerate);

  // Another generation on the memory of the first: the same tokens.
  s = RunGeneration(*builder, x);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Tokens(x), first);
}

TEST(ExecutorTest, DecodeStepsAfterTheFirstAllocateNothingDense) {
  ExpectSteadyDecode("tiny-dense");
}

// MoE routing changes the rows each expert gets from step to step; the expert
// buffers are sized for the most that can arrive, so the steps still allocate nothing.
TEST(ExecutorTest, DecodeStepsAfterTheFirstAllocateNothingMoeMla) {
  ExpectSteadyDecode("tiny-moe-mla");
}

// The CPU backend with one op failing, as a device error would: host memory of
// its own arenas, every other op forwarded.
class FailingBackend final : public Backend {
 public:
  explicit FailingBackend(BackendOp fail) : Backend(&HostMemory()), fail_(fail) {}
  std::string_view name() const override { return "failing"; }
  bool Supports(BackendOp op, DType dtype) const override { return cpu_->Supports(op, dtype); }
  Status CopyFromHost(const float* h, const TensorRef& t) override {
    return cpu_->CopyFromHost(h, t);
  }
  Status CopyToHost(const TensorRef& t, float* h) override { return cpu_->CopyToHost(t, h); }
  Status Synchronize() override { return cpu_->Synchronize(); }
  std::unique_ptr<OpTimer> NewTimer() override { return cpu_->NewTimer(); }
  using Backend::Attention;
  using Backend::Gemm;
  Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c, bool t) override {
    return Check(BackendOp::kGemm) ? cpu_->Gemm(a, b, c, t) : Fail();
  }
  Status Add(const TensorRef& x, const TensorRef& y) override {
    return Check(BackendOp::kAdd) ? cpu_->Add(x, y) : Fail();
  }
  Status AddBias(const TensorRef& b, const TensorRef& y) override {
    return Check(BackendOp::kAddBias) ? cpu_->AddBias(b, y) : Fail();
  }
  Status RmsNorm(const TensorRef& x, const TensorRef& w, float e, const TensorRef& y) override {
    return Check(BackendOp::kRmsNorm) ? cpu_->RmsNorm(x, w, e, y) : Fail();
  }
  Status Rope(const RopeOpArgs& a, const TensorRef& x) override {
    return Check(BackendOp::kRope) ? cpu_->Rope(a, x) : Fail();
  }
  Status SwiGlu(const TensorRef& g, const TensorRef& o) override {
    return Check(BackendOp::kSwiGlu) ? cpu_->SwiGlu(g, o) : Fail();
  }
  Status Gelu(const TensorRef& x, const TensorRef& o) override {
    return Check(BackendOp::kGelu) ? cpu_->Gelu(x, o) : Fail();
  }
  Status Attention(const AttentionOpArgs& a, const TensorRef& q, const TensorRef& k,
                   const TensorRef& v, const TensorRef& o, const TensorRef& l) override {
    return Check(BackendOp::kAttention) ? cpu_->Attention(a, q, k, v, o, l) : Fail();
  }
  Status DecodeAttention(const DecodeAttentionOpArgs& a, const TensorRef& q,
                         std::span<const TensorRef> k, std::span<const TensorRef> v,
                         const TensorRef& o, const TensorRef& l) override {
    return Check(BackendOp::kDecodeAttention) ? cpu_->DecodeAttention(a, q, k, v, o, l) : Fail();
  }
  Status AttentionMerge(std::span<const TensorRef> o, std::span<const TensorRef> l,
                        const TensorRef& out) override {
    return Check(BackendOp::kAttentionMerge) ? cpu_->AttentionMerge(o, l, out) : Fail();
  }
  Status Router(const RouterOpArgs& a, const TensorRef& l, const TensorRef& b, std::span<int32_t> i,
                const TensorRef& w) override {
    return Check(BackendOp::kRouter) ? cpu_->Router(a, l, b, i, w) : Fail();
  }
  Status Permute(const TensorRef& x, std::span<const int32_t> i, int64_t k, std::span<int64_t> r,
                 std::span<int64_t> c, const TensorRef& o) override {
    return Check(BackendOp::kPermute) ? cpu_->Permute(x, i, k, r, c, o) : Fail();
  }
  Status Unpermute(const TensorRef& y, std::span<const int64_t> r, const TensorRef& w, int64_t k,
                   const TensorRef& s, const TensorRef& o) override {
    return Check(BackendOp::kUnpermute) ? cpu_->Unpermute(y, r, w, k, s, o) : Fail();
  }
  Status Embedding(std::span<const int32_t> ids, const TensorRef& t, int64_t b,
                   const TensorRef& o) override {
    return Check(BackendOp::kEmbedding) ? cpu_->Embedding(ids, t, b, o) : Fail();
  }
  Status ArgMax(const TensorRef& x, int64_t off, std::span<float> m,
                std::span<int32_t> i) override {
    return Check(BackendOp::kArgMax) ? cpu_->ArgMax(x, off, m, i) : Fail();
  }
  Status Copy(const TensorRef& s, const TensorRef& d) override {
    return Check(BackendOp::kCopy) ? cpu_->Copy(s, d) : Fail();
  }

 private:
  bool Check(BackendOp op) const { return op != fail_; }
  Status Fail() const { return InternalError("device error in {}", BackendOpName(fail_)); }

  std::unique_ptr<Backend> cpu_ = NewCpuBackend();
  const BackendOp fail_;
};

TEST(ExecutorTest, ABackendErrorStopsTheRunNamingTheRankAndOp) {
  Experiment e = shardscope::testing::ZooExperiment("tiny-dense", "local-cpu", {}, 2, 8, 2);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  auto builder = ProgramBuilder::Create(e, *pl);
  ASSERT_TRUE(builder.ok());
  LocalCommunicator comm;
  FailingBackend backend(BackendOp::kRmsNorm);
  auto ex = Executor::Create(e, *pl, &backend, &comm);
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  const Status s = RunGeneration(*builder, **ex);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  // The first norm of the prefill: op 1 after the embedding.
  EXPECT_NE(s.message().find("rank 0 failed in op 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("device error in rms_norm"), std::string::npos) << s.message();
}

// Regression: the q_a norm (MLA with q_lora) used to run on a tensor it had
// just replaced by zeros, so the queries were 0 and q_b had no effect on the
// output. Doubling q_b in a checkpoint must change the logits.
TEST(ExecutorTest, MlaQueriesGoThroughTheQaNorm) {
  namespace fs = std::filesystem;
  shardscope::testing::ScratchDir scratch("executor_test_qlora");
  const fs::path dir = scratch.path();
  Experiment e = shardscope::testing::ZooExperiment("tiny-moe-mla", "local-cpu", {}, 1, 6, 1);
  e.model.mla.q_lora_rank = 32;
  ASSERT_TRUE(
      testing::WriteSeededCheckpoint(e, 5, (dir / "a").string(), SafetensorsDtype::kF32, 1).ok());
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  e.workload.seed = 5;
  auto w = Weights::Create(e, *pl, 0);
  ASSERT_TRUE(w.ok());
  std::vector<SafetensorsTensor> ts = testing::ExportHf(e.model, *w, SafetensorsDtype::kF32);
  int doubled = 0;
  for (SafetensorsTensor& t : ts) {
    if (t.name.find("q_b_proj") == std::string::npos) continue;
    for (float& x : t.values) x *= 2.0f;
    ++doubled;
  }
  ASSERT_EQ(doubled, 2);  // one per layer
  ASSERT_TRUE(WriteSafetensorsCheckpoint((dir / "b").string(), ts).ok());

  e.workload.checkpoint = (dir / "a").string();
  const std::vector<SampleRecord> a = testing::RunSingle(e);
  e.workload.checkpoint = (dir / "b").string();
  const std::vector<SampleRecord> b = testing::RunSingle(e);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(a[0].logits.size(), b[0].logits.size());
  double diff = 0.0, mag = 0.0;
  for (size_t v = 0; v < a[0].logits.size(); ++v) {
    diff += std::abs(a[0].logits[v] - b[0].logits[v]);
    mag += std::abs(a[0].logits[v]);
  }
  EXPECT_GT(diff, 1e-3 * mag);
}

}  // namespace
}  // namespace shardscope::runtime
