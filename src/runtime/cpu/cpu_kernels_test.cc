// Each CPU kernel against a plain reference loop (double accumulation).
#include "runtime/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace shardscope::runtime::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> Random(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// max |a − b| / max(max |b|, tiny): the normalised error used for every kernel.
double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double err = 0.0, mag = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    mag = std::max(mag, std::abs(static_cast<double>(b[i])));
  }
  return err / mag;
}

// Reference causal attention of one head-set (doubles), same contract as cpu::Attention.
void RefAttention(const AttentionArgs& a) {
  const int64_t group = a.hq / a.hkv;
  for (int64_t i = 0; i < a.tq; ++i) {
    for (int64_t h = 0; h < a.hq; ++h) {
      const int64_t g = h / group;
      std::vector<double> s;
      std::vector<int64_t> keys;
      for (int64_t j = 0; j < a.tk; ++j) {
        if (a.kpos[j] > a.qpos[i]) continue;
        double dot = 0.0;
        for (int64_t d = 0; d < a.dqk; ++d) {
          dot += static_cast<double>(a.q[i * a.q_stride + h * a.dqk + d]) *
                 a.k[j * a.k_stride + g * a.dqk + d];
        }
        s.push_back(dot * a.scale);
        keys.push_back(j);
      }
      float* out = a.out + i * a.out_stride + h * a.dv;
      if (s.empty()) {
        for (int64_t d = 0; d < a.dv; ++d) out[d] = 0.0f;
        a.lse[i * a.hq + h] = kNegInf;
        continue;
      }
      double mx = s[0], sum = 0.0;
      for (double x : s) mx = std::max(mx, x);
      for (double x : s) sum += std::exp(x - mx);
      for (int64_t d = 0; d < a.dv; ++d) {
        double o = 0.0;
        for (size_t u = 0; u < s.size(); ++u) {
          o += std::exp(s[u] - mx) / sum * a.v[keys[u] * a.v_stride + g * a.dv + d];
        }
        out[d] = static_cast<float>(o);
      }
      a.lse[i * a.hq + h] = static_cast<float>(mx + std::log(sum));
    }
  }
}

TEST(CpuKernelsTest, GemmMatchesReferenceWithStridesTransposeAndBeta) {
  const int64_t n = 13, kk = 19, lda = 21, ldc = 15;
  // m = 1 takes the matrix-vector path (decode), m = 7 SmallGemm's (a small
  // batch), m = 40 sgemm's.
  for (auto [m, trans] : {std::pair<int64_t, bool>{7, false},
                          {7, true},
                          {1, false},
                          {1, true},
                          {40, false},
                          {40, true}}) {
    const int64_t ldb = trans ? 23 : 17;
    auto a = Random(m * lda, 1);
    auto b = Random((trans ? n : kk) * ldb, 2);
    auto c = Random(m * ldc, 3);
    std::vector<float> ref = c;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.5 * c[i * ldc + j];
        for (int64_t p = 0; p < kk; ++p) {
          s += static_cast<double>(a[i * lda + p]) * (trans ? b[j * ldb + p] : b[p * ldb + j]);
        }
        ref[i * ldc + j] = static_cast<float>(s);
      }
    }
    Gemm(m, n, kk, a.data(), lda, b.data(), ldb, trans, c.data(), ldc, 0.5f);
    EXPECT_LT(RelErr(c, ref), 1e-6) << "m " << m << " trans_b " << trans;
  }
}

