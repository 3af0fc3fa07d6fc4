// SmallGemm against a double-precision loop: every row count it serves and one
// more, both layouts of b, column and k tails, column blocks and row panels,
// strided views, and cblas_sgemm's beta contract.
#include "runtime/cpu/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace shardscope::runtime {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f;

// rows × ld floats: the first `cols` of each row uniform in [−1, 1), the
// padding `pad` (NaN in a and b: a kernel that reads it poisons its result).
std::vector<float> Matrix(int64_t rows, int64_t cols, int64_t ld, float pad, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * ld), pad);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) v[i * ld + j] = d(rng);
  }
  return v;
}

struct Shape {
  int64_t m, n, k;
  bool trans_b;
  float beta;
};

// Runs SmallGemm on strided views and checks every element of c against the
// double sum within a bound relative to the sum of its terms' magnitudes
// (fp32 accumulation of k + 1 terms), and that c's padding is untouched.
void Check(const Shape& s, uint32_t seed) {
  const int64_t lda = s.k + 3, ldb = (s.trans_b ? s.k : s.n) + 5, ldc = s.n + 7;
  std::mt19937 rng(seed);
  const auto a = Matrix(s.m, s.k, lda, kNaN, rng);
  const auto b = s.trans_b ? Matrix(s.n, s.k, ldb, kNaN, rng) : Matrix(s.k, s.n, ldb, kNaN, rng);
  auto c = Matrix(s.m, s.n, ldc, kSentinel, rng);
  if (s.beta == 0.0f) {
    // beta = 0 must not read c (cblas_sgemm's contract; the executor's arena
    // hands out reused buffers).
    for (int64_t i = 0; i < s.m; ++i)
      std::fill(c.begin() + i * ldc, c.begin() + i * ldc + s.n, kNaN);
  }
  const std::vector<float> c0 = c;
  SmallGemm(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, s.trans_b, c.data(), ldc, s.beta);
  const std::string what = "m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " +
                           std::to_string(s.k) + " trans_b " + std::to_string(s.trans_b) +
                           " beta " + std::to_string(s.beta);
  int bad = 0;
  for (int64_t i = 0; i < s.m && bad < 5; ++i) {
    for (int64_t j = 0; j < s.n && bad < 5; ++j) {
      double want = 0.0, mag = 0.0;
      if (s.beta != 0.0f) {
        want = static_cast<double>(s.beta) * c0[i * ldc + j];
        mag = std::abs(want);
      }
      for (int64_t p = 0; p < s.k; ++p) {
        const double t =
            static_cast<double>(a[i * lda + p]) * (s.trans_b ? b[j * ldb + p] : b[p * ldb + j]);
        want += t;
        mag += std::abs(t);
      }
      const double got = c[i * ldc + j];
      const double tol = (static_cast<double>(s.k) + 2.0) * 0x1p-24 * mag + 1e-30;
      if (!(std::abs(got - want) <= tol)) {
        ADD_FAILURE() << what << ": c[" << i << "][" << j << "] = " << got << ", want " << want
                      << " ± " << tol;
        ++bad;
      }
    }
    for (int64_t j = s.n; j < ldc; ++j) {
      if (c[i * ldc + j] != kSentinel) {
        ADD_FAILURE() << what << ": wrote c[" << i << "][" << j << "], past column n";
        ++bad;
        break;
      }
    }
  }
}

TEST(SmallGemmTest, MatchesDoubleSumsForEveryRowCountLayoutTailAndBeta) {
  // (n, k): tails of 1–7 columns and k elements (and of 1–3 columns of the
  // 4-column steps of trans_b); n past one column block (256) with strips of
  // 16, 8 and a masked rest (300 = 256 + 2·16 + 8 + 4); k past one row panel
  // (128), so that panels accumulate into c.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{1, 1},   {7, 5},   {14, 19},
                                                          {37, 29}, {300, 9}, {24, 131}};
  uint32_t seed = 1;
  for (int64_t m = 1; m <= kSmallGemmMaxRows + 1; ++m) {
    for (bool trans_b : {false, true}) {
      for (auto [n, k] : sizes) {
        for (float beta : {0.0f, 0.5f, 1.0f}) Check({m, n, k, trans_b, beta}, seed++);
      }
    }
  }
}

TEST(SmallGemmTest, ADecodeShapeOfTheBenchmarkModel) {
  // bench-dense-250m's out projection at batch 4, its fused QKV at batch 7 and
  // its FFN down projection at the most rows SmallGemm serves, both layouts.
  for (bool trans_b : {false, true}) {
    Check({4, 1024, 1024, trans_b, 0.0f}, 100);
    Check({7, 1536, 1024, trans_b, 1.0f}, 101);
    Check({kSmallGemmMaxRows, 1024, 2816, trans_b, 0.5f}, 102);
  }
}

TEST(SmallGemmTest, EmptyKScalesCByBetaAndZeroIgnoresNaN) {
  for (bool trans_b : {false, true}) {
    std::vector<float> c = {kNaN, 2.0f, 3.0f, kNaN};
    SmallGemm(2, 2, 0, nullptr, 1, nullptr, 1, trans_b, c.data(), 2, 0.0f);
    EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
    c = {1.0f, 2.0f, 3.0f, 4.0f};
    SmallGemm(2, 2, 0, nullptr, 1, nullptr, 1, trans_b, c.data(), 2, 0.5f);
    EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  }
}

TEST(SmallGemmTest, NoRowsOrColumnsTouchNothing) {
  std::vector<float> c = {kSentinel};
  const float one = 1.0f;
  SmallGemm(0, 1, 1, &one, 1, &one, 1, false, c.data(), 1, 0.0f);
  SmallGemm(1, 0, 1, &one, 1, &one, 1, true, c.data(), 1, 0.0f);
  EXPECT_EQ(c[0], kSentinel);
}

}  // namespace
}  // namespace shardscope::runtime
