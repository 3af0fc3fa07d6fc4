// Helpers the HTML report's sections share: metric look-ups by key, the ranks
// of a run, the run metadata's experiment fields, and the charts built from
// more than one metric (traffic matrix, timeline). Internal to report/.
#ifndef SHARDSCOPE_REPORT_HTML_SECTION_UTIL_H_
#define SHARDSCOPE_REPORT_HTML_SECTION_UTIL_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "analysis/metric_set.h"
#include "report/html_charts.h"
#include "report/html_sections.h"

namespace shardscope::report {

// The metric's value, or NaN when it is absent or not available.
double ValueOf(const analysis::MetricSet& m, const std::string& key);
// Why the metric is not available ("" when it has a value or is absent).
std::string UnavailableOf(const analysis::MetricSet& m, const std::string& key);
// The value formatted with its unit, "not available" or "—" (absent).
std::string CellOf(const analysis::MetricSet& m, const std::string& key);
// The serving metrics a served run's metadata keeps (sim.serving.metrics), or null.
const nlohmann::json& ServingMetrics(const ReportRun& r);
// metrics[key] (or metrics[key][stat]) as a number; NaN when absent.
double ServingNumber(const nlohmann::json& metrics, const std::string& key,
                     const char* stat = nullptr);
// Ranks with a run-wide "compute_time[rank N]", ascending.
std::vector<int32_t> RanksOf(const analysis::MetricSet& m);
// The first kMaxDetailRuns runs; appends a sentence to *note when runs are left out.
std::vector<ReportRun> DetailRuns(const std::vector<ReportRun>& runs, std::string* note);
// The sweep a run belongs to: its metadata's experiment "sweep", else its name ("" if none).
std::string SweepKey(const nlohmann::json& metadata);
// metadata["experiment"][field], or null.
const nlohmann::json& ExperimentField(const nlohmann::json& metadata, const std::string& field);
// A claim's quantity from the metrics in the claim's unit (tps, tpot_ms, ttft_ms,
// memory_per_gpu_gb); NaN when the trace lacks it.
double ClaimedQuantity(const analysis::MetricSet& m, const std::string& claim);
// traffic_matrix[rank i -> rank j] as rows i, columns j; empty without any.
std::vector<std::vector<double>> TrafficMatrix(const analysis::MetricSet& m);
// Lanes per rank of the run's Timeline, with the phase/step lane on top.
Chart TimelineChart(std::string id, const ReportRun& run);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_SECTION_UTIL_H_