// Every path of Gemm (sgemv at m = 1, SmallGemm up to kSmallGemmMaxRows rows,
// sgemm above) keeps cblas_sgemm's beta = 0 contract: c is written, never read,
// so NaN left in a reused buffer does not leak; k = 0 scales c by beta.
TEST(CpuKernelsTest, GemmWithBetaZeroIgnoresWhatCHeld) {
  const int64_t n = 11, kk = 9;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t m : {1, 2, 5, 8, 9, 40}) {
    for (bool trans : {false, true}) {
      auto a = Random(m * kk, 4);
      auto b = Random(n * kk, 5);
      std::vector<float> c(static_cast<size_t>(m * n), nan);
      Gemm(m, n, kk, a.data(), kk, b.data(), trans ? kk : n, trans, c.data(), n, 0.0f);
      std::vector<float> ref(c.size());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double s = 0.0;
          for (int64_t p = 0; p < kk; ++p) {
            s += static_cast<double>(a[i * kk + p]) * (trans ? b[j * kk + p] : b[p * n + j]);
          }
          ref[i * n + j] = static_cast<float>(s);
        }
      }
      EXPECT_LT(RelErr(c, ref), 1e-6) << "m " << m << " trans_b " << trans;
      std::vector<float> z(static_cast<size_t>(m * n), nan);
      Gemm(m, n, 0, a.data(), kk, b.data(), n, trans, z.data(), n, 0.0f);
      EXPECT_EQ(z, std::vector<float>(z.size(), 0.0f)) << "k = 0, m " << m;
    }
  }
}

TEST(CpuKernelsTest, RmsNormAndBiasAndAdd) {
  const int64_t m = 3, n = 32;
  auto x = Random(m * n, 4);
  auto w = Random(n, 5);
  std::vector<float> y(m * n), ref(m * n);
  for (int64_t i = 0; i < m; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += x[i * n + j] * x[i * n + j];
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    for (int64_t j = 0; j < n; ++j) ref[i * n + j] = static_cast<float>(x[i * n + j] * inv * w[j]);
  }
  RmsNorm(x.data(), n, w.data(), y.data(), n, m, n, 1e-6f);
  EXPECT_LT(RelErr(y, ref), 1e-6);
  std::vector<float> bias = Random(n, 6), z = y;
  AddBias(z.data(), bias.data(), m, n);
  EXPECT_FLOAT_EQ(z[n + 5], y[n + 5] + bias[5]);
  Add(y.data(), z.data(), m * n);
  EXPECT_FLOAT_EQ(z[2 * n + 7], 2 * y[2 * n + 7] + bias[7]);
}

TEST(CpuKernelsTest, RopeRotatesTheRightPairsInBothStyles) {
  const int64_t tokens = 3, heads = 2, stride = 40, head_stride = 20, rot = 8, offset = 4;
  const std::vector<int64_t> pos = {0, 5, 1000};
  for (RopeStyle style : {RopeStyle::kHalfSplit, RopeStyle::kInterleaved}) {
    RopeSpec spec;
    spec.style = style;
    spec.theta = 500.0;
    auto x = Random(tokens * stride, 7);
    std::vector<float> ref = x;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < rot / 2; ++i) {
          const double angle = pos[t] * std::pow(500.0, -2.0 * i / rot);
          const int64_t base = t * stride + h * head_stride + offset;
          const int64_t ia = style == RopeStyle::kHalfSplit ? base + i : base + 2 * i;
          const int64_t ib = style == RopeStyle::kHalfSplit ? base + i + rot / 2 : base + 2 * i + 1;
          ref[ia] = static_cast<float>(x[ia] * std::cos(angle) - x[ib] * std::sin(angle));
          ref[ib] = static_cast<float>(x[ib] * std::cos(angle) + x[ia] * std::sin(angle));
        }
      }
    }
    Rope(x.data() + offset, tokens, stride, heads, head_stride, rot, pos.data(), spec);
    EXPECT_LT(RelErr(x, ref), 1e-5);
  }
}

