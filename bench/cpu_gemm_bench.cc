// CPU executor benchmarks: the cpu::Gemm wrapper against raw OpenBLAS
// cblas_sgemm on the same shapes (the wrapper must stay ≥ 90 % of it), the
// small-batch decode GEMMs (m = 1–64 rows against weights streamed from
// memory, wrapper against sgemv / sgemm), and one decode step of tiny-dense at
// TP1 on the CPU backend. Results: docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "cluster/cluster_yaml.h"
#include "config/experiment.h"
#include "model/model_yaml.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cpu/small_gemm.h"
#include "runtime/device/arena.h"
#include "runtime/device/backend.h"
#include "runtime/executor.h"

namespace shardscope::runtime {
namespace {

void SetFlops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(m * n * k) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(),
                static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, m, n, k);
}

void BM_KernelsGemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    cpu::Gemm(m, n, k, a.data(), k, b.data(), n, false, c.data(), n, 0.0f);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, m, n, k);
}

// Square sizes and LLM shapes: a decode GEMV-like GEMM (8 tokens) and a prefill one.
#define GEMM_SHAPES                   \
  ->Args({256, 256, 256})             \
      ->Args({1024, 1024, 1024})      \
      ->Args({2048, 2048, 2048})      \
      ->Args({8, 4096, 4096})         \
      ->Args({512, 4096, 1024})       \
      ->Unit(benchmark::kMillisecond) \
      ->UseRealTime()
BENCHMARK(BM_OpenBlasSgemm) GEMM_SHAPES;
BENCHMARK(BM_KernelsGemm) GEMM_SHAPES;

// Enough copies of a [k×n] fp32 weight matrix to fill 256 MiB (8× the 32 MiB
// L3), in the executor's weight memory (huge pages, core/huge_pages.h): a
// benchmark that moves to the next copy at each call reads its weights from
// DRAM, as a decode step does.
class WeightCopies {
 public:
  WeightCopies(int64_t k, int64_t n) : elements_(k * n) {
    const int64_t bytes = elements_ * static_cast<int64_t>(sizeof(float));
    copies_ = std::max<int64_t>(2, (int64_t{256} << 20) / bytes + 1);
    auto p = HostMemory().Allocate(copies_ * bytes, MemoryUse::kWeights);
    if (!p.ok()) std::abort();
    data_ = static_cast<float*>(*p);
    for (int64_t i = 0; i < copies_ * elements_; ++i) data_[i] = 0.25f + 1e-3f * (i % 7);
  }
  ~WeightCopies() { HostMemory().Free(data_); }
  WeightCopies(const WeightCopies&) = delete;
  WeightCopies& operator=(const WeightCopies&) = delete;
  const float* Next() { return data_ + (next_++ % copies_) * elements_; }

 private:
  int64_t elements_, copies_ = 0, next_ = 0;
  float* data_ = nullptr;
};

// A decode step's projection: x [m×k] times weights [k×n] (trans_b = false, as
// the executor stores them; range(4) = 1: stored [n×k], read transposed, as
// attention's Q·Kᵀ reads keys), one BLAS thread (one rank = one core). range(3),
// `impl`: 0 = cpu::Gemm (sgemv at m = 1, SmallGemm up to kSmallGemmMaxRows
// rows, else sgemm), 1 = OpenBLAS alone (sgemv at m = 1, else sgemm), 2 =
// SmallGemm at any m (where its row limit comes from). GB/s counts the weight
// bytes only.
void BM_DecodeGemm(benchmark::State& state) {
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int64_t impl = state.range(3);
  const bool trans = state.range(4) != 0;
  const int64_t ldb = trans ? k : n;
  WeightCopies w(k, n);
  std::vector<float> a(m * k, 0.5f), c(m * n);
  for (auto _ : state) {
    const float* b = w.Next();
    if (impl == 0) {
      cpu::Gemm(m, n, k, a.data(), k, b, ldb, trans, c.data(), n, 0.0f);
    } else if (impl == 2) {
      SmallGemm(m, n, k, a.data(), k, b, ldb, trans, c.data(), n, 0.0f);
    } else if (m == 1) {
      cblas_sgemv(CblasRowMajor, trans ? CblasNoTrans : CblasTrans, static_cast<int>(trans ? n : k),
                  static_cast<int>(trans ? k : n), 1.0f, b, static_cast<int>(ldb), a.data(), 1,
                  0.0f, c.data(), 1);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans,
                  static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(),
                  static_cast<int>(k), b, static_cast<int>(ldb), 0.0f, c.data(),
                  static_cast<int>(n));
    }
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, m, n, k);
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(k * n * 4) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}
// bench-dense-250m's projections (hidden 1024, 16 + 2·4 heads of 64, FFN 2816,
// vocabulary 32000) as [k×n]: fused QKV, attention output, fused gate/up, down,
// LM head; and 4096², both layouts. m up to 64 shows where sgemm catches up.
BENCHMARK(BM_DecodeGemm)
    ->ArgNames({"m", "k", "n", "impl", "trans"})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32}, {1024}, {1536, 1024, 5632, 32000}, {0, 1, 2}, {0}})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32, 48, 64}, {2816}, {1024}, {0, 1, 2}, {0}})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32, 48, 64}, {4096}, {4096}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One decode step (step 0 after a 128-token prefill, batch 8) of tiny-dense on one rank.
void BM_TinyDenseDecodeStepTp1(benchmark::State& state) {
  Experiment e;
  e.name = "bench";
  e.model = *LoadZooModel("tiny-dense", DefaultModelsDir());
  e.cluster =
      *LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/local-cpu.yaml");
  e.workload.batch_size = 8;
  e.workload.sequence_length = 128;
  e.workload.tokens_to_generate = 2;
  auto pl = Placement::Create(e);
  auto builder = ProgramBuilder::Create(e, *pl);
  auto prefill = builder->Build(Phase::kPrefill, 0);
  auto step = builder->Build(Phase::kDecode, 0);
  LocalCommunicator comm;
  auto backend = NewCpuBackend();
  ExecutorOptions options;
  options.record_ops = false;
  auto ex = Executor::Create(e, *pl, backend.get(), &comm, options);
  if (!pl.ok() || !builder.ok() || !ex.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    (void)(*ex)->Reset();
    (void)(*ex)->Run(*prefill);
    state.ResumeTiming();
    (void)(*ex)->Run(*step);
  }
}
BENCHMARK(BM_TinyDenseDecodeStepTp1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shardscope::runtime

BENCHMARK_MAIN();
