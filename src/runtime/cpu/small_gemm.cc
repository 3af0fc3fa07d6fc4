// SmallGemm: AVX2/FMA code compiled for that target alone (the build does not
// assume it) and chosen at run time; plain loops elsewhere.
#include "runtime/cpu/small_gemm.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SHARDSCOPE_SMALL_GEMM_X86 1
#define SHARDSCOPE_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace shardscope::runtime {
namespace {

// c = beta · c over m rows of n; beta = 0 stores zeros without reading c.
void ScaleC(int64_t m, int64_t n, float* c, int64_t ldc, float beta) {
  if (beta == 1.0f) return;
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(ci, ci + n, 0.0f);
    } else {
      for (int64_t j = 0; j < n; ++j) ci[j] *= beta;
    }
  }
}

// The portable form (CPUs without AVX2/FMA), terms in the order of the vector
// code for the [k×n] layout: beta · c first, then p = 0, 1, ….
void GemmLoops(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, bool trans_b, float* c, int64_t ldc, float beta) {
  ScaleC(m, n, c, ldc, beta);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = c[i * ldc + j];
      for (int64_t p = 0; p < k; ++p) {
        s += a[i * lda + p] * (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
      }
      c[i * ldc + j] = s;
    }
  }
}

#ifdef SHARDSCOPE_SMALL_GEMM_X86

// Lanes [0, rem) set, for the last 1–7 columns (or k elements) of a row.
SHARDSCOPE_AVX2 __m256i TailMask(int64_t rem) {
  alignas(32) static const int32_t kBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kBits + 8 - rem));
}

// ---- b is [k×n]. Register tiles of up to 6 rows × 16 columns of c (12
// accumulators) walk down a panel of b (128 rows × a block of 256 columns);
// each row of b is read left to right across the tiles, a software prefetch
// two tiles ahead keeping its next lines coming from memory, and further
// groups of rows (m > 6) reread the panel from L2. Each element of c sums
// beta · c, then its terms in order of p. (Streaming b row by row into rows of
// c kept in L1, as sgemv does, measured no faster at 2 rows and slower from 3.)
constexpr int64_t kColBlock = 256;  // columns: one panel row is 1 KiB
constexpr int64_t kRowPanel = 128;  // rows of b per panel: 128 KiB
constexpr int kMaxGroupNN = 6;      // rows of c per group: 6 × 2 vectors of accumulators

// R rows × V vectors of 8 columns (the last one masked when Masked) of c, plus
// kb rows of b, prefetching 32 columns ahead (a hint only: never faults, even
// past the end of b; in cache already for the second group of rows).
template <int R, int V, bool Masked>
SHARDSCOPE_AVX2 void StripNN(int64_t kb, const float* a, int64_t lda, const float* b, int64_t ldb,
                             float* c, int64_t ldc, __m256i mask) {
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const float* cp = c + r * ldc + 8 * v;
      acc[r][v] = Masked && v == V - 1 ? _mm256_maskload_ps(cp, mask) : _mm256_loadu_ps(cp);
    }
  }
  for (int64_t p = 0; p < kb; ++p) {
    const float* bp = b + p * ldb;
    _mm_prefetch(reinterpret_cast<const char*>(bp + 32), _MM_HINT_T0);
    __m256 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      bv[v] =
          Masked && v == V - 1 ? _mm256_maskload_ps(bp + 8 * v, mask) : _mm256_loadu_ps(bp + 8 * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      float* cp = c + r * ldc + 8 * v;
      if (Masked && v == V - 1) {
        _mm256_maskstore_ps(cp, mask, acc[r][v]);
      } else {
        _mm256_storeu_ps(cp, acc[r][v]);
      }
    }
  }
}

// One group of R rows over nb columns and kb rows of b: strips of 16, then 8,
// then the last 1–7 columns.
template <int R>
SHARDSCOPE_AVX2 void PanelNN(int64_t nb, int64_t kb, const float* a, int64_t lda, const float* b,
                             int64_t ldb, float* c, int64_t ldc) {
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t j = 0;
  for (; j + 16 <= nb; j += 16) {
    StripNN<R, 2, false>(kb, a, lda, b + j, ldb, c + j, ldc, all);
  }
  if (j + 8 <= nb) {
    StripNN<R, 1, false>(kb, a, lda, b + j, ldb, c + j, ldc, all);
    j += 8;
  }
  if (j < nb) StripNN<R, 1, true>(kb, a, lda, b + j, ldb, c + j, ldc, TailMask(nb - j));
}

SHARDSCOPE_AVX2 void GroupNN(int rows, int64_t nb, int64_t kb, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float* c, int64_t ldc) {
  switch (rows) {
    case 1:
      return PanelNN<1>(nb, kb, a, lda, b, ldb, c, ldc);
    case 2:
      return PanelNN<2>(nb, kb, a, lda, b, ldb, c, ldc);
    case 3:
      return PanelNN<3>(nb, kb, a, lda, b, ldb, c, ldc);
    case 4:
      return PanelNN<4>(nb, kb, a, lda, b, ldb, c, ldc);
    case 5:
      return PanelNN<5>(nb, kb, a, lda, b, ldb, c, ldc);
    default:
      return PanelNN<6>(nb, kb, a, lda, b, ldb, c, ldc);
  }
}