TEST(CpuKernelsTest, YarnKeepsFastDimsInterpolatesSlowOnesAndScales) {
  RopeSpec spec;
  spec.scaling.kind = RopeScalingKind::kYarn;
  spec.scaling.factor = 40.0;
  spec.scaling.original_max_positions = 4096;
  spec.scaling.mscale = 1.0;
  spec.scaling.mscale_all_dim = 0.0;
  const int64_t dim = 64;
  const std::vector<double> inv = RopeInvFreq(spec, dim);
  // Correction range for theta 1e4, beta 32 / 1: dims [10, 23] ramp.
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double base = std::pow(10000.0, -2.0 * i / dim);
    if (i <= 10) {
      EXPECT_NEAR(inv[i], base, 1e-12 * base) << i;
    }
    if (i >= 23) {
      EXPECT_NEAR(inv[i], base / 40.0, 1e-12 * base) << i;
    }
    if (i > 10 && i < 23) {
      EXPECT_LT(inv[i], base);
      EXPECT_GT(inv[i], base / 40.0);
    }
  }
  EXPECT_NEAR(RopeMscale(spec), 0.1 * std::log(40.0) + 1.0, 1e-12);
  spec.scaling.mscale_all_dim = 1.0;  // DeepSeek-V3: the two cancel
  EXPECT_DOUBLE_EQ(RopeMscale(spec), 1.0);
  spec.scaling.factor = 1.0;
  EXPECT_DOUBLE_EQ(RopeInvFreq(spec, dim)[20], std::pow(10000.0, -40.0 / dim));
}

// Llama 3.1's rope_scaling (factor 8, low 1, high 4, context 8192, theta 5e5,
// head_dim 128); expected values worked out by hand from transformers' formula.
TEST(CpuKernelsTest, Llama3ScalingKeepsHighInterpolatesLowSmoothsBetween) {
  RopeSpec spec;
  spec.theta = 500000.0;
  spec.scaling = {.kind = RopeScalingKind::kLlama3,
                  .factor = 8.0,
                  .original_max_positions = 8192,
                  .low_freq_factor = 1.0,
                  .high_freq_factor = 4.0};
  const std::vector<double> inv = RopeInvFreq(spec, 128);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);                       // wavelength 2π: kept
  EXPECT_NEAR(inv[20], 0.016560440080994446, 1e-15);   // 379 < 2048: kept
  EXPECT_NEAR(inv[63], 3.068925988914511e-07, 1e-20);  // 2.6e6 > 8192: / 8
  EXPECT_NEAR(inv[32], 0.0005248461609929547, 1e-15);  // 4443: smooth 0.2813
  EXPECT_DOUBLE_EQ(RopeMscale(spec), 1.0);
  spec.scaling = {.kind = RopeScalingKind::kLinear, .factor = 4.0};
  EXPECT_NEAR(RopeInvFreq(spec, 128)[32], std::pow(500000.0, -0.5) / 4.0, 1e-18);
}

TEST(CpuKernelsTest, CausalAttentionWithGqaPositionsAndLse) {
  const int64_t tq = 6, tk = 9, hq = 4, hkv = 2, dqk = 8, dv = 5;
  const int64_t qs = hq * dqk + 3, ks = hkv * dqk, vs = hkv * dv + 1;
  auto q = Random(tq * qs, 8), kk = Random(tk * ks, 9), v = Random(tk * vs, 10);
  // Zigzag-like positions: some queries see no key at all.
  const std::vector<int64_t> qpos = {0, 1, 2, 10, 11, 12};
  const std::vector<int64_t> kpos = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> out(tq * hq * dv), lse(tq * hq), ref_out(out.size()), ref_lse(lse.size());
  AttentionArgs a{q.data(),    qs,          kk.data(), ks,         v.data(), vs,
                  tq,          tk,          hq,        hkv,        dqk,      dv,
                  qpos.data(), kpos.data(), 0.3f,      out.data(), hq * dv,  lse.data()};
  Attention(a);
  a.out = ref_out.data(), a.lse = ref_lse.data();
  RefAttention(a);
  EXPECT_LT(RelErr(out, ref_out), 1e-5);
  EXPECT_EQ(lse[0], kNegInf);  // query at position 0 sees none of keys 1..9
  EXPECT_EQ(out[0], 0.0f);
  for (size_t i = hq; i < lse.size(); ++i) EXPECT_NEAR(lse[i], ref_lse[i], 1e-5) << i;
}

