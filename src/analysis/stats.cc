#include "analysis/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

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

namespace {

// The order statistics of `v` from its distinct values when there are at most
// kMaxDistinct of them (regular traces repeat a few gaps and durations): one
// pass and a tiny table instead of selections over the whole vector. False, and
// *s untouched, when there are more, or a NaN or a negative zero (whose order
// against +0 selection leaves open).
bool OrderStatsOfFewValues(const std::vector<double>& v, Summary* s) {
  constexpr size_t kMaxDistinct = 64;
  constexpr size_t kSlots = 256;  // open addressing on the bit pattern
  struct Slot {
    uint64_t bits = 0;
    int64_t count = 0;  // 0: empty
  };
  std::array<Slot, kSlots> table{};
  size_t distinct = 0;
  uint64_t last_bits = 0;
  Slot* last = nullptr;
  for (double x : v) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    if (last != nullptr && bits == last_bits) {  // runs of one value are common
      ++last->count;
      continue;
    }
    if (std::isnan(x) || (x == 0 && std::signbit(x))) return false;
    size_t i = static_cast<size_t>((bits * 0x9E3779B97F4A7C15ULL) >> 56) % kSlots;
    while (table[i].count != 0 && table[i].bits != bits) i = (i + 1) % kSlots;
    if (table[i].count == 0) {
      if (++distinct > kMaxDistinct) return false;
      table[i].bits = bits;
    }
    ++table[i].count;
    last = &table[i];
    last_bits = bits;
  }
  std::vector<std::pair<double, int64_t>> sorted;  // value, count
  sorted.reserve(distinct);
  for (const Slot& slot : table) {
    if (slot.count == 0) continue;
    double x;
    std::memcpy(&x, &slot.bits, sizeof(x));
    sorted.emplace_back(x, slot.count);
  }
  std::sort(sorted.begin(), sorted.end());
  // The k-th smallest (from 0), walking on from the last call's place.
  size_t at_index = 0;
  int64_t below = 0;  // values before sorted[at_index]
  auto at = [&](size_t k) {
    if (static_cast<int64_t>(k) < below) at_index = 0, below = 0;
    while (below + sorted[at_index].second <= static_cast<int64_t>(k)) {
      below += sorted[at_index].second;
      ++at_index;
    }
    return sorted[at_index].first;
  };
  const size_t n = v.size();
  auto percentile = [&](double p) {
    double pos = p / 100.0 * static_cast<double>(n - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, n - 1);
    double a = at(lo);
    double b = hi == lo ? a : at(hi);
    return a + (b - a) * (pos - static_cast<double>(lo));
  };
  s->min = at(0);
  s->p50 = percentile(50);
  s->p90 = percentile(90);
  s->p99 = percentile(99);
  s->max = sorted.back().first;
  return true;
}

}  // namespace

Summary Summarize(std::vector<double>* values) {
  Summary s;
  if (values->empty()) return s;
  auto& v = *values;
  const size_t n = v.size();
  s.count = static_cast<int64_t>(n);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n);
  if (OrderStatsOfFewValues(v, &s)) return s;
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
