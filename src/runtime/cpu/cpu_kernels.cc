// The CPU kernels (runtime::cpu): GEMMs (and the score/value products of
// attention) on OpenBLAS — sgemv for one row, sgemm for many — and on
// SmallGemm for 2–32 rows (kSmallGemmMaxRows: small-batch decode steps), plain
// loops for the rest. fp32 throughout.
#include "runtime/cpu/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/cpu/small_gemm.h"

namespace shardscope::runtime::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Softmax of `n` scaled scores in place; returns the log of the denominator.
// All-masked rows (every score −inf) become zeros with lse −inf.
float SoftmaxInPlace(float* s, int64_t n) {
  float mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  if (mx == kNegInf) {
    std::fill(s, s + n, 0.0f);
    return kNegInf;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return mx + static_cast<float>(std::log(sum));
}

// Group-limited routing (DeepSeek-V3): a group scores the sum of its two best
// selection scores; only the topk_group best groups stay eligible.
void MaskGroups(int64_t experts, const RouterOpArgs& a, std::vector<float>& choice) {
  const int64_t per = experts / a.n_group;
  std::vector<float> group_score(static_cast<size_t>(a.n_group));
  for (int64_t g = 0; g < a.n_group; ++g) {
    std::vector<float> members(choice.begin() + g * per, choice.begin() + (g + 1) * per);
    std::sort(members.begin(), members.end(), std::greater<float>());
    group_score[g] = members[0] + (per > 1 ? members[1] : 0.0f);
  }
  std::vector<int64_t> groups(static_cast<size_t>(a.n_group));
  std::iota(groups.begin(), groups.end(), 0);
  std::stable_sort(groups.begin(), groups.end(),
                   [&](int64_t x, int64_t y) { return group_score[x] > group_score[y]; });
  for (int64_t r = a.topk_group; r < a.n_group; ++r) {
    const int64_t g = groups[r];
    for (int64_t x = g * per; x < (g + 1) * per; ++x) choice[x] = kNegInf;
  }
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          bool trans_b, float* c, int64_t ldc, float beta) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // c = beta · c; as cblas_sgemm, beta = 0 stores zeros without reading c.
    SmallGemm(m, n, k, a, lda, b, ldb, trans_b, c, ldc, beta);
    return;
  }
  if (m == 1) {
    // One row (a decode step): sgemv streams B at about twice sgemm's rate here,
    // and 1.1–1.7× SmallGemm's (docs/BENCHMARKS.md). c = a·B is Bᵀ·a for B
    // [k×n], B·a for B stored [n×k].
    cblas_sgemv(CblasRowMajor, trans_b ? CblasNoTrans : CblasTrans,
                static_cast<int>(trans_b ? n : k), static_cast<int>(trans_b ? k : n), 1.0f, b,
                static_cast<int>(ldb), a, 1, beta, c, 1);
    return;
  }
  if (m <= kSmallGemmMaxRows && SmallGemmVectorized()) {
    // A few rows (a small batch's decode step): sgemm packs B first and
    // streams it at a quarter to a third of sgemv's rate; SmallGemm reads
    // it once (docs/BENCHMARKS.md, "Small-batch GEMMs").
    SmallGemm(m, n, k, a, lda, b, ldb, trans_b, c, ldc, beta);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void AddBias(float* x, const float* bias, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) x[i * n + j] += bias[j];
  }
}

void Add(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void RmsNorm(const float* x, int64_t x_stride, const float* w, float* y, int64_t y_stride,
             int64_t m, int64_t n, float eps) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * x_stride;
    float* yi = y + i * y_stride;
    double ss = 0.0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xi[j]) * xi[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t j = 0; j < n; ++j) yi[j] = xi[j] * inv * w[j];
  }
}

void Rope(float* x, int64_t tokens, int64_t token_stride, int64_t heads, int64_t head_stride,
          int64_t rot_dim, const int64_t* positions, const RopeSpec& spec) {
  const std::vector<double> inv = RopeInvFreq(spec, rot_dim);
  const double mscale = RopeMscale(spec);
  const int64_t half = rot_dim / 2;
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(positions[t]) * inv[i];
      cs[i] = static_cast<float>(std::cos(angle) * mscale);
      sn[i] = static_cast<float>(std::sin(angle) * mscale);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* p = x + t * token_stride + h * head_stride;
      for (int64_t i = 0; i < half; ++i) {
        float* a = spec.style == RopeStyle::kHalfSplit ? p + i : p + 2 * i;
        float* b = spec.style == RopeStyle::kHalfSplit ? p + i + half : p + 2 * i + 1;
        const float x0 = *a, x1 = *b;
        *a = x0 * cs[i] - x1 * sn[i];
        *b = x1 * cs[i] + x0 * sn[i];
      }
    }
  }
}

