#include "sim/rank_spread.h"

#include <algorithm>
#include <cmath>

namespace shardscope::sim {
namespace {

// Φ⁻¹(p) for p in (0, 1), by bisection on Φ(x) = erfc(−x/√2) / 2 (monotone;
// 100 halvings of [−40, 40] reach double precision).
double InverseNormalCdf(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double NormalOrderScore(int64_t i, int64_t n) {
  if (n <= 1) return 0;
  return InverseNormalCdf((static_cast<double>(i) - 0.375) / (static_cast<double>(n) + 0.25));
}

std::vector<double> RankTimeScales(double spread, int64_t ranks) {
  if (!(spread > 0) || ranks <= 1) return {};
  std::vector<double> scales(static_cast<size_t>(ranks));
  for (int64_t r = 0; r < ranks; ++r) {
    // Never below 0 (thousands of ranks at a wide spread); ComputeModel keeps
    // the fast ranks' ops at or above their roofline.
    scales[static_cast<size_t>(r)] = std::max(0.0, 1 + spread * NormalOrderScore(r + 1, ranks));
  }
  return scales;
}

}  // namespace shardscope::sim