// More queries than one block of the kernel's causal skipping (64 rows): each
// block reads only the keys up to its latest query. A chunk after a cached
// prefix, a ring block whose keys all come after the first queries (a block
// that sees no key: zeros, lse −inf) and unsorted keys (no skipping) all match
// the reference.
TEST(CpuKernelsTest, CausalAttentionOverManyQueryBlocks) {
  const int64_t tq = 150, tk = 200, hq = 2, hkv = 1, d = 8;
  auto q = Random(tq * hq * d, 30), kk = Random(tk * hkv * d, 31), v = Random(tk * hkv * d, 32);
  std::vector<int64_t> qpos(tq), chunk(tk), ring(tk), shuffled(tk);
  for (int64_t i = 0; i < tq; ++i) qpos[i] = i;
  for (int64_t j = 0; j < tk; ++j) {
    chunk[j] = j - 50;  // the queries are the chunk's last 150 of 200 positions
    ring[j] = j + 100;  // keys 100..299: queries 0..99 see none
    shuffled[j] = (j * 37) % tk - 50;
  }
  for (const std::vector<int64_t>* kpos : {&chunk, &ring, &shuffled}) {
    std::vector<float> out(tq * hq * d), lse(tq * hq), ref_out(out.size()), ref_lse(lse.size());
    AttentionArgs a{q.data(),    hq * d,       kk.data(), hkv * d,    v.data(), hkv * d,
                    tq,          tk,           hq,        hkv,        d,        d,
                    qpos.data(), kpos->data(), 0.3f,      out.data(), hq * d,   lse.data()};
    Attention(a);
    a.out = ref_out.data(), a.lse = ref_lse.data();
    RefAttention(a);
    EXPECT_LT(RelErr(out, ref_out), 1e-5);
    for (size_t i = 0; i < lse.size(); ++i) {
      if (ref_lse[i] == kNegInf) {
        EXPECT_EQ(lse[i], kNegInf) << i;
      } else {
        EXPECT_NEAR(lse[i], ref_lse[i], 1e-4) << i;
      }
    }
  }
}

TEST(CpuKernelsTest, DecodeAttentionMatchesFullAttentionOverTheCache) {
  const int64_t hq = 4, hkv = 1, d = 16;
  const std::vector<int64_t> len = {5, 11};
  std::vector<std::vector<float>> caches;
  auto q = Random(2 * hq * d, 11);
  std::vector<float> out(2 * hq * d), lse(2 * hq);
  DecodeAttentionArgs a;
  a.q = q.data(), a.q_stride = hq * d, a.k_stride = 2 * d, a.v_stride = 2 * d;
  a.hq = hq, a.hkv = hkv, a.dqk = d, a.dv = d, a.scale = 0.25f, a.out = out.data();
  a.out_stride = hq * d, a.lse = lse.data(), a.len = len;
  for (int64_t r = 0; r < 2; ++r) caches.push_back(Random(len[r] * 2 * d, 12 + r));
  for (int64_t r = 0; r < 2; ++r) {
    a.k.push_back(caches[r].data());
    a.v.push_back(caches[r].data() + d);  // K and V interleaved in one row
  }
  DecodeAttention(a);
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<int64_t> kpos(len[r]);
    for (int64_t j = 0; j < len[r]; ++j) kpos[j] = j;
    const int64_t qpos = len[r];
    std::vector<float> ref(hq * d), ref_lse(hq);
    AttentionArgs f{q.data() + r * hq * d,
                    hq * d,
                    caches[r].data(),
                    2 * d,
                    caches[r].data() + d,
                    2 * d,
                    1,
                    len[r],
                    hq,
                    hkv,
                    d,
                    d,
                    &qpos,
                    kpos.data(),
                    0.25f,
                    ref.data(),
                    hq * d,
                    ref_lse.data()};
    RefAttention(f);
    std::vector<float> got(out.begin() + r * hq * d, out.begin() + (r + 1) * hq * d);
    EXPECT_LT(RelErr(got, ref), 1e-5);
    EXPECT_NEAR(lse[r * hq + 2], ref_lse[2], 1e-5);
  }
}

