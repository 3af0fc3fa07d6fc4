// CCL-Bench compatibility: every metric name CCL-Bench's tools/main.py accepts, mapped
// onto our metrics. A mapped name reports our definition (docs/metrics.md) converted to
// CCL-Bench's unit (percent, GB, ...); a name we cannot support reports why. Also the
// resolution of `analyze --metric` names, ours and CCL-Bench's. Stateless; thread-safe.
#ifndef SHARDSCOPE_ANALYSIS_CCL_BENCH_NAMES_H_
#define SHARDSCOPE_ANALYSIS_CCL_BENCH_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

#include "analysis/metric_set.h"
#include "core/status.h"

namespace shardscope::analysis {

// One CCL-Bench name. Its value is ours × times / divisor × scale, where `ours`, `times`
// and `divisor` are our metric keys ("step_time.mean", "busbw_util[collective all_gather]")
// and an empty `times`/`divisor` is 1. An `ours` ending in " *]" ("comm_op_time[collective *]")
// selects every scope of that name starting with the text before '*' and gives one value
// per scope. An empty `ours` means we give no value, and `unavailable` says why.
struct CclBenchMetric {
  std::string_view name = {};  // CCL-Bench's name, e.g. "avg_step_time"
  std::string_view ours = {};
  std::string_view times = {};
  std::string_view divisor = {};
  double scale = 1;
  std::string_view unit = {};  // CCL-Bench's unit
  // When `ours` is absent but this key has a value, CCL-Bench's value is a true 0
  // (e.g. no all-gather ops in a trace whose comm ops carry bytes).
  std::string_view zero_unless = {};
  std::string_view unavailable = {};
};

// Every name, in the order of CCL-Bench's tools/README.md metric tables, then names only
// older versions of tools/main.py accepted.
const std::vector<CclBenchMetric>& CclBenchMetrics();
// nullptr when `name` is not a CCL-Bench name.
const CclBenchMetric* FindCclBenchMetric(std::string_view name);

// `m` computed from our metrics: metrics named m.name (scoped like ours for a " *]"
// mapping) in CCL-Bench's unit, or "not available" with our reason.
MetricSet EvaluateCclBench(const CclBenchMetric& m, const MetricSet& ours);

// What `analyze --metric NAME...` prints: our metrics selected as MetricSet::Filter does,
// then, for each CCL-Bench name that is not also the key of one of our run-level metrics,
// its EvaluateCclBench rows. Everything when `names` is empty.
MetricSet SelectMetrics(const MetricSet& all, const std::vector<std::string>& names);

// OK when every name selects something in one of `analyses` or is a CCL-Bench name;
// otherwise InvalidArgument naming the first unknown name and the closest known names.
Status CheckMetricNames(const std::vector<const MetricSet*>& analyses,
                        const std::vector<std::string>& names);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_CCL_BENCH_NAMES_H_
