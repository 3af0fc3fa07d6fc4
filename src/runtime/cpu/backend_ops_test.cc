// The backend op harness (ggml's test-backend-ops): every op of every
// registered backend, in every storage dtype, against the reference backend
// within the dtype's NMSE tolerance; and the steady state allocates nothing.
#include "runtime/device/backend_ops.h"

#include <gtest/gtest.h>

#include "runtime/cpu/backend_registry.h"
#include "runtime/device/reference_backend.h"

namespace shardscope::runtime {
namespace {

constexpr DType kDTypes[] = {DType::kFp32, DType::kBf16, DType::kFp16};

TEST(BackendOpsTest, EveryOpOfEveryBackendMatchesTheReference) {
  std::unique_ptr<Backend> reference = NewReferenceBackend();
  const std::vector<OpCase> cases = DefaultOpCases();
  for (BackendOp op : kAllBackendOps) {  // the cases cover every op
    bool covered = false;
    for (const OpCase& c : cases) covered |= OpOf(c) == op;
    EXPECT_TRUE(covered) << BackendOpName(op);
  }
  for (const BackendFactory& f : RegisteredBackends()) {
    std::unique_ptr<Backend> backend = f.create();
    ASSERT_EQ(backend->name(), f.name);
    int ran = 0;
    for (DType dtype : kDTypes) {
      for (const OpCase& c : cases) {
        if (!backend->Supports(OpOf(c), dtype)) continue;
        StatusOr<double> nmse = CompareOp(c, dtype, *backend, *reference, 7);
        ASSERT_TRUE(nmse.ok()) << f.name << " " << CaseName(c) << ": " << nmse.status().message();
        EXPECT_LE(*nmse, NmseTolerance(dtype))
            << f.name << " " << DTypeName(dtype) << " " << CaseName(c);
        ++ran;
      }
    }
    EXPECT_GT(ran, 0) << f.name;
  }
}

// The tolerance catches a wrong result: a perturbed output fails it.
TEST(BackendOpsTest, NmseSeesAWrongElement) {
  std::unique_ptr<Backend> reference = NewReferenceBackend();
  const OpCase c = GemmCase{.m = 4, .n = 8, .k = 16};
  StatusOr<std::vector<float>> ref = RunOp(c, DType::kFp32, *reference, 3);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(Nmse(*ref, *ref), 0.0);
  std::vector<float> flipped = *ref;  // one element of 32 with the wrong sign
  flipped[5] = -flipped[5] + 1.0f;
  EXPECT_GT(Nmse(flipped, *ref), NmseTolerance(DType::kBf16));
  std::vector<float> off = *ref;  // every element 0.1 % off: fine for fp16, not for fp32
  for (float& x : off) x *= 1.001f;
  EXPECT_GT(Nmse(off, *ref), NmseTolerance(DType::kFp32));
  EXPECT_LT(Nmse(off, *ref), NmseTolerance(DType::kFp16) * 2);
}

// Each case names its op and prints its fields under the names the benchmark's rows carry.
TEST(BackendOpsTest, CasesNameTheirOpAndShape) {
  EXPECT_EQ(CaseName(GemmCase{.m = 5, .n = 9, .k = 12, .trans_b = true, .strided = true}),
            "gemm m=5 n=9 k=12 bᵀ views");
  const OpCase norm = RowwiseCase{.kind = BackendOp::kRmsNorm, .rows = 3, .cols = 20};
  EXPECT_EQ(OpOf(norm), BackendOp::kRmsNorm);
  EXPECT_EQ(CaseName(norm), "rms_norm m=3 n=20");
  EXPECT_EQ(CaseName(DecodeAttentionCase{.requests = 2,
                                         .cache_rows = 6,
                                         .heads = 3,
                                         .kv_heads = 1,
                                         .head_dim = 10,
                                         .head_dim_v = 8,
                                         .lse = true}),
            "decode_attention q=2 k=6 heads=3/1 d=10/8 lse");
  EXPECT_EQ(CaseName(UnpermuteCase{.tokens = 3, .hidden = 7, .top_k = 3, .shared = true}),
            "unpermute t=3 h=7 top3 shared");
  EXPECT_EQ(OpOf(EmbeddingCase{}), BackendOp::kEmbedding);
}

// A row-wise case of an op that is not row-wise is an error, not a silent no-op.
TEST(BackendOpsTest, ARowwiseCaseOfAnotherOpIsAnError) {
  std::unique_ptr<Backend> reference = NewReferenceBackend();
  const OpCase c = RowwiseCase{.kind = BackendOp::kGemm, .rows = 2, .cols = 3};
  StatusOr<std::vector<float>> out = RunOp(c, DType::kFp32, *reference, 1);
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "gemm is not a row-wise op");
}

TEST(BackendOpsTest, TensorsKeepTheirDType) {
  std::unique_ptr<Backend> cpu = NewCpuBackend();
  StatusOr<TensorRef> t = cpu->NewTensor(DType::kBf16, {3, 5});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->bytes(), 30);  // 2 bytes an element
  const std::vector<float> v = {1.0f,  1.00390625f, -2.5f, 3.14159f, 0.0f,  7.0f,  8.0f, 9.0f,
                                10.0f, 11.0f,       12.0f, 13.0f,    14.0f, 15.0f, 16.0f};
  ASSERT_TRUE(cpu->CopyFromHost(v.data(), *t).ok());
  std::vector<float> back(15);
  ASSERT_TRUE(cpu->CopyToHost(*t, back.data()).ok());
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);  // 1 + 2^-8 is a tie: rounds to even
  EXPECT_EQ(back[3], 3.140625f);
  StatusOr<TensorRef> fp8 = cpu->NewTensor(DType::kFp8, {2});
  EXPECT_EQ(fp8.status().code(), StatusCode::kUnimplemented);
}

TEST(BackendOpsTest, ShapesAreChecked) {
  std::unique_ptr<Backend> cpu = NewCpuBackend();
  StatusOr<TensorRef> a = cpu->NewTensor(DType::kFp32, {2, 3});
  StatusOr<TensorRef> b = cpu->NewTensor(DType::kFp32, {4, 5});
  StatusOr<TensorRef> c = cpu->NewTensor(DType::kFp32, {2, 5});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const Status s = cpu->Gemm(*a, *b, *c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gemm: b has shape [4 × 5]"), std::string::npos) << s.message();
}

// Steps of the same shapes reuse the arena: no memory is taken from the
// system after the first step, for typed tensors and for the fp32 scratch.
TEST(BackendOpsTest, TheSteadyStateAllocatesNothing) {
  for (const BackendFactory& f : RegisteredBackends()) {
    std::unique_ptr<Backend> backend = f.create();
    const std::vector<OpCase> cases = DefaultOpCases();
    auto step = [&] {
      for (const OpCase& c : cases) {
        ASSERT_TRUE(RunOp(c, DType::kBf16, *backend, 1).ok()) << CaseName(c);
        ASSERT_TRUE(RunOp(c, DType::kFp32, *backend, 1).ok()) << CaseName(c);
      }
    };
    step();
    step();  // the arena coalesces after the first step
    const int64_t after_warmup = backend->system_allocations();
    EXPECT_GT(after_warmup, 0);
    for (int i = 0; i < 5; ++i) step();
    EXPECT_EQ(backend->system_allocations(), after_warmup) << f.name;
  }
}

}  // namespace
}  // namespace shardscope::runtime
