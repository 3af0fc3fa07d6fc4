#include "runtime/device/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace shardscope::runtime {
namespace {

// DeepSeek's yarn_find_correction_dim.
double CorrectionDim(double rotations, int64_t dim, double base, int64_t max_pos) {
  return (static_cast<double>(dim) *
          std::log(static_cast<double>(max_pos) / (rotations * 2.0 * std::numbers::pi))) /
         (2.0 * std::log(base));
}

}  // namespace

double YarnMscale(double scale, double mscale) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

std::vector<double> RopeInvFreq(const RopeSpec& spec, int64_t rot_dim) {
  const int64_t half = rot_dim / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv[i] = 1.0 / std::pow(spec.theta, static_cast<double>(2 * i) / static_cast<double>(rot_dim));
  }
  const RopeScaling& rs = spec.scaling;
  switch (rs.kind) {
    case RopeScalingKind::kNone:
      return inv;
    case RopeScalingKind::kLinear:
      for (double& f : inv) f /= rs.factor;
      return inv;
    case RopeScalingKind::kLlama3: {
      // Wavelengths longer than the pre-training context / low_freq_factor are
      // interpolated, shorter than context / high_freq_factor kept, smooth between.
      const double context = static_cast<double>(rs.original_max_positions);
      const double low_wavelen = context / rs.low_freq_factor;
      const double high_wavelen = context / rs.high_freq_factor;
      for (double& f : inv) {
        const double wavelen = 2.0 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f /= rs.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth =
              (context / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
          f = (1.0 - smooth) * f / rs.factor + smooth * f;
        }
      }
      return inv;
    }
    case RopeScalingKind::kYarn:
      break;
  }
  if (rs.factor <= 1.0) return inv;
  // Dimensions rotating fast keep their frequency (extrapolation), slow ones are
  // interpolated by the factor, with a linear ramp between the two.
  double low =
      std::floor(CorrectionDim(rs.beta_fast, rot_dim, spec.theta, rs.original_max_positions));
  double high =
      std::ceil(CorrectionDim(rs.beta_slow, rot_dim, spec.theta, rs.original_max_positions));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(rot_dim - 1));
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < half; ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extra_mask = 1.0 - ramp;
    const double extra = inv[i];
    const double inter = inv[i] / rs.factor;
    inv[i] = inter * (1.0 - extra_mask) + extra * extra_mask;
  }
  return inv;
}

double RopeMscale(const RopeSpec& spec) {
  const RopeScaling& rs = spec.scaling;
  if (rs.kind != RopeScalingKind::kYarn || rs.factor <= 1.0) return 1.0;
  return YarnMscale(rs.factor, rs.mscale) / YarnMscale(rs.factor, rs.mscale_all_dim);
}

}  // namespace shardscope::runtime
