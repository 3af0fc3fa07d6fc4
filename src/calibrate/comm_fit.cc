#include "calibrate/comm_fit.h"

#include <cmath>

namespace shardscope::calibrate {
namespace {

// Weighted least squares of t = a + b·S with weights w / t² (relative error).
bool SolveLine(const std::vector<MessageSample>& s, double* a, double* b) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const MessageSample& m : s) {
    const double w = static_cast<double>(m.count) / (m.seconds * m.seconds);
    sw += w, sx += w * m.bytes, sy += w * m.seconds;
    sxx += w * m.bytes * m.bytes, sxy += w * m.bytes * m.seconds;
  }
  const double det = sw * sxx - sx * sx;
  if (!(std::abs(det) > 1e-300 * sw * sxx)) return false;
  *b = (sw * sxy - sx * sy) / det;
  *a = (sy - *b * sx) / sw;
  return true;
}

// Slope through the origin: t = b·S.
double SolveSlope(const std::vector<MessageSample>& s) {
  double sxx = 0, sxy = 0;
  for (const MessageSample& m : s) {
    const double w = static_cast<double>(m.count) / (m.seconds * m.seconds);
    sxx += w * m.bytes * m.bytes, sxy += w * m.bytes * m.seconds;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

}  // namespace

LinkFit FitLink(const std::vector<MessageSample>& in) {
  std::vector<MessageSample> s;
  for (const MessageSample& m : in) {
    if (m.bytes > 0 && m.seconds > 0) s.push_back(m);
  }
  LinkFit fit;
  if (s.empty()) return fit;
  double a = 0, b = 0;
  const bool sizes = s.size() >= 2 && SolveLine(s, &a, &b);
  if (sizes && a >= 0 && b > 0) {
    fit.latency = a;
    fit.latency_known = true;
  } else {
    // One size, or a line that would need negative latency or bandwidth:
    // no latency term.
    b = SolveSlope(s);
    fit.latency_known = false;
  }
  fit.algbw = b > 0 ? 1 / b : 0;
  double n = 0, sq = 0;
  for (const MessageSample& m : s) {
    const double rel = (fit.latency + m.bytes * b - m.seconds) / m.seconds;
    n += static_cast<double>(m.count);
    sq += static_cast<double>(m.count) * rel * rel;
  }
  fit.rms_relative = n > 0 ? std::sqrt(sq / n) : 0;
  return fit;
}

}  // namespace shardscope::calibrate