// Rows [begin, end) of group g when m rows split into `groups` groups as
// evenly as can be (7 rows in 2 → 3 + 4, 8 → 4 + 4).
int64_t GroupBegin(int64_t m, int64_t groups, int64_t g) { return g * m / groups; }

SHARDSCOPE_AVX2 void GemmTileNN(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                                const float* b, int64_t ldb, float* c, int64_t ldc) {
  const int64_t groups = (m + kMaxGroupNN - 1) / kMaxGroupNN;
  for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
    const int64_t nb = std::min(kColBlock, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kRowPanel) {
      const int64_t kb = std::min(kRowPanel, k - p0);
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t i = GroupBegin(m, groups, g);
        const int rows = static_cast<int>(GroupBegin(m, groups, g + 1) - i);
        GroupNN(rows, nb, kb, a + i * lda + p0, lda, b + p0 * ldb + j0, ldb, c + i * ldc + j0, ldc);
      }
    }
  }
}

// ---- b is [n×k]: c[i][j] is a dot product of a's row i and b's row j. Four
// rows of b at a time stream once from memory against up to 3 rows of a (12
// accumulators; further groups reread them from L1 or L2); each dot product
// keeps 8 partial sums, added at the end, then beta · c.
constexpr int64_t kColsNT = 4;
constexpr int kMaxGroupNT = 3;

SHARDSCOPE_AVX2 float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// R rows of a against J rows of b: c[r][j] = a_r · b_j + beta · c[r][j].
template <int R, int J>
SHARDSCOPE_AVX2 void DotsNT(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                            float* c, int64_t ldc, float beta) {
  __m256 acc[R][J];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    __m256 bv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) bv[j] = _mm256_loadu_ps(b + j * ldb + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_loadu_ps(a + r * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = _mm256_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
  if (p < k) {
    const __m256i mask = TailMask(k - p);
    __m256 bv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) bv[j] = _mm256_maskload_ps(b + j * ldb + p, mask);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_maskload_ps(a + r * lda + p, mask);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = _mm256_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      float* cp = c + r * ldc + j;
      const float s = HorizontalSum(acc[r][j]);
      *cp = beta == 0.0f ? s : s + beta * *cp;
    }
  }
}

template <int J>
SHARDSCOPE_AVX2 void GroupNT(int rows, int64_t k, const float* a, int64_t lda, const float* b,
                             int64_t ldb, float* c, int64_t ldc, float beta) {
  static_assert(kMaxGroupNT == 3);
  switch (rows) {
    case 1:
      return DotsNT<1, J>(k, a, lda, b, ldb, c, ldc, beta);
    case 2:
      return DotsNT<2, J>(k, a, lda, b, ldb, c, ldc, beta);
    default:
      return DotsNT<3, J>(k, a, lda, b, ldb, c, ldc, beta);
  }
}

SHARDSCOPE_AVX2 void ColumnsNT(int cols, int rows, int64_t k, const float* a, int64_t lda,
                               const float* b, int64_t ldb, float* c, int64_t ldc, float beta) {
  switch (cols) {
    case 1:
      return GroupNT<1>(rows, k, a, lda, b, ldb, c, ldc, beta);
    case 2:
      return GroupNT<2>(rows, k, a, lda, b, ldb, c, ldc, beta);
    case 3:
      return GroupNT<3>(rows, k, a, lda, b, ldb, c, ldc, beta);
    default:
      return GroupNT<4>(rows, k, a, lda, b, ldb, c, ldc, beta);
  }
}

SHARDSCOPE_AVX2 void GemmNT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                            const float* b, int64_t ldb, float* c, int64_t ldc, float beta) {
  const int64_t groups = (m + kMaxGroupNT - 1) / kMaxGroupNT;
  for (int64_t j = 0; j < n; j += kColsNT) {
    const int cols = static_cast<int>(std::min(kColsNT, n - j));
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t i = GroupBegin(m, groups, g);
      const int rows = static_cast<int>(GroupBegin(m, groups, g + 1) - i);
      ColumnsNT(cols, rows, k, a + i * lda, lda, b + j * ldb, ldb, c + i * ldc + j, ldc, beta);
    }
  }
}

#endif  // SHARDSCOPE_SMALL_GEMM_X86

}  // namespace

bool SmallGemmVectorized() {
#ifdef SHARDSCOPE_SMALL_GEMM_X86
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

void SmallGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, bool trans_b, float* c, int64_t ldc, float beta) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return ScaleC(m, n, c, ldc, beta);
#ifdef SHARDSCOPE_SMALL_GEMM_X86
  if (SmallGemmVectorized()) {
    if (trans_b) return GemmNT(m, n, k, a, lda, b, ldb, c, ldc, beta);
    ScaleC(m, n, c, ldc, beta);
    return GemmTileNN(m, n, k, a, lda, b, ldb, c, ldc);
  }
#endif
  GemmLoops(m, n, k, a, lda, b, ldb, trans_b, c, ldc, beta);
}

}  // namespace shardscope::runtime
