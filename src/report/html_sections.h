// The sections of the HTML report, built from the analyzer's metrics
// (analysis::MetricSet) of each run and, where the trace store has one, the
// run's metadata. A section without data says why in its note instead of
// drawing an empty chart. Pure functions over their inputs.
#ifndef SHARDSCOPE_REPORT_HTML_SECTIONS_H_
#define SHARDSCOPE_REPORT_HTML_SECTIONS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "report/html_charts.h"
#include "report/html_timeline.h"

namespace shardscope::report {

// One run as the report sees it.
struct ReportRun {
  std::string label;        // experiment name (and swept values) or the trace path
  nlohmann::json metadata;  // the store's metadata_*.json, or an empty object
  analysis::AnalysisResult analysis;
  Timeline timeline;  // empty when the trace could not be binned (see html_timeline.h)
};

struct Section {
  std::string id;
  std::string title;
  std::string note;  // why a part is missing, or how to read it
  std::vector<Chart> charts;
  std::vector<Table> tables;
  nlohmann::json ToJson() const;
};

// Per-run detail charts (breakdown, traffic, memory, ...) are drawn for at most
// this many runs; the summary and sweep sections cover all of them.
inline constexpr size_t kMaxDetailRuns = 12;

Section SummarySection(const std::vector<ReportRun>& runs);
Section BreakdownSection(const std::vector<ReportRun>& runs);
Section TimelineSection(const std::vector<ReportRun>& runs);
Section TrafficSection(const std::vector<ReportRun>& runs);
Section BandwidthSection(const std::vector<ReportRun>& runs);
Section MemorySection(const std::vector<ReportRun>& runs);
Section ExpertSection(const std::vector<ReportRun>& runs);
Section SweepSection(const std::vector<ReportRun>& runs);
// Served runs' per-request latencies and throughput, and serving sweeps.
Section ServingSection(const std::vector<ReportRun>& runs);
// Baseline run i against proposed run i (a single baseline against every proposed run).
Section ComparisonSection(const std::vector<ReportRun>& baseline,
                          const std::vector<ReportRun>& proposed);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_SECTIONS_H_
