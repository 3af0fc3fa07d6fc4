// Interval arithmetic and summary statistics the metrics are built from.
// Intervals are half-open [begin, end) in int64 nanoseconds.
#ifndef SHARDSCOPE_ANALYSIS_STATS_H_
#define SHARDSCOPE_ANALYSIS_STATS_H_

#include <cstdint>
#include <vector>

namespace shardscope::analysis {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
};

// Sorts and merges overlapping or touching intervals in place; drops empty ones.
void MergeIntervals(std::vector<Interval>* intervals);
// Total length of merged intervals.
int64_t TotalLength(const std::vector<Interval>& merged);
// |a ∩ b| for two merged lists.
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b);

// Percentile with linear interpolation between closest ranks (numpy's default):
// position p/100 · (n − 1) in the sorted values. `sorted` must be sorted and non-empty.
double Percentile(const std::vector<double>& sorted, double p);

struct Summary {
  int64_t count = 0;
  double mean = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Summary of `values` (possibly reordered in place). count == 0 when empty.
Summary Summarize(std::vector<double>* values);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_STATS_H_