TEST(CpuKernelsTest, LseMergeOfKeyBlocksEqualsAttentionOverAllKeys) {
  const int64_t tq = 4, tk = 12, h = 2, d = 8;
  auto q = Random(tq * h * d, 14), kk = Random(tk * h * d, 15), v = Random(tk * h * d, 16);
  std::vector<int64_t> qpos = {3, 6, 9, 11}, kpos(tk);
  for (int64_t j = 0; j < tk; ++j) kpos[j] = j;
  std::vector<float> full(tq * h * d), full_lse(tq * h);
  AttentionArgs a{q.data(),    h * d,       kk.data(), h * d,       v.data(), h * d,
                  tq,          tk,          h,         h,           d,        d,
                  qpos.data(), kpos.data(), 0.35f,     full.data(), h * d,    full_lse.data()};
  RefAttention(a);
  // Three blocks of 4 keys, each attended separately (some rows fully masked).
  std::vector<std::vector<float>> outs(3, std::vector<float>(tq * h * d)), lses(3);
  std::vector<const float*> op, lp;
  for (int b = 0; b < 3; ++b) {
    lses[b].resize(tq * h);
    AttentionArgs p = a;
    p.k = kk.data() + b * 4 * h * d, p.v = v.data() + b * 4 * h * d, p.tk = 4;
    p.kpos = kpos.data() + b * 4, p.out = outs[b].data(), p.lse = lses[b].data();
    Attention(p);
    op.push_back(outs[b].data()), lp.push_back(lses[b].data());
  }
  std::vector<float> merged(tq * h * d), merged_lse(tq * h);
  AttentionMerge(op, lp, tq * h, d, merged.data(), merged_lse.data());
  EXPECT_LT(RelErr(merged, full), 1e-5);
  EXPECT_LT(RelErr(merged_lse, full_lse), 1e-5);
}

TEST(CpuKernelsTest, MlaAbsorbedDecodeEqualsTheExpandedForm) {
  // One request, H heads, latent r, rope part p, nope n, value v.
  const int64_t heads = 2, r = 12, p = 4, n = 6, vd = 5, len = 7;
  auto latent = Random(len * (r + p), 17);       // cache rows: [c (r) | k_rope (p)]
  auto kv_b = Random(r * heads * (n + vd), 18);  // [r × H·(n + v)]
  auto q = Random(heads * (n + p), 19);          // per head [q_nope | q_rope]
  const float scale = 0.2f;
  // Expanded: K_h = [c·W_UK_h | k_rope], V_h = c·W_UV_h.
  std::vector<float> kfull(len * heads * (n + p)), vfull(len * heads * vd);
  for (int64_t j = 0; j < len; ++j) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t c = 0; c < n + vd; ++c) {
        double s = 0;
        for (int64_t x = 0; x < r; ++x) {
          s += latent[j * (r + p) + x] * kv_b[x * heads * (n + vd) + h * (n + vd) + c];
        }
        if (c < n) {
          kfull[(j * heads + h) * (n + p) + c] = static_cast<float>(s);
        } else {
          vfull[(j * heads + h) * vd + c - n] = static_cast<float>(s);
        }
      }
      for (int64_t c = 0; c < p; ++c) {
        kfull[(j * heads + h) * (n + p) + n + c] = latent[j * (r + p) + r + c];
      }
    }
  }
  std::vector<int64_t> kpos(len);
  for (int64_t j = 0; j < len; ++j) kpos[j] = j;
  const int64_t qpos = len;
  std::vector<float> ref(heads * vd), ref_lse(heads);
  RefAttention({q.data(), heads * (n + p), kfull.data(), heads * (n + p), vfull.data(), heads * vd,
                1, len, heads, heads, n + p, vd, &qpos, kpos.data(), scale, ref.data(), heads * vd,
                ref_lse.data()});
  // Absorbed: q_lat_h = q_nope_h · W_UK_hᵀ, attend over the latent, o_h = o_lat_h · W_UV_h.
  std::vector<float> qa(heads * (r + p)), olat(heads * r), lse(heads), out(heads * vd);
  for (int64_t h = 0; h < heads; ++h) {
    Gemm(1, r, n, q.data() + h * (n + p), n + p, kv_b.data() + h * (n + vd), heads * (n + vd), true,
         qa.data() + h * (r + p), r + p);
    CopyRows(q.data() + h * (n + p) + n, 0, qa.data() + h * (r + p) + r, 0, 1, p);
  }
  DecodeAttentionArgs d;
  d.q = qa.data(), d.q_stride = heads * (r + p), d.k = {latent.data()}, d.v = {latent.data()};
  d.len = {len}, d.k_stride = r + p, d.v_stride = r + p, d.hq = heads, d.hkv = 1;
  d.dqk = r + p, d.dv = r, d.scale = scale, d.out = olat.data(), d.out_stride = heads * r;
  d.lse = lse.data();
  DecodeAttention(d);
  for (int64_t h = 0; h < heads; ++h) {
    Gemm(1, vd, r, olat.data() + h * r, r, kv_b.data() + h * (n + vd) + n, heads * (n + vd), false,
         out.data() + h * vd, vd);
  }
  EXPECT_LT(RelErr(out, ref), 1e-5);
  EXPECT_LT(RelErr(lse, ref_lse), 1e-5);
}

