// A GEMM for a few rows (the decode steps of a small batch) that reads the
// weight matrix from memory exactly once. OpenBLAS's sgemm packs b first, and
// at 2 rows it streams b at a quarter to a third of sgemv's rate; here tiles of
// c stay in registers while b streams past them: 2–3.3× sgemm's speed at 2
// rows, 1.15–1.45× at 32, on the local-cpu host (docs/BENCHMARKS.md,
// "Small-batch GEMMs").
#ifndef SHARDSCOPE_RUNTIME_CPU_SMALL_GEMM_H_
#define SHARDSCOPE_RUNTIME_CPU_SMALL_GEMM_H_

#include <cstdint>

namespace shardscope::runtime {

// The most rows cpu::Gemm gives SmallGemm. Measured against sgemm on
// bench-dense-250m's shapes and 4096²: ≥ 1.15× up to 32 rows, still ahead at
// 48 and 64, but prefill keeps OpenBLAS's sgemm.
inline constexpr int64_t kSmallGemmMaxRows = 32;

// Whether SmallGemm runs its AVX2/FMA code on this CPU; otherwise it runs
// plain loops (correct, slow), and callers should prefer a BLAS.
bool SmallGemmVectorized();

// c[m×n] = a[m×k] · b + beta · c, row-major with leading dimensions lda, ldb,
// ldc; b is [k×n], or [n×k] read transposed when trans_b. As cblas_sgemm:
// beta = 0 writes c without reading it (NaN or garbage there is ignored). Any
// m ≥ 0, best for m ≤ kSmallGemmMaxRows: b is read from memory once, and
// again from cache once per group of up to 6 (3 when trans_b) rows.
void SmallGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, bool trans_b, float* c, int64_t ldc, float beta);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_CPU_SMALL_GEMM_H_
