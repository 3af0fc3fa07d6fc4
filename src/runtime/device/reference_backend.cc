#include "runtime/device/reference_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "runtime/device/fp32_host_backend.h"

namespace shardscope::runtime {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Softmax weights of scores s (−inf: masked) in place; returns log Σ exp, −inf when all masked.
double Softmax(std::vector<double>& s) {
  double mx = kNegInf;
  for (double x : s) mx = std::max(mx, x);
  if (mx == kNegInf) {
    std::fill(s.begin(), s.end(), 0.0);
    return kNegInf;
  }
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (double& x : s) x /= sum;
  return mx + std::log(sum);
}

class ReferenceBackend final : public Fp32HostBackend {
 public:
  std::string_view name() const override { return "reference"; }

 protected:
  void GemmF32(const F32Mat& a, const F32Mat& b, bool trans_b, const F32Mat& c) override {
    for (int64_t i = 0; i < c.rows; ++i) {
      for (int64_t j = 0; j < c.cols; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < a.cols; ++p) {
          s += static_cast<double>(a.at(i, p)) * (trans_b ? b.at(j, p) : b.at(p, j));
        }
        c.at(i, j) = static_cast<float>(s);
      }
    }
  }

  void AddF32(const float* x, float* y, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) + y[i]);
  }

  void AddBiasF32(const float* bias, const F32Mat& y) override {
    for (int64_t i = 0; i < y.rows; ++i) {
      for (int64_t j = 0; j < y.cols; ++j) {
        y.at(i, j) = static_cast<float>(static_cast<double>(y.at(i, j)) + bias[j]);
      }
    }
  }

  void RmsNormF32(const F32Mat& x, const float* w, float eps, const F32Mat& y) override {
    std::vector<double> row(static_cast<size_t>(x.cols));
    for (int64_t i = 0; i < x.rows; ++i) {
      double ss = 0.0;
      for (int64_t j = 0; j < x.cols; ++j) ss += (row[j] = x.at(i, j)) * row[j];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.cols) + eps);
      for (int64_t j = 0; j < x.cols; ++j) y.at(i, j) = static_cast<float>(row[j] * inv * w[j]);
    }
  }

  void RopeF32(const RopeOpArgs& a, const F32Mat& x) override {
    const std::vector<double> inv = RopeInvFreq(a.spec, a.head_dim);
    const double mscale = RopeMscale(a.spec);
    const int64_t half = a.head_dim / 2;
    const bool split = a.spec.style == RopeStyle::kHalfSplit;
    for (int64_t t = 0; t < x.rows; ++t) {
      for (int64_t h = 0; h < a.heads; ++h) {
        float* p = &x.at(t, h * a.head_stride);
        for (int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(a.positions[static_cast<size_t>(t)]) * inv[i];
          const double c = std::cos(angle) * mscale, s = std::sin(angle) * mscale;
          float* x0 = split ? p + i : p + 2 * i;
          float* x1 = split ? p + i + half : p + 2 * i + 1;
          const double v0 = *x0, v1 = *x1;
          *x0 = static_cast<float>(v0 * c - v1 * s);
          *x1 = static_cast<float>(v1 * c + v0 * s);
        }
      }
    }
  }

  void SwiGluF32(const float* gate_up, int64_t m, int64_t inter, float* out) override {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < inter; ++j) {
        const double g = gate_up[i * 2 * inter + j], u = gate_up[i * 2 * inter + inter + j];
        out[i * inter + j] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
      }
    }
  }

  void GeluF32(const float* x, int64_t n, float* out) override {
    const double c = std::sqrt(2.0 / 3.14159265358979323846);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i];
      out[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
    }
  }

  // One query row (head h of row i of q) over rows of k/v: out row and lse.
  static double AttendRow(const float* q, int64_t d, int64_t dv, double scale,
                          const std::vector<const float*>& k, const std::vector<const float*>& v,
                          const std::vector<bool>& visible, float* out) {
    std::vector<double> s(k.size());
    for (size_t j = 0; j < k.size(); ++j) {
      double dot = 0.0;
      for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(q[e]) * k[j][e];
      s[j] = visible[j] ? dot * scale : kNegInf;
    }
    const double lse = Softmax(s);
    for (int64_t e = 0; e < dv; ++e) {
      double o = 0.0;
      for (size_t j = 0; j < v.size(); ++j) o += s[j] * v[j][e];
      out[e] = static_cast<float>(o);
    }
    return lse;
  }

  void AttentionF32(const AttentionOpArgs& a, const F32Mat& q, const F32Mat& k, const F32Mat& v,
                    const F32Mat& out, const F32Mat& lse) override {
    const int64_t d = a.head_dim, dv = a.head_dim_v, group = a.heads / a.kv_heads;
    for (int64_t i = 0; i < q.rows; ++i) {
      for (int64_t h = 0; h < a.heads; ++h) {
        const int64_t g = h / group;
        std::vector<const float*> ks, vs;
        std::vector<bool> visible;
        for (int64_t j = 0; j < k.rows; ++j) {
          ks.push_back(&k.at(j, g * d));
          vs.push_back(&v.at(j, g * dv));
          visible.push_back(a.k_positions[j] <= a.q_positions[i]);
        }
        const double l =
            AttendRow(&q.at(i, h * d), d, dv, a.scale, ks, vs, visible, &out.at(i, h * dv));
        if (lse.p) lse.at(i, h) = static_cast<float>(l);
      }
    }
  }

  void DecodeAttentionF32(const DecodeAttentionOpArgs& a, const F32Mat& q,
                          const std::vector<F32Mat>& k, const std::vector<F32Mat>& v,
                          const F32Mat& out, const F32Mat& lse) override {
    const int64_t d = a.head_dim, dv = a.head_dim_v, group = a.heads / a.kv_heads;
    for (int64_t r = 0; r < q.rows; ++r) {
      const F32Mat& kr = k[static_cast<size_t>(r)];
      const F32Mat& vr = v[static_cast<size_t>(r)];
      for (int64_t h = 0; h < a.heads; ++h) {
        const int64_t g = h / group;
        std::vector<const float*> ks, vs;
        for (int64_t j = 0; j < kr.rows; ++j) {
          ks.push_back(&kr.at(j, g * d));
          vs.push_back(&vr.at(j, g * dv));
        }
        const double l = AttendRow(&q.at(r, h * d), d, dv, a.scale, ks, vs,
                                   std::vector<bool>(ks.size(), true), &out.at(r, h * dv));
        if (lse.p) lse.at(r, h) = static_cast<float>(l);
      }
    }
  }

  void AttentionMergeF32(const std::vector<const float*>& outs,
                         const std::vector<const float*>& lses, const F32Mat& out) override {
    for (int64_t i = 0; i < out.rows; ++i) {
      double total = 0.0;  // Σ_p exp(lse_p): the scores are small here, no max needed
      for (const float* l : lses) total += std::exp(static_cast<double>(l[i]));
      for (int64_t j = 0; j < out.cols; ++j) {
        double o = 0.0;
        for (size_t p = 0; p < outs.size(); ++p) {
          if (total > 0.0)
            o += std::exp(static_cast<double>(lses[p][i])) / total * outs[p][i * out.cols + j];
        }
        out.at(i, j) = static_cast<float>(o);
      }
    }
  }

  void RouterF32(const RouterOpArgs& a, const F32Mat& logits, const float* bias,
                 std::span<int32_t> idx, float* weight) override {
    const int64_t e = logits.cols;
    for (int64_t t = 0; t < logits.rows; ++t) {
      std::vector<double> score(static_cast<size_t>(e)), choice(static_cast<size_t>(e));
      if (a.kind == RouterScore::kSoftmax) {
        for (int64_t x = 0; x < e; ++x) score[x] = logits.at(t, x);
        Softmax(score);
        choice = score;
      } else {
        for (int64_t x = 0; x < e; ++x) {
          score[x] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits.at(t, x))));
          choice[x] = score[x] + (bias ? bias[x] : 0.0);
        }
        if (a.topk_group < a.n_group) {  // keep the groups whose two best choices sum highest
          const int64_t per = e / a.n_group;
          std::vector<std::pair<double, int64_t>> groups;
          for (int64_t g = 0; g < a.n_group; ++g) {
            std::vector<double> m(choice.begin() + g * per, choice.begin() + (g + 1) * per);
            std::sort(m.rbegin(), m.rend());
            groups.push_back({m[0] + (per > 1 ? m[1] : 0.0), g});
          }
          std::stable_sort(groups.begin(), groups.end(),
                           [](const auto& x, const auto& y) { return x.first > y.first; });
          for (int64_t r = a.topk_group; r < a.n_group; ++r) {
            const int64_t g = groups[r].second;
            for (int64_t x = g * per; x < (g + 1) * per; ++x) choice[x] = kNegInf;
          }
        }
      }
      // Top-k by repeated selection: the largest remaining, lower index on ties.
      std::vector<bool> taken(static_cast<size_t>(e), false);
      std::vector<int64_t> best;
      for (int64_t j = 0; j < a.top_k; ++j) {
        int64_t b = -1;
        for (int64_t x = 0; x < e; ++x) {
          if (!taken[x] && (b < 0 || choice[x] > choice[b])) b = x;
        }
        taken[b] = true;
        best.push_back(b);
      }
      double sum = 0.0;
      for (int64_t b : best) sum += score[b];
      for (int64_t j = 0; j < a.top_k; ++j) {
        idx[t * a.top_k + j] = static_cast<int32_t>(best[j]);
        const double w = a.normalize ? score[best[j]] / sum : score[best[j]];
        weight[t * a.top_k + j] = static_cast<float>(w * a.scale);
      }
    }
  }

  void PermuteF32(const F32Mat& x, std::span<const int32_t> idx, int64_t k,
                  std::span<int64_t> row_of, std::span<int64_t> counts,
                  const F32Mat& out) override {
    // Expert by expert, assignments in order: the stable grouping, written plainly.
    int64_t row = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
      counts[e] = 0;
      for (size_t a = 0; a < idx.size(); ++a) {
        if (idx[a] != static_cast<int32_t>(e)) continue;
        row_of[a] = row;
        for (int64_t c = 0; c < x.cols; ++c) out.at(row, c) = x.at(static_cast<int64_t>(a) / k, c);
        ++row;
        ++counts[e];
      }
    }
  }

  void UnpermuteF32(const F32Mat& y, std::span<const int64_t> row_of, const float* weight,
                    int64_t k, const float* shared, const F32Mat& out) override {
    for (int64_t t = 0; t < out.rows; ++t) {
      for (int64_t c = 0; c < out.cols; ++c) {
        double o = shared ? shared[t * out.cols + c] : 0.0;
        for (int64_t j = 0; j < k; ++j) {
          o += static_cast<double>(weight[t * k + j]) * y.at(row_of[t * k + j], c);
        }
        out.at(t, c) = static_cast<float>(o);
      }
    }
  }

  void EmbeddingF32(std::span<const int32_t> ids, const F32Mat& table, int64_t vocab_begin,
                    const F32Mat& out) override {
    for (int64_t t = 0; t < out.rows; ++t) {
      const int64_t row = ids[static_cast<size_t>(t)] - vocab_begin;
      const bool mine = row >= 0 && row < table.rows;
      for (int64_t c = 0; c < out.cols; ++c) out.at(t, c) = mine ? table.at(row, c) : 0.0f;
    }
  }

  void ArgMaxF32(const F32Mat& x, int64_t index_offset, std::span<float> max_value,
                 std::span<int32_t> index) override {
    for (int64_t i = 0; i < x.rows; ++i) {
      int64_t best = 0;
      for (int64_t j = 0; j < x.cols; ++j) {
        if (x.at(i, j) > x.at(i, best)) best = j;
      }
      max_value[i] = x.cols > 0 ? x.at(i, best) : -std::numeric_limits<float>::infinity();
      index[i] = static_cast<int32_t>(best + index_offset);
    }
  }

  void CopyF32(const F32Mat& src, const F32Mat& dst) override {
    for (int64_t i = 0; i < src.rows; ++i) {
      for (int64_t j = 0; j < src.cols; ++j) dst.at(i, j) = src.at(i, j);
    }
  }
};

}  // namespace

std::unique_ptr<Backend> NewReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace shardscope::runtime
