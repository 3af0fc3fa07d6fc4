// The HTML page of the report: a fixed template with Chart.js and the report's
// data (a JSON document, see html_report.h) inlined, so the file opens offline.
// The page's script only lays out sections and hands each chart's config to
// Chart.js; Chart.js draws. Pure functions.
#ifndef SHARDSCOPE_REPORT_HTML_PAGE_H_
#define SHARDSCOPE_REPORT_HTML_PAGE_H_

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/status.h"

namespace shardscope::report {

// Where Debian's libjs-chart.js installs Chart.js; SHARDSCOPE_CHART_JS overrides it.
inline constexpr const char* kDefaultChartJsPath = "/usr/share/javascript/chart.js/chart.min.js";

// Reads Chart.js from `path` (empty: SHARDSCOPE_CHART_JS, else kDefaultChartJsPath).
// IoError naming the file and the Debian package when it is missing.
StatusOr<std::string> LoadChartJs(const std::string& path = "");

// The whole page. `data` holds "title" and "sections" (Section::ToJson); it is
// embedded as <script type="application/json" id="report-data">.
StatusOr<std::string> RenderHtmlPage(const nlohmann::json& data, const std::string& chart_js);

// The JSON embedded in a page RenderHtmlPage wrote (for tests and tools).
StatusOr<nlohmann::json> ExtractReportData(const std::string& html);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_PAGE_H_
