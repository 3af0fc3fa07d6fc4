#include "runtime/reference_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace shardscope::runtime {
namespace {

class ReferenceBackend final : public Fp32HostBackend {
 public:
  std::string_view name() const override { return "reference"; }

 protected:
  void GemmF32(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) override {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
        c[i * n + j] = static_cast<float>(s);
      }
    }
  }

  void AddF32(const float* x, float* y, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) + y[i]);
  }

  void RmsNormF32(const float* x, const float* w, float* y, int64_t m, int64_t n,
                  float eps) override {
    for (int64_t i = 0; i < m; ++i) {
      double ss = 0.0;
      for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(x[i * n + j]) * x[i * n + j];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<float>(x[i * n + j] * inv * w[j]);
    }
  }

  void RopeF32(const RopeOpArgs& a, int64_t tokens, float* x) override {
    const std::vector<double> inv = RopeInvFreq(a.spec, a.head_dim);
    const double mscale = RopeMscale(a.spec);
    const int64_t half = a.head_dim / 2;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < a.heads; ++h) {
        float* p = x + (t * a.heads + h) * a.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(a.positions[static_cast<size_t>(t)]) * inv[i];
          const double c = std::cos(angle) * mscale, s = std::sin(angle) * mscale;
          const bool split = a.spec.style == RopeStyle::kHalfSplit;
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

  void AttentionF32(const AttentionOpArgs& a, int64_t tokens, const float* q, const float* k,
                    const float* v, float* out) override {
    const int64_t d = a.head_dim, group = a.heads / a.kv_heads;
    const int64_t qs = a.heads * d, kvs = a.kv_heads * d;
    std::vector<double> s(static_cast<size_t>(tokens));
    for (int64_t i = 0; i < tokens; ++i) {
      for (int64_t h = 0; h < a.heads; ++h) {
        const int64_t g = h / group;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (int64_t e = 0; e < d; ++e) {
            dot += static_cast<double>(q[i * qs + h * d + e]) * k[j * kvs + g * d + e];
          }
          s[j] = dot * a.scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t e = 0; e < d; ++e) {
          double o = 0.0;
          for (int64_t j = 0; j <= i; ++j) o += s[j] * v[j * kvs + g * d + e];
          out[i * qs + h * d + e] = static_cast<float>(o / sum);
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Backend> NewReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace shardscope::runtime
