// MetricSet: the analyzer's output — a flat list of named values, each with its
// scope (run, a rank, a group, a phase, …), unit, how it aggregates ranks, and,
// when the trace cannot support it, the reason instead of a value. Reports,
// comparisons and golden tests all work on this one shape. Value type.
#ifndef SHARDSCOPE_ANALYSIS_METRIC_SET_H_
#define SHARDSCOPE_ANALYSIS_METRIC_SET_H_

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::analysis {

struct Metric {
  std::string name;   // "ttft", "comm_time.max", "busbw"
  std::string scope;  // "" (the run), "rank 3", "group tp 0-3 all_reduce", "phase decode"
  std::optional<double> value;
  std::string unit;  // SI base units: "s", "B", "B/s", "FLOP/s", "tokens/s", "ratio", "count"
  std::string aggregation;  // how ranks combine, e.g. "max over ranks"; empty for per-rank values
  std::string unavailable;  // why there is no value

  // "name" for the run, else "name[scope]": the key reports and tests use.
  std::string key() const { return scope.empty() ? name : name + "[" + scope + "]"; }
};

class MetricSet {
 public:
  void Add(std::string name, std::string scope, double value, std::string unit,
           std::string aggregation = "");
  // Records that `name` cannot be computed from this trace, and why.
  void AddUnavailable(std::string name, std::string scope, std::string unit, std::string reason);
  // Adds `m` as it is; a metric with the same key is replaced in place.
  void Insert(Metric m);
  // Inserts every metric of `later` in its order, as if it had been added here.
  void Append(MetricSet later);

  const std::vector<Metric>& metrics() const { return metrics_; }
  const Metric* Find(std::string_view key) const;
  // Metrics whose name equals one of `names` or starts with "<name>." (all
  // scopes); everything when `names` is empty.
  MetricSet Filter(const std::vector<std::string>& names) const;
  // {"key": value or "not available: reason", …} in insertion order.
  nlohmann::ordered_json ToJson() const;

 private:
  std::vector<Metric> metrics_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_METRIC_SET_H_
