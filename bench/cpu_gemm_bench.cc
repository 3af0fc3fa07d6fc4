// CPU executor benchmarks: the Kernels::Gemm wrapper against raw OpenBLAS
// cblas_sgemm on the same shapes (the wrapper must stay ≥ 90 % of it), and one
// decode step of tiny-dense at TP1 on the CPU backend. Results: docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <vector>

#include "cluster/cluster_yaml.h"
#include "config/experiment.h"
#include "model/model_yaml.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "runtime/backend.h"
#include "runtime/executor.h"
#include "runtime/kernels.h"
#include "runtime/local_communicator.h"

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
  auto kernels = NewCpuKernels();
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    kernels->Gemm(m, n, k, a.data(), k, b.data(), n, false, c.data(), n, 0.0f);
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
