// Chart.js chart configurations and small tables for the HTML report, as JSON
// values the page hands to Chart.js unchanged (html_page.cc). Each builder fixes
// titles, axis labels with units and colours; nothing here draws. Pure functions.
#ifndef SHARDSCOPE_REPORT_HTML_CHARTS_H_
#define SHARDSCOPE_REPORT_HTML_CHARTS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardscope::report {

// A scale for a quantity in SI base units: the divisor and the unit label
// people read ("ms" for seconds around 1e-3, "GB" for bytes around 1e9).
struct DisplayUnit {
  double divisor = 1;
  std::string label;
};
// `unit` is the metric's ("s", "B", "B/s", "tokens/s", "ratio", ...); `largest`
// the largest value to show.
DisplayUnit PickDisplayUnit(const std::string& unit, double largest);

struct Series {
  std::string label;
  std::vector<double> values;  // one per category label; NaN for a gap
};

// A small table shown collapsed under a chart or on its own.
struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::string note;  // shown under the table (e.g. why cells are empty), once
  nlohmann::json ToJson() const;
};

// One chart of a section: its Chart.js config and the table of its numbers.
struct Chart {
  std::string id;
  std::string title;
  nlohmann::json config;
  Table table;
  int height_px = 320;
  bool heatmap = false;  // the page sizes the cells to the plot area
  double y_divisor = 1;  // values on the y axis are SI values / y_divisor
  std::string y_unit;    // the DisplayUnit label of the y axis
  nlohmann::json ToJson() const;
};

// Bars per category (x = `categories`), one dataset per series; `stacked`
// stacks them. Values are in `unit` (SI base) and shown in a DisplayUnit that
// also fits `also_fits` (e.g. a reference line added later).
Chart BarChart(std::string id, std::string title, const std::vector<std::string>& categories,
               const std::vector<Series>& series, const std::string& x_label,
               const std::string& quantity, const std::string& unit, bool stacked,
               double also_fits = 0);

// Adds a dashed line dataset (not stacked with the bars), in the chart's y unit,
// and its column to the chart's table.
void AddReferenceLine(Chart* chart, const std::string& label, const std::vector<double>& values,
                      const std::string& unit);

// Lines over a numeric x (one per series, `x` shared); `x_label` says its unit.
// `reference` adds a dashed horizontal line (e.g. a link peak) when its label is set.
Chart LineChart(std::string id, std::string title, const std::vector<double>& x,
                const std::vector<Series>& series, const std::string& x_label,
                const std::string& quantity, const std::string& unit, bool log_x,
                const Series& reference = {});

// A heatmap of `values[row][col]` (NaN: empty) drawn as square scatter points
// coloured by value; rows go down the y axis.
Chart Heatmap(std::string id, std::string title, const std::vector<std::vector<double>>& values,
              const std::string& x_label, const std::string& y_label, const std::string& quantity,
              const std::string& unit);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_CHARTS_H_
