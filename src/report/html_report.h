// `shardscope report`: one self-contained HTML file over runs, sweeps, stores
// and foreign traces — the analyzer's metrics drawn with Chart.js (inlined from
// Debian's libjs-chart.js) in the sections of html_sections.h, each with a
// collapsible table of its numbers. Loading is `shardscope analyze`'s
// (analysis::AnalyzePaths).
#ifndef SHARDSCOPE_REPORT_HTML_REPORT_H_
#define SHARDSCOPE_REPORT_HTML_REPORT_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "core/status.h"
#include "report/html_sections.h"

namespace shardscope::report {

struct HtmlReportOptions {
  std::vector<std::string> paths;     // trace files, run folders, a store
  std::vector<std::string> baseline;  // optional: runs to compare against
  analysis::AnalyzeOptions analyze;
  std::string chart_js;  // Chart.js file; empty: LoadChartJs's default
  std::string title = "ShardScope report";
};

// Analyses `paths` as `shardscope analyze` does and adds each run's store
// metadata and timeline. Errors: the analyzer's; a path without any trace.
StatusOr<std::vector<ReportRun>> LoadReportRuns(const std::vector<std::string>& paths,
                                                const analysis::AnalyzeOptions& options);

// The report's data: {"title", "subtitle", "runs": [...], "sections": [...]}.
nlohmann::json BuildReportData(const std::vector<ReportRun>& runs,
                               const std::vector<ReportRun>& baseline, const std::string& title);

// Loads, builds and writes the report to `output` through a temporary file in
// the same folder renamed into place, so a failure leaves no partial report
// (an existing `output` is replaced only on success).
Status WriteHtmlReport(const HtmlReportOptions& options, const std::string& output);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_REPORT_H_