TEST(CpuKernelsTest, SwiGluAndGelu) {
  const int64_t m = 2, inter = 5;
  auto gu = Random(m * 2 * inter, 20, -3, 3);
  std::vector<float> out(m * inter), ref(m * inter);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < inter; ++j) {
      const double g = gu[i * 2 * inter + j], u = gu[i * 2 * inter + inter + j];
      ref[i * inter + j] = static_cast<float>(g / (1 + std::exp(-g)) * u);
    }
  }
  SwiGlu(gu.data(), m, inter, out.data());
  EXPECT_LT(RelErr(out, ref), 1e-6);
  auto x = Random(64, 21, -4, 4);
  std::vector<float> y(64), yref(64);
  for (int i = 0; i < 64; ++i)
    yref[i] = static_cast<float>(0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0))));
  Gelu(x.data(), 64, y.data());
  EXPECT_LT(RelErr(y, yref), 1e-3);  // tanh form vs exact erf form
}

TEST(CpuKernelsTest, SoftmaxRouterPicksTopKAndNormalises) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 1.5f, 0.0f};
  RouterOpArgs a;
  a.top_k = 2;
  int32_t idx[2];
  float w[2];
  a.normalize = false;
  Router(logits.data(), 1, 6, a, nullptr, idx, w);
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 3);  // tie with 4: lower index
  double z = 0;
  for (float l : logits) z += std::exp(l);
  EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
  a.normalize = true;
  Router(logits.data(), 1, 6, a, nullptr, idx, w);
  EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
  EXPECT_NEAR(w[0] / w[1], std::exp(0.5), 1e-5);
}

TEST(CpuKernelsTest, SigmoidBiasRouterLimitsGroups) {
  // 4 groups of 2. Expert 6 has the best single score, but group 3 (experts 6, 7)
  // sums lower than groups 0 and 1, so with topk_group 2 it is excluded.
  const std::vector<float> logits = {2.0f, 1.9f, 1.8f, 1.8f, -3.0f, -3.0f, 3.0f, -5.0f};
  const std::vector<float> bias = {0, 0, 0, 0, 0, 0, 0, 0.1f};
  RouterOpArgs a;
  a.kind = RouterScore::kSigmoidBias;
  a.top_k = 2, a.n_group = 4, a.topk_group = 2;
  int32_t idx[2];
  float w[2];
  Router(logits.data(), 1, 8, a, bias.data(), idx, w);
  EXPECT_EQ(idx[0], 0);
  EXPECT_EQ(idx[1], 1);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  EXPECT_NEAR(w[0], sig(2.0) / (sig(2.0) + sig(1.9)), 1e-6);
  a.topk_group = 4;  // no limit: expert 6 wins
  Router(logits.data(), 1, 8, a, bias.data(), idx, w);
  EXPECT_EQ(idx[0], 6);
  EXPECT_EQ(idx[1], 0);
}

