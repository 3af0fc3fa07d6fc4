// Comparison: the metrics of several runs side by side — one row per metric,
// one value per run and its ratio to the baseline run. Metrics that exist once
// per rank, group or layer are summarised over their instances (median, min,
// max), so the table's length does not grow with the number of ranks; the
// per-rank mode keeps every row. Pure functions over analyzer results, except
// CompareTraces, which reads the traces.
#ifndef SHARDSCOPE_REPORT_COMPARISON_H_
#define SHARDSCOPE_REPORT_COMPARISON_H_

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analyzer.h"
#include "core/status.h"
#include "report/metric_table.h"
#include "trace/run_identity.h"

namespace shardscope::report {

struct CompareOptions {
  std::vector<std::string> metric_names;  // as analysis::SelectMetrics; empty: all
  bool per_rank = false;                  // every rank, group and layer row, unsummarised
  // CompareTraces: only the store traces under the paths whose metadata matches (e.g. the
  // runs of one sweep); empty: every run. The baseline is taken as named.
  trace::IdentityFilter runs;
};

// One run, as the comparison names it.
struct ComparedRun {
  std::string label;  // the experiment's name where that tells the runs apart, else "run N"
  std::string trace;  // analysis::AnalysisResult::trace_path
  std::string metadata;
  trace::RunIdentity identity;
};

struct ComparisonRow {
  std::string metric;  // the metric's name, "comm_time"
  // Its scope; a summarised row has "*" for the instance: "rank *", "group tp * all_reduce".
  std::string scope;
  std::string unit;
  // `values` are the medians over the instances (ranks, groups, layers) of the scope,
  // and `min`, `max`, `instances` say over what; otherwise they are empty.
  bool summarised = false;
  std::vector<std::optional<double>> values;  // one per run: none where it has no value
  // value / the baseline's value: none where either is missing or the baseline's is 0.
  std::vector<std::optional<double>> ratios;
  std::vector<std::optional<double>> min, max;  // summarised rows only
  std::vector<int64_t> instances;               // summarised rows only: those with a value
  std::vector<std::string> unavailable;  // per run: why the analyzer has no value ("" if it has)

  // "name" or "name[scope]".
  std::string Label() const;
};

struct Comparison {
  std::vector<ComparedRun> runs;
  size_t baseline = 0;  // index into runs
  bool per_rank = false;
  std::vector<ComparisonRow> rows;
};

// The comparison of `runs` against runs[baseline]. Rows follow the analyzer's
// order of first appearance over the runs.
Comparison CompareAnalyses(const std::vector<analysis::AnalysisResult>& runs, size_t baseline,
                           const CompareOptions& options);

// What `shardscope compare PATH... [--baseline PATH]` compares: the runs under
// `paths` (analysis::AnalyzePaths: files, run directories, store roots), led by
// the one run under `baseline_path` when given (else the first), filtered by
// `options.runs`. Analyses and their read summaries are returned through
// `analyses` when non-null. Errors: the analyzer's; a metadata file's
// (trace::ReadRunIdentity); fewer than 2 runs; a baseline path holding several
// runs; a metric name that selects nothing (analysis::CheckMetricNames).
StatusOr<Comparison> CompareTraces(const std::vector<std::string>& paths,
                                   const std::string& baseline_path, const CompareOptions& options,
                                   std::vector<analysis::AnalysisResult>* analyses = nullptr);

// Markdown: a table of the runs (label, identity, trace), then the metric table with
// one column per run ("12.3 ms (0.81×)", summaries "12.3 ms (0.81×) [11 ms … 13 ms]").
// JSON: {"baseline", "per_rank", "runs", "metrics"}, each metric with one entry per
// run in "values" and "ratios" (and "min", "max", "instances" when summarised). CSV:
// tidy, one line per metric and run: metric, scope, unit, run, trace, experiment,
// hardware, dtype, backend, value, ratio, min, max, instances, unavailable.
std::string RenderComparison(const Comparison& comparison, TableFormat format);
// The JSON form (what RenderComparison prints for kJson), for the Python package.
nlohmann::ordered_json ComparisonJson(const Comparison& comparison);

// The scope with each instance number (a rank, a rank list, a layer) replaced by
// "*": "rank 3" → "rank *", "group tp 0-3 all_reduce" → "group tp * all_reduce";
// "" when the scope names no instance ("", "phase decode", "dim tp").
std::string InstanceWildcard(std::string_view scope);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_COMPARISON_H_
