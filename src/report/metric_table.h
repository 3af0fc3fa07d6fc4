// Renders analyzer output as Markdown, JSON or CSV: the metrics of one or more
// runs, each named by its trace and, for a run ShardScope recorded, its identity
// (experiment, hardware, dtype, backend). Comparisons are report/comparison.h.
// Pure functions.
#ifndef SHARDSCOPE_REPORT_METRIC_TABLE_H_
#define SHARDSCOPE_REPORT_METRIC_TABLE_H_

#include <string>
#include <string_view>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/metric_set.h"
#include "core/status.h"

namespace shardscope::report {

enum class TableFormat { kMarkdown, kJson, kCsv };
StatusOr<TableFormat> ParseTableFormat(std::string_view name);  // "md", "json", "csv"

// `s` as one CSV field: quoted (with quotes doubled) when it holds a comma, quote or newline.
std::string CsvField(std::string_view s);
// A number in CSV and machine output: 9 significant digits, no unit.
std::string CsvNumber(double v);

// A value with its unit for people: "1.23 ms", "4.5 GB/s", "0.731" (core/units.h).
std::string FormatValue(double value, std::string_view unit);
// The HTML report's spelling: exactly three significant digits, trailing zeros
// kept ("1.00 s", "20.0 MB/s", "0.0450"), in a unit scaled to the value: ns … s,
// then min, h, d (never "282365444 s"); SI prefixes for bytes, FLOP/s, tokens/s;
// counts as whole numbers; beyond the scales, "2.82e+08 d".
std::string FormatReportValue(double value, std::string_view unit);

// The analyses of one or more traces; `metric_names` selects as analysis::SelectMetrics
// does: our names and CCL-Bench's (empty: all). A run's identity is a line under its
// heading (Markdown), fields beside "trace" (JSON; absent for foreign traces) and the
// columns experiment, hardware, dtype, backend after "trace" (CSV; empty for foreign).
std::string RenderAnalyses(const std::vector<analysis::AnalysisResult>& results,
                           const std::vector<std::string>& metric_names, TableFormat format);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_METRIC_TABLE_H_