void Attention(const AttentionArgs& a) {
  if (a.tq == 0) return;
  const int64_t group = a.hq / a.hkv;
  // Causal skipping, as tiled (flash) attention kernels do: with the keys in
  // position order, a block of kQueryBlock query rows reads only the keys up
  // to its latest query's position — the rest are masked for all its rows —
  // so a causal prompt costs about half its full score matrix, and a block
  // of keys all later than the queries (a ring step's) costs nothing.
  constexpr int64_t kQueryBlock = 64;
  const bool sorted = std::is_sorted(a.kpos, a.kpos + a.tk);
  const int64_t block = std::min(a.tq, kQueryBlock);
  std::vector<float> s(static_cast<size_t>(block * std::max<int64_t>(a.tk, 1)));
  for (int64_t h = 0; h < a.hq; ++h) {
    const int64_t g = h / group;
    for (int64_t i0 = 0; i0 < a.tq; i0 += block) {
      const int64_t rows = std::min(block, a.tq - i0);
      const int64_t latest = *std::max_element(a.qpos + i0, a.qpos + i0 + rows);
      const int64_t nk = sorted ? std::upper_bound(a.kpos, a.kpos + a.tk, latest) - a.kpos : a.tk;
      float* out = a.out + i0 * a.out_stride + h * a.dv;
      if (nk == 0) {
        for (int64_t i = 0; i < rows; ++i) {
          std::fill(out + i * a.out_stride, out + i * a.out_stride + a.dv, 0.0f);
          if (a.lse) a.lse[(i0 + i) * a.hq + h] = kNegInf;
        }
        continue;
      }
      // S = scale · Q_h K_g^T, masked, softmax by row, O = P V_g.
      Gemm(rows, nk, a.dqk, a.q + i0 * a.q_stride + h * a.dqk, a.q_stride, a.k + g * a.dqk,
           a.k_stride, true, s.data(), nk, 0.0f);
      for (int64_t i = 0; i < rows; ++i) {
        float* row = s.data() + i * nk;
        for (int64_t j = 0; j < nk; ++j) {
          row[j] = a.kpos[j] <= a.qpos[i0 + i] ? row[j] * a.scale : kNegInf;
        }
        const float lse = SoftmaxInPlace(row, nk);
        if (a.lse) a.lse[(i0 + i) * a.hq + h] = lse;
      }
      Gemm(rows, a.dv, nk, s.data(), nk, a.v + g * a.dv, a.v_stride, false, out, a.out_stride,
           0.0f);
    }
  }
}

void DecodeAttention(const DecodeAttentionArgs& a) {
  const int64_t requests = static_cast<int64_t>(a.len.size());
  const int64_t group = a.hq / a.hkv;
  std::vector<float> s;
  for (int64_t r = 0; r < requests; ++r) {
    const int64_t n = a.len[r];
    s.resize(static_cast<size_t>(std::max<int64_t>(n, 1)));
    for (int64_t h = 0; h < a.hq; ++h) {
      const int64_t g = h / group;
      const float* q = a.q + r * a.q_stride + h * a.dqk;
      float* out = a.out + r * a.out_stride + h * a.dv;
      if (n == 0) {
        std::fill(out, out + a.dv, 0.0f);
        if (a.lse) a.lse[r * a.hq + h] = kNegInf;
        continue;
      }
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(a.dqk),
                  a.scale, a.k[r] + g * a.dqk, static_cast<int>(a.k_stride), q, 1, 0.0f, s.data(),
                  1);
      const float lse = SoftmaxInPlace(s.data(), n);
      if (a.lse) a.lse[r * a.hq + h] = lse;
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(n), static_cast<int>(a.dv), 1.0f,
                  a.v[r] + g * a.dv, static_cast<int>(a.v_stride), s.data(), 1, 0.0f, out, 1);
    }
  }
}

void AttentionMerge(const std::vector<const float*>& outs, const std::vector<const float*>& lses,
                    int64_t rows, int64_t dv, float* out, float* lse_out) {
  const size_t parts = outs.size();
  for (int64_t i = 0; i < rows; ++i) {
    float mx = kNegInf;
    for (size_t p = 0; p < parts; ++p) mx = std::max(mx, lses[p][i]);
    float* o = out + i * dv;
    std::fill(o, o + dv, 0.0f);
    if (mx == kNegInf) {
      if (lse_out) lse_out[i] = kNegInf;
      continue;
    }
    double sum = 0.0;
    for (size_t p = 0; p < parts; ++p) sum += std::exp(static_cast<double>(lses[p][i]) - mx);
    const double lse = mx + std::log(sum);
    for (size_t p = 0; p < parts; ++p) {
      if (lses[p][i] == kNegInf) continue;
      const float w = static_cast<float>(std::exp(static_cast<double>(lses[p][i]) - lse));
      const float* op = outs[p] + i * dv;
      for (int64_t j = 0; j < dv; ++j) o[j] += w * op[j];
    }
    if (lse_out) lse_out[i] = static_cast<float>(lse);
  }
}

