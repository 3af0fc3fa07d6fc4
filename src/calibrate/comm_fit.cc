#include "calibrate/comm_fit.h"

#include <algorithm>
#include <cmath>

namespace shardscope::calibrate {
namespace {

// Weighted least squares of t = a + b·S with weights w / t² (relative error),
// each sample's w its count times `extra` (empty: 1).
bool SolveLine(const std::vector<MessageSample>& s, double* a, double* b,
               const std::vector<double>& extra = {}) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const MessageSample& m = s[i];
    const double w =
        static_cast<double>(m.count) * (extra.empty() ? 1.0 : extra[i]) / (m.seconds * m.seconds);
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

double Rms(const std::vector<MessageSample>& s, double a, double b) {
  double n = 0, sq = 0;
  for (const MessageSample& m : s) {
    const double rel = (a + m.bytes * b - m.seconds) / m.seconds;
    n += static_cast<double>(m.count);
    sq += static_cast<double>(m.count) * rel * rel;
  }
  return n > 0 ? std::sqrt(sq / n) : 0;
}

}  // namespace

LinkFit FitLinkRobust(const std::vector<MessageSample>& in) {
  LinkFit fit = FitLink(in);
  if (!fit.latency_known) return fit;
  std::vector<MessageSample> s;
  for (const MessageSample& m : in) {
    if (m.bytes > 0 && m.seconds > 0) s.push_back(m);
  }
  double a = fit.latency, b = 1 / fit.algbw;
  std::vector<double> weights(s.size(), 1.0);
  for (int iter = 0; iter < 50; ++iter) {
    std::vector<double> abs_r(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      abs_r[i] = std::abs((a + s[i].bytes * b - s[i].seconds) / s[i].seconds);
    }
    std::vector<double> sorted = abs_r;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double scale = std::max(1.4826 * sorted[sorted.size() / 2], 0.01);
    const double corner = 1.345 * scale;
    for (size_t i = 0; i < s.size(); ++i) {
      weights[i] = abs_r[i] <= corner ? 1.0 : corner / abs_r[i];
    }
    double na = 0, nb = 0;
    if (!SolveLine(s, &na, &nb, weights) || !(na >= 0) || !(nb > 0)) break;
    const bool settled = std::abs(na - a) <= 1e-9 * (a + 1e-12) && std::abs(nb - b) <= 1e-9 * b;
    a = na, b = nb;
    if (settled) break;
  }
  fit.latency = a;
  fit.algbw = 1 / b;
  fit.rms_relative = Rms(s, a, b);
  return fit;
}

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