TEST(CpuKernelsTest, PermuteGroupsByExpertAndUnpermuteWeightsBack) {
  const int64_t tokens = 4, h = 3, k = 2, experts = 3;
  auto x = Random(tokens * h, 22);
  const std::vector<int32_t> idx = {2, 0, 0, 1, 2, 1, 0, 2};
  const std::vector<float> w = {0.7f, 0.3f, 0.5f, 0.5f, 0.9f, 0.1f, 0.2f, 0.8f};
  std::vector<float> perm(tokens * k * h);
  std::vector<int64_t> row_of(tokens * k), counts(experts);
  Permute(x.data(), tokens, h, idx.data(), k, experts, perm.data(), row_of.data(), counts.data());
  EXPECT_EQ(counts, (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(row_of, (std::vector<int64_t>{5, 0, 1, 3, 6, 4, 2, 7}));
  for (int64_t a = 0; a < tokens * k; ++a) {
    EXPECT_EQ(perm[row_of[a] * h + 1], x[(a / k) * h + 1]);
  }
  // Expert e multiplies by (e + 1); the shared output adds 1.
  std::vector<float> y = perm, shared(tokens * h, 1.0f), out(tokens * h), ref(tokens * h);
  for (int64_t a = 0; a < tokens * k; ++a) {
    for (int64_t c = 0; c < h; ++c) y[row_of[a] * h + c] *= static_cast<float>(idx[a] + 1);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < h; ++c) {
      double s = 1.0;
      for (int64_t j = 0; j < k; ++j) s += w[t * k + j] * (idx[t * k + j] + 1) * x[t * h + c];
      ref[t * h + c] = static_cast<float>(s);
    }
  }
  Unpermute(y.data(), tokens, h, row_of.data(), w.data(), k, shared.data(), out.data());
  EXPECT_LT(RelErr(out, ref), 1e-6);
}

TEST(CpuKernelsTest, VocabParallelEmbeddingShardsSumToTheFullLookup) {
  const int64_t vocab = 11, h = 4;
  auto table = Random(vocab * h, 23);
  const std::vector<int32_t> ids = {0, 5, 6, 10};
  std::vector<float> full(ids.size() * h), a(full.size()), b(full.size());
  Embedding(ids.data(), 4, table.data(), 0, vocab, h, full.data());
  Embedding(ids.data(), 4, table.data(), 0, 6, h, a.data());
  Embedding(ids.data(), 4, table.data() + 6 * h, 6, 5, h, b.data());
  EXPECT_EQ(a[2 * h], 0.0f);  // id 6 is not in shard [0, 6)
  Add(a.data(), b.data(), static_cast<int64_t>(b.size()));
  EXPECT_EQ(b, full);
  EXPECT_EQ(full[3 * h + 2], table[10 * h + 2]);
}

TEST(CpuKernelsTest, LmHeadAndGreedySampling) {
  const int64_t tokens = 2, h = 8, vocab = 10;
  auto x = Random(tokens * h, 24), w = Random(h * vocab, 25);
  std::vector<float> logits(tokens * vocab);
  LmHead(x.data(), tokens, h, w.data(), vocab, logits.data());
  double l13 = 0;
  for (int64_t c = 0; c < h; ++c) l13 += x[h + c] * w[c * vocab + 3];
  EXPECT_NEAR(logits[vocab + 3], l13, 1e-5);
  const std::vector<float> v = {1, 5, 5, 2, 0, 0, -1, 0};
  float mx[2];
  int32_t id[2];
  ArgMax(v.data(), 2, 4, 100, mx, id);
  EXPECT_EQ(id[0], 101);  // first of the tied maxima, offset by the shard start
  EXPECT_EQ(mx[0], 5.0f);
  EXPECT_EQ(id[1], 100);  // row {0, 0, −1, 0}
}

TEST(CpuKernelsTest, CopyRowsAppendsIntoAStridedCache) {
  const std::vector<float> src = {1, 2, 3, 4, 5, 6};
  std::vector<float> cache(12, 0.0f);
  CopyRows(src.data(), 3, cache.data() + 4 + 1, 4, 2, 2);
  EXPECT_EQ(cache, (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 0, 0, 4, 5, 0}));
}

}  // namespace
}  // namespace shardscope::runtime::cpu
