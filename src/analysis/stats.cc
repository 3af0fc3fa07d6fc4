#include "analysis/stats.h"

#include <algorithm>
#include <cmath>

namespace shardscope::analysis {

void MergeIntervals(std::vector<Interval>* intervals) {
  auto& v = *intervals;
  auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  // Intervals built from ops sorted by start are already in order: skip the sort.
  if (!std::is_sorted(v.begin(), v.end(), by_begin)) std::sort(v.begin(), v.end(), by_begin);
  size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.end <= iv.begin) continue;
    if (out > 0 && iv.begin <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, iv.end);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

int64_t TotalLength(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& iv : merged) total += iv.end - iv.begin;
  return total;
}

int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin, b[j].begin);
    int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) total += hi - lo;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

double Percentile(const std::vector<double>& sorted, double p) {
  double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary Summarize(std::vector<double>* values) {
  Summary s;
  if (values->empty()) return s;
  auto& v = *values;
  const size_t n = v.size();
  s.count = static_cast<int64_t>(n);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n);
  // Order statistics by selection, in increasing rank, each on what is left
  // above the previous one: O(n) instead of a full sort.
  size_t from = 0;
  auto at = [&](size_t k) {
    std::nth_element(v.begin() + from, v.begin() + k, v.end());
    from = k;
    return v[k];
  };
  auto percentile = [&](double p) {
    double pos = p / 100.0 * static_cast<double>(n - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, n - 1);
    double a = at(lo);
    double b = hi == lo ? a : *std::min_element(v.begin() + lo + 1, v.end());
    return a + (b - a) * (pos - static_cast<double>(lo));
  };
  s.min = at(0);
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p99 = percentile(99);
  s.max = *std::max_element(v.begin() + from, v.end());
  return s;
}

}  // namespace shardscope::analysis