void SwiGlu(const float* gate_up, int64_t m, int64_t inter, float* out) {
  for (int64_t i = 0; i < m; ++i) {
    const float* g = gate_up + i * 2 * inter;
    const float* u = g + inter;
    float* o = out + i * inter;
    for (int64_t j = 0; j < inter; ++j) o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j];
  }
}

void Gelu(const float* x, int64_t n, float* out) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + std::tanh(kC * (v + 0.044715f * v * v * v)));
  }
}

void Router(const float* logits, int64_t tokens, int64_t experts, const RouterOpArgs& a,
            const float* bias, int32_t* idx, float* weight) {
  const int64_t e = experts;
  std::vector<float> score(static_cast<size_t>(e)), choice(static_cast<size_t>(e));
  std::vector<int32_t> order(static_cast<size_t>(e));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * e;
    if (a.kind == RouterScore::kSoftmax) {
      std::copy(l, l + e, score.begin());
      SoftmaxInPlace(score.data(), e);
      choice = score;
    } else {
      for (int64_t x = 0; x < e; ++x) {
        score[x] = 1.0f / (1.0f + std::exp(-l[x]));
        choice[x] = score[x] + (bias ? bias[x] : 0.0f);
      }
      if (a.n_group > 1 && a.topk_group < a.n_group) MaskGroups(e, a, choice);
    }
    // Top-k of the selection scores: larger first, lower index on ties.
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + a.top_k, order.end(),
                      [&](int32_t x, int32_t y) {
                        return choice[x] != choice[y] ? choice[x] > choice[y] : x < y;
                      });
    double sum = 0.0;
    for (int64_t j = 0; j < a.top_k; ++j) sum += score[order[j]];
    for (int64_t j = 0; j < a.top_k; ++j) {
      idx[t * a.top_k + j] = order[j];
      const double w = a.normalize ? score[order[j]] / sum : score[order[j]];
      weight[t * a.top_k + j] = static_cast<float>(w * a.scale);
    }
  }
}

void Permute(const float* x, int64_t tokens, int64_t h, const int32_t* idx, int64_t k,
             int64_t experts, float* out, int64_t* row_of, int64_t* counts) {
  std::fill(counts, counts + experts, 0);
  for (int64_t a = 0; a < tokens * k; ++a) ++counts[idx[a]];
  std::vector<int64_t> next(static_cast<size_t>(experts), 0);
  for (int64_t e = 1; e < experts; ++e) next[e] = next[e - 1] + counts[e - 1];
  for (int64_t a = 0; a < tokens * k; ++a) {
    const int64_t row = next[idx[a]]++;
    row_of[a] = row;
    std::copy(x + (a / k) * h, x + (a / k + 1) * h, out + row * h);
  }
}

void Unpermute(const float* y, int64_t tokens, int64_t h, const int64_t* row_of,
               const float* weight, int64_t k, const float* shared, float* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    float* o = out + t * h;
    if (shared) {
      std::copy(shared + t * h, shared + (t + 1) * h, o);
    } else {
      std::fill(o, o + h, 0.0f);
    }
    for (int64_t j = 0; j < k; ++j) {
      const float w = weight[t * k + j];
      const float* yr = y + row_of[t * k + j] * h;
      for (int64_t c = 0; c < h; ++c) o[c] += w * yr[c];
    }
  }
}

void Embedding(const int32_t* ids, int64_t tokens, const float* table, int64_t vocab_begin,
               int64_t vocab_count, int64_t h, float* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t row = ids[t] - vocab_begin;
    float* o = out + t * h;
    if (row >= 0 && row < vocab_count) {
      std::copy(table + row * h, table + (row + 1) * h, o);
    } else {
      std::fill(o, o + h, 0.0f);
    }
  }
}

void ArgMax(const float* x, int64_t rows, int64_t n, int64_t index_offset, float* max_value,
            int32_t* index) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = x + i * n;
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j) {
      if (r[j] > r[best]) best = j;
    }
    max_value[i] = n > 0 ? r[best] : kNegInf;
    index[i] = static_cast<int32_t>(best + index_offset);
  }
}

void CopyRows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
              int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    std::copy(src + i * src_stride, src + i * src_stride + cols, dst + i * dst_stride);
  }
}

}  // namespace shardscope::runtime::cpu
