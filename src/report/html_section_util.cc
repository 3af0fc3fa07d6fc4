#include "report/html_section_util.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "report/metric_table.h"
#include "trace/json_path.h"

namespace shardscope::report {

using nlohmann::json;

double ValueOf(const analysis::MetricSet& m, const std::string& key) {
  const analysis::Metric* x = m.Find(key);
  return x != nullptr && x->value ? *x->value : NAN;
}

std::string UnavailableOf(const analysis::MetricSet& m, const std::string& key) {
  const analysis::Metric* x = m.Find(key);
  return x != nullptr && !x->value ? x->unavailable : "";
}

std::string CellOf(const analysis::MetricSet& m, const std::string& key) {
  const analysis::Metric* x = m.Find(key);
  if (x == nullptr) return "—";
  if (!x->value) return "not available: " + x->unavailable;
  return FormatReportValue(*x->value, x->unit);
}

const nlohmann::json& ServingMetrics(const ReportRun& r) {
  static const nlohmann::json kNull;
  const nlohmann::json* m = trace::JsonAt(r.metadata, {"sim", "serving", "metrics"});
  return m && m->is_object() ? *m : kNull;
}

double ServingNumber(const nlohmann::json& metrics, const std::string& key, const char* stat) {
  if (!metrics.is_object() || !metrics.contains(key)) return NAN;
  const nlohmann::json& v = stat ? metrics[key].value(stat, nlohmann::json()) : metrics[key];
  return v.is_number() ? v.get<double>() : NAN;
}

namespace {

// "rank 12" → 12; anything else (e.g. "rank 3 phase decode") → false.
bool ParseRankScope(std::string_view scope, int32_t* rank) {
  if (!scope.starts_with("rank ")) return false;
  scope.remove_prefix(5);
  auto [p, ec] = std::from_chars(scope.data(), scope.data() + scope.size(), *rank);
  return ec == std::errc() && p == scope.data() + scope.size();
}

}  // namespace

std::vector<int32_t> RanksOf(const analysis::MetricSet& m) {
  std::vector<int32_t> ranks;
  for (const analysis::Metric& x : m.metrics()) {
    int32_t r;
    if (x.name == "compute_time" && ParseRankScope(x.scope, &r)) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<ReportRun> DetailRuns(const std::vector<ReportRun>& runs, std::string* note) {
  if (runs.size() <= kMaxDetailRuns) return runs;
  *note += fmt::format(" Drawn for the first {} of {} runs; report fewer paths to see the others.",
                       kMaxDetailRuns, runs.size());
  return std::vector<ReportRun>(runs.begin(), runs.begin() + kMaxDetailRuns);
}

std::string SweepKey(const nlohmann::json& metadata) {
  const nlohmann::json& sweep = ExperimentField(metadata, "sweep");
  if (sweep.is_string() && !sweep.get<std::string>().empty()) return sweep.get<std::string>();
  const nlohmann::json& name = ExperimentField(metadata, "name");
  return name.is_string() ? name.get<std::string>() : "";
}

const json& ExperimentField(const json& metadata, const std::string& field) {
  static const json kNull;
  auto e = metadata.find("experiment");
  if (e == metadata.end() || !e->is_object()) return kNull;
  auto f = e->find(field);
  return f == e->end() ? kNull : *f;
}

double ClaimedQuantity(const analysis::MetricSet& m, const std::string& claim) {
  if (claim == "tps") return ValueOf(m, "tps");
  if (claim == "tpot_ms") return ValueOf(m, "tpot") * 1e3;
  if (claim == "ttft_ms") return ValueOf(m, "ttft") * 1e3;
  if (claim == "memory_per_gpu_gb") return ValueOf(m, "peak_memory.max") * 1e-9;
  return NAN;
}

std::vector<std::vector<double>> TrafficMatrix(const analysis::MetricSet& m) {
  std::vector<std::tuple<int32_t, int32_t, double>> cells;
  int32_t n = 0;
  for (const analysis::Metric& x : m.metrics()) {
    if (x.name != "traffic_matrix" || !x.value) continue;
    int32_t i, j;
    if (std::sscanf(x.scope.c_str(), "rank %d -> rank %d", &i, &j) != 2 || i < 0 || j < 0) continue;
    cells.emplace_back(i, j, *x.value);
    n = std::max({n, i + 1, j + 1});
  }
  if (cells.empty()) return {};
  std::vector<std::vector<double>> matrix(static_cast<size_t>(n), std::vector<double>(n, 0.0));
  for (const auto& [i, j, v] : cells) matrix[i][j] += v;
  return matrix;
}

Chart TimelineChart(std::string id, const ReportRun& run) {
  const Timeline& t = run.timeline;
  const double span = static_cast<double>(t.end_ns - t.begin_ns) * 1e-9;
  DisplayUnit du = PickDisplayUnit("s", span);
  const size_t bins = t.busy.begin()->second.size();
  const double bin_s = span / static_cast<double>(bins);
  auto at = [&](double seconds) { return seconds / du.divisor; };
  // States of a bin: which categories cover at least a quarter of it.
  static constexpr const char* kStates[] = {"compute", "communication", "compute + comm overlapped",
                                            "other"};
  static constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#999999"};
  std::vector<json> data(4, json::array());
  std::vector<std::string> lanes = {"phases / steps"};
  for (const auto& [rank, bins_of_rank] : t.busy) {
    std::string lane = fmt::format("rank {}", rank);
    lanes.push_back(lane);
    int prev = -1;
    size_t start = 0;
    for (size_t b = 0; b <= bins; ++b) {
      int state = -1;
      if (b < bins) {
        const auto& f = bins_of_rank[b];
        bool c = f[0] >= 0.25f, m = f[1] >= 0.25f;
        state = c && m ? 2 : c ? 0 : m ? 1 : f[2] >= 0.25f ? 3 : -1;
      }
      if (state == prev) continue;
      if (prev >= 0) {
        data[prev].push_back({{"x", {at(start * bin_s), at(b * bin_s)}}, {"y", lane}});
      }
      prev = state;
      start = b;
    }
  }
  // Phase/step lane: alternating shades between consecutive marks.
  json marks = json::array();
  Table table{"Phases and decode steps: " + run.label, {"starts at", "phase / step"}, {}, {}};
  for (size_t k = 0; k < t.marks.size(); ++k) {
    double from = static_cast<double>(t.marks[k].first - t.begin_ns) * 1e-9;
    double to = k + 1 < t.marks.size()
                    ? static_cast<double>(t.marks[k + 1].first - t.begin_ns) * 1e-9
                    : span;
    marks.push_back(
        {{"x", {at(from), at(std::max(to, from))}}, {"y", lanes[0]}, {"name", t.marks[k].second}});
    table.rows.push_back({FormatReportValue(from, "s"), t.marks[k].second});
  }
  json datasets = json::array();
  json shades = json::array();  // alternating, one per mark (Chart.js does not cycle arrays)
  for (size_t k = 0; k < t.marks.size(); ++k) shades.push_back(k % 2 == 0 ? "#bbbbbb" : "#dddddd");
  datasets.push_back({{"label", "phase / step"},
                      {"data", marks},
                      {"backgroundColor", shades},
                      {"grouped", false}});
  for (int k = 0; k < 4; ++k) {
    datasets.push_back({{"label", kStates[k]},
                        {"data", data[k]},
                        {"backgroundColor", kColours[k]},
                        {"grouped", false}});
  }
  Chart c;
  c.id = std::move(id);
  c.title = "Timeline: " + run.label;
  c.height_px = static_cast<int>(std::clamp<size_t>(lanes.size() * 10 + 140, 240, 900));
  c.config = {{"type", "bar"},
              {"data", {{"labels", lanes}, {"datasets", datasets}}},
              {"options",
               {{"animation", false},
                {"responsive", true},
                {"maintainAspectRatio", false},
                {"indexAxis", "y"},
                {"barPercentage", 1.0},
                {"categoryPercentage", 0.9},
                {"plugins", {{"title", {{"display", true}, {"text", c.title}}}}},
                {"scales",
                 {{"x",
                   {{"type", "linear"},
                    {"min", 0},
                    {"max", at(span)},
                    {"title",
                     {{"display", true},
                      {"text", fmt::format("time since the first op ({})", du.label)}}}}},
                  {"y", {{"title", {{"display", true}, {"text", "rank"}}}}}}}}}};
  c.table = std::move(table);
  return c;
}

}  // namespace shardscope::report
