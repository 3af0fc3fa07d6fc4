// Memory bandwidth of this host, for the local-cpu cluster description
// (configs/hardware/local-cpu.yaml, docs/hardware.md): a plain streaming read
// (the peak a core's loads reach) and OpenBLAS sgemv over a matrix far larger
// than the caches (what a decode step's weight reads reach). Bytes per second
// of the data read; OpenBLAS on one thread unless OPENBLAS_NUM_THREADS says
// otherwise (one rank = one core). Each runs on memory from the executor's
// allocator (`huge` = 1: transparent huge pages where the kernel grants them,
// as the executor's weights) and on std::vector's (4 KiB pages).
// Results: docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "runtime/device/arena.h"

namespace {

// n floats set to v: from the executor's host memory (`huge`) or a vector.
class Floats {
 public:
  Floats(int64_t n, float v, bool huge) {
    if (huge) {
      auto p = shardscope::runtime::HostMemory().Allocate(n * static_cast<int64_t>(sizeof(float)),
                                                          shardscope::runtime::MemoryUse::kWeights);
      if (!p.ok()) std::abort();
      data_ = static_cast<float*>(*p);
    } else {
      vector_.resize(static_cast<size_t>(n));
      data_ = vector_.data();
    }
    std::fill(data_, data_ + n, v);
  }
  ~Floats() {
    if (vector_.empty()) shardscope::runtime::HostMemory().Free(data_);
  }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* data() { return data_; }

 private:
  std::vector<float> vector_;
  float* data_ = nullptr;
};

void SetBytes(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

void OneBlasThreadUnlessSet() {
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
}

// Sums a[0, n) into 8 independent accumulators (vectorisable without
// reassociation; __restrict: gcc vectorises only when s cannot alias a), so
// the loads, not the adds, are the limit.
void Sum8(const float* __restrict a, size_t n, float* __restrict s) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[i + j];
  }
}

// Sums range(0) MiB of floats.
void BM_StreamRead(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) * (1 << 20) / sizeof(float);
  Floats buffer(static_cast<int64_t>(n), 1.0f, state.range(1) != 0);
  for (auto _ : state) {
    float s[8] = {};
    Sum8(buffer.data(), n, s);
    benchmark::DoNotOptimize(s);
  }
  SetBytes(state, static_cast<int64_t>(n * sizeof(float)));
}
BENCHMARK(BM_StreamRead)
    ->ArgNames({"MiB", "huge"})
    ->ArgsProduct({{512}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// y = W x with W [range(0) × range(1)] fp32, row-major: the decode GEMV.
void BM_OpenBlasSgemv(benchmark::State& state) {
  OneBlasThreadUnlessSet();
  const int64_t m = state.range(0), n = state.range(1);
  Floats w(m * n, 0.5f, state.range(2) != 0);
  std::vector<float> x(static_cast<size_t>(n), 0.25f), y(static_cast<size_t>(m));
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), 1.0f,
                w.data(), static_cast<int>(n), x.data(), 1, 0.0f, y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  SetBytes(state, m * n * static_cast<int64_t>(sizeof(float)));
}
// 256 MiB: far beyond the 32 MiB L3, so every call streams from DRAM.
BENCHMARK(BM_OpenBlasSgemv)
    ->ArgNames({"m", "n", "huge"})
    ->ArgsProduct({{8192}, {8192}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same one-token product through sgemm (m = 1, x · W with W [k × n]), as
// cpu::Gemm issues a decode step's projections.
void BM_OpenBlasSgemmOneRow(benchmark::State& state) {
  OneBlasThreadUnlessSet();
  const int64_t k = state.range(0), n = state.range(1);
  Floats w(k * n, 0.5f, state.range(2) != 0);
  std::vector<float> x(static_cast<size_t>(k), 0.25f), y(static_cast<size_t>(n));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, static_cast<int>(n),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), w.data(),
                static_cast<int>(n), 0.0f, y.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(y.data());
  }
  SetBytes(state, k * n * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_OpenBlasSgemmOneRow)
    ->ArgNames({"k", "n", "huge"})
    ->ArgsProduct({{8192}, {8192}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One-thread SGEMM on a large square shape: the compute peak one rank reaches.
void BM_OpenBlasSgemmOneThread(benchmark::State& state) {
  OneBlasThreadUnlessSet();
  const int64_t s = state.range(0);
  std::vector<float> a(static_cast<size_t>(s * s), 0.5f), b(a), c(a.size());
  const int n = static_cast<int>(s);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(s * s * s) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_OpenBlasSgemmOneThread)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
