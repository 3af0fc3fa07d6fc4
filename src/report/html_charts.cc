#include "report/html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/metric_table.h"

namespace shardscope::report {
namespace {

using nlohmann::json;

// Colour-blind-safe palette (Okabe-Ito), one colour per series in order.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                    "#56B4E9", "#D55E00", "#F0E442", "#999999"};

std::string Colour(size_t i) { return kPalette[i % std::size(kPalette)]; }

// Numbers for JSON: NaN and infinities become null (a gap in the chart).
json Num(double v, double divisor) {
  if (!std::isfinite(v)) return nullptr;
  return v / divisor;
}

std::string Cell(double v, const std::string& unit) {
  return std::isfinite(v) ? FormatReportValue(v, unit) : "—";
}

json Axis(const std::string& title, bool stacked = false) {
  json a = {{"title", {{"display", true}, {"text", title}}}};
  if (stacked) a["stacked"] = true;
  return a;
}

json BaseOptions(const std::string& title) {
  return {{"animation", false},
          {"responsive", true},
          {"maintainAspectRatio", false},
          {"normalized", true},
          {"plugins", {{"title", {{"display", true}, {"text", title}}}}}};
}

double Largest(const std::vector<Series>& series) {
  double m = 0;
  for (const Series& s : series) {
    for (double v : s.values) {
      if (std::isfinite(v)) m = std::max(m, std::abs(v));
    }
  }
  return m;
}

// Values spanning more than two decades (largest ÷ smallest > 100, all positive)
// are drawn on a log axis: one 82 s run would otherwise flatten 21 others of 1 s.
bool NeedsLogAxis(const std::vector<Series>& series) {
  double lo = INFINITY, hi = 0;
  for (const Series& s : series) {
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      if (v <= 0) return false;  // a log axis cannot show zero
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  return hi > 0 && hi / lo > 100;
}

// A value axis: log when the values span more than two decades (said in its title).
json ValueAxis(const std::string& title, bool stacked, bool log) {
  json a = Axis(log ? title + ", log scale" : title, stacked);
  if (log) a["type"] = "logarithmic";
  return a;
}

std::string AxisTitle(const std::string& quantity, const DisplayUnit& u) {
  return u.label.empty() ? quantity : fmt::format("{} ({})", quantity, u.label);
}

}  // namespace

DisplayUnit PickDisplayUnit(const std::string& unit, double largest) {
  struct Step {
    double divisor;
    const char* prefix;
  };
  static constexpr Step kTime[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  static constexpr Step kSi[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  if (unit == "s") {
    for (const Step& s : kTime) {
      if (largest >= s.divisor || s.divisor == 1e-9) return {s.divisor, s.prefix};
    }
  }
  std::string base = unit == "B"          ? "B"
                     : unit == "B/s"      ? "B/s"
                     : unit == "FLOP/s"   ? "FLOP/s"
                     : unit == "tokens/s" ? "tokens/s"
                                          : "";
  if (base.empty()) return {1, unit == "ratio" || unit == "count" ? "" : unit};
  for (const Step& s : kSi) {
    if (largest >= s.divisor || s.divisor == 1) {
      return {s.divisor,
              std::string(s.prefix) + (base == "tokens/s" && *s.prefix ? " " : "") + base};
    }
  }
  return {1, base};
}

json Table::ToJson() const {
  json j = {{"title", title}, {"columns", columns}, {"rows", rows}};
  if (!note.empty()) j["note"] = note;
  return j;
}

json Chart::ToJson() const {
  json j = {{"id", id},
            {"title", title},
            {"config", config},
            {"table", table.ToJson()},
            {"height", height_px}};
  if (heatmap) j["heatmap"] = true;
  return j;
}

Chart BarChart(std::string id, std::string title, const std::vector<std::string>& categories,
               const std::vector<Series>& series, const std::string& x_label,
               const std::string& quantity, const std::string& unit, bool stacked,
               double also_fits) {
  double largest = Largest(series);
  if (stacked) {
    for (size_t k = 0; k < categories.size(); ++k) {
      double sum = 0;
      for (const Series& s : series) {
        if (k < s.values.size() && std::isfinite(s.values[k])) sum += s.values[k];
      }
      largest = std::max(largest, sum);
    }
  }
  DisplayUnit du = PickDisplayUnit(unit, std::max(largest, also_fits));
  json datasets = json::array();
  for (size_t i = 0; i < series.size(); ++i) {
    json values = json::array();
    for (double v : series[i].values) values.push_back(Num(v, du.divisor));
    datasets.push_back({{"label", series[i].label},
                        {"data", values},
                        {"backgroundColor", Colour(i)},
                        {"borderWidth", 0}});
  }
  Chart c;
  c.id = std::move(id);
  c.title = title;
  json options = BaseOptions(title);
  // Stacked bars stay linear: a log axis would misstate each part's share.
  options["scales"] = {
      {"x", Axis(x_label, stacked)},
      {"y", ValueAxis(AxisTitle(quantity, du), stacked, !stacked && NeedsLogAxis(series))}};
  if (categories.size() > 32) options["barPercentage"] = 1.0, options["categoryPercentage"] = 1.0;
  c.config = {{"type", "bar"},
              {"data", {{"labels", categories}, {"datasets", datasets}}},
              {"options", options}};
  c.y_divisor = du.divisor;
  c.y_unit = du.label;
  c.table.title = title;
  c.table.columns.push_back(x_label);
  for (const Series& s : series) c.table.columns.push_back(s.label);
  for (size_t k = 0; k < categories.size(); ++k) {
    std::vector<std::string> row = {categories[k]};
    for (const Series& s : series)
      row.push_back(Cell(k < s.values.size() ? s.values[k] : NAN, unit));
    c.table.rows.push_back(std::move(row));
  }
  return c;
}

Chart LineChart(std::string id, std::string title, const std::vector<double>& x,
                const std::vector<Series>& series, const std::string& x_label,
                const std::string& quantity, const std::string& unit, bool log_x,
                const Series& reference) {
  std::vector<Series> all = series;
  if (!reference.label.empty()) all.push_back(reference);
  DisplayUnit du = PickDisplayUnit(unit, Largest(all));
  json datasets = json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    json points = json::array();
    for (size_t k = 0; k < x.size() && k < all[i].values.size(); ++k) {
      if (std::isfinite(all[i].values[k]) && std::isfinite(x[k])) {
        points.push_back({{"x", x[k]}, {"y", all[i].values[k] / du.divisor}});
      }
    }
    bool is_ref = !reference.label.empty() && i + 1 == all.size();
    json d = {{"label", all[i].label},
              {"data", points},
              {"borderColor", is_ref ? "#444444" : Colour(i)},
              {"backgroundColor", is_ref ? "#444444" : Colour(i)},
              {"showLine", true},
              {"pointRadius", is_ref ? 0 : 3}};
    if (is_ref) d["borderDash"] = {6, 4};
    datasets.push_back(d);
  }
  Chart c;
  c.id = std::move(id);
  c.title = title;
  json options = BaseOptions(title);
  json xa = Axis(x_label);
  xa["type"] = log_x ? "logarithmic" : "linear";
  options["scales"] = {{"x", xa},
                       {"y", ValueAxis(AxisTitle(quantity, du), false, NeedsLogAxis(all))}};
  c.config = {{"type", "scatter"}, {"data", {{"datasets", datasets}}}, {"options", options}};
  c.table.title = title;
  c.table.columns.push_back(x_label);
  for (const Series& s : all) c.table.columns.push_back(s.label);
  for (size_t k = 0; k < x.size(); ++k) {
    std::vector<std::string> row = {FormatReportValue(x[k], "")};
    for (const Series& s : all) row.push_back(Cell(k < s.values.size() ? s.values[k] : NAN, unit));
    c.table.rows.push_back(std::move(row));
  }
  return c;
}

Chart Heatmap(std::string id, std::string title, const std::vector<std::vector<double>>& values,
              const std::string& x_label, const std::string& y_label, const std::string& quantity,
              const std::string& unit) {
  double largest = 0;
  size_t cols = 0;
  for (const auto& row : values) {
    cols = std::max(cols, row.size());
    for (double v : row) {
      if (std::isfinite(v)) largest = std::max(largest, v);
    }
  }
  DisplayUnit du = PickDisplayUnit(unit, largest);
  json points = json::array(), colours = json::array();
  for (size_t r = 0; r < values.size(); ++r) {
    for (size_t k = 0; k < values[r].size(); ++k) {
      double v = values[r][k];
      if (!std::isfinite(v) || v <= 0) continue;
      // 4 significant digits: a 256 × 58 heatmap stays a few hundred kB.
      points.push_back(
          {{"x", k}, {"y", r}, {"v", std::stod(fmt::format("{:.4g}", v / du.divisor))}});
      // Light to dark blue by value (linear), so zero cells stay blank.
      double t = largest > 0 ? v / largest : 0;
      int red = static_cast<int>(std::lround(222 - t * 214)),
          green = static_cast<int>(std::lround(235 - t * 187)),
          blue = static_cast<int>(std::lround(247 - t * 140));
      colours.push_back(fmt::format("rgb({},{},{})", red, green, blue));
    }
  }
  Chart c;
  c.id = std::move(id);
  c.title = title;
  c.heatmap = true;
  c.height_px = static_cast<int>(std::clamp<size_t>(values.size() * 6 + 140, 320, 720));
  json options = BaseOptions(title);
  json xa = Axis(x_label), ya = Axis(y_label);
  xa["type"] = ya["type"] = "linear";
  xa["min"] = -0.5, xa["max"] = static_cast<double>(cols) - 0.5;
  ya["min"] = -0.5, ya["max"] = static_cast<double>(values.size()) - 0.5;
  ya["reverse"] = true;
  xa["grid"] = ya["grid"] = {{"display", false}};
  // Whole cells (ranks, experts) only: at most about 16 labels an axis.
  xa["ticks"] = {{"precision", 0}, {"stepSize", std::max<size_t>(1, (cols + 15) / 16)}};
  ya["ticks"] = {{"precision", 0}, {"stepSize", std::max<size_t>(1, (values.size() + 15) / 16)}};
  options["scales"] = {{"x", xa}, {"y", ya}};
  options["plugins"]["legend"] = {{"display", false}};
  options["plugins"]["subtitle"] = {
      {"display", true},
      {"text", fmt::format("colour: {} from 0 (light) to {} (dark)", AxisTitle(quantity, du),
                           FormatReportValue(largest, unit))}};
  c.config = {{"type", "scatter"},
              {"data",
               {{"datasets",
                 {{{"label", quantity},
                   {"data", points},
                   {"pointStyle", "rect"},
                   {"backgroundColor", colours},
                   {"borderWidth", 0}}}}}},
              {"options", options}};
  // The table lists the largest cells only: a 128 x 128 matrix is no table to read.
  std::vector<std::tuple<double, size_t, size_t>> cells;
  for (size_t r = 0; r < values.size(); ++r) {
    for (size_t k = 0; k < values[r].size(); ++k) {
      if (std::isfinite(values[r][k]) && values[r][k] > 0) cells.emplace_back(values[r][k], r, k);
    }
  }
  std::sort(cells.begin(), cells.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  if (cells.size() > 20) cells.resize(20);
  c.table.title = fmt::format("{} (largest {} cells)", title, cells.size());
  c.table.columns = {y_label, x_label, quantity};
  for (const auto& [v, r, k] : cells) {
    c.table.rows.push_back({std::to_string(r), std::to_string(k), FormatReportValue(v, unit)});
  }
  return c;
}

void AddReferenceLine(Chart* c, const std::string& label, const std::vector<double>& values,
                      const std::string& unit) {
  json data = json::array();
  for (double v : values) data.push_back(Num(v, c->y_divisor));
  c->config["data"]["datasets"].push_back({{"type", "line"},
                                           {"label", label},
                                           {"data", data},
                                           {"stack", "reference"},
                                           {"borderColor", "#444444"},
                                           {"backgroundColor", "#444444"},
                                           {"borderDash", {6, 4}},
                                           {"pointRadius", 2}});
  c->table.columns.push_back(label);
  for (size_t k = 0; k < c->table.rows.size() && k < values.size(); ++k) {
    c->table.rows[k].push_back(Cell(values[k], unit));
  }
}

}  // namespace shardscope::report
