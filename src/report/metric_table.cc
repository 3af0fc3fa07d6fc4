#include "report/metric_table.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "analysis/ccl_bench_names.h"
#include "core/enum_names.h"
#include "core/units.h"

namespace shardscope::report {
namespace {

constexpr auto kTableFormatNames = MakeEnumNames<TableFormat>(
    {{TableFormat::kMarkdown, "md"}, {TableFormat::kJson, "json"}, {TableFormat::kCsv, "csv"}});

using analysis::Metric;
using analysis::MetricSet;

std::string Cell(const Metric* m) {
  if (m == nullptr) return "—";
  if (!m->value) return "not available: " + m->unavailable;
  return FormatValue(*m->value, m->unit);
}

nlohmann::ordered_json MetricJson(const Metric& m) {
  nlohmann::ordered_json j = {{"name", m.name}, {"scope", m.scope}};
  if (m.value) {
    j["value"] = *m.value;
  } else {
    j["value"] = nullptr;
    j["unavailable"] = m.unavailable;
  }
  j["unit"] = m.unit;
  if (!m.aggregation.empty()) j["aggregation"] = m.aggregation;
  return j;
}

// "experiment tp4 · hardware h100-sxm · dtype bf16 · backend sim · 1 node · 4 ranks".
std::string IdentityLine(const trace::RunIdentity& id) {
  std::string out;
  auto add = [&](std::string_view label, const std::string& v) {
    if (v.empty()) return;
    if (!out.empty()) out += " · ";
    out += label.empty() ? v : fmt::format("{} {}", label, v);
  };
  add("experiment", id.experiment);
  add("sweep", id.sweep);
  add("hardware", id.hardware);
  add("dtype", id.dtype);
  add("backend", id.backend);
  add("", trace::NodesAndRanks(id));
  return out;
}

}  // namespace

std::string CsvNumber(double v) { return fmt::format("{:.9g}", v); }

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

StatusOr<TableFormat> ParseTableFormat(std::string_view name) {
  if (name == "markdown") return TableFormat::kMarkdown;
  return kTableFormatNames.ParseOrError(name, "format");
}

std::string FormatValue(double v, std::string_view unit) {
  if (unit == "s") return FormatSeconds(v);
  if (unit == "B") return FormatBytes(v);
  if (unit == "B/s") return FormatBytes(v) + "/s";
  if (unit == "FLOP/s") return FormatFlops(v) + "/s";
  if (unit == "tokens/s") return FormatSi(v) + " tokens/s";
  if (unit == "tokens") return FormatSi(v) + " tokens";
  if (unit == "count" || unit == "rank") return FormatNumber(v, 10);
  if (unit.empty() || unit == "ratio") return FormatNumber(v, 4);
  return FormatNumber(v, 4) + " " + std::string(unit);  // as CCL-Bench gives them: "%", "GB", "ms"
}

namespace {

// `v` with exactly three significant digits, trailing zeros kept; |v| < 999.5.
std::string Three(double v) {
  const double a = std::fabs(v);
  if (a == 0) return "0.00";
  if (a < 1e-3 || a >= 999.5) return fmt::format("{:.2e}", v);
  const int whole = static_cast<int>(std::floor(std::log10(a)));  // −3 … 2
  int decimals = std::max(0, 2 - whole);
  // 9.996 rounds to "10.0" (3 digits), not "10.00".
  if (std::fabs(std::stod(fmt::format("{:.{}f}", v, decimals))) >= std::pow(10.0, whole + 1)) {
    decimals = std::max(0, decimals - 1);
  }
  return fmt::format("{:.{}f}", v, decimals);
}

// `v` in the last of `steps` whose `from` it reaches (steps ascending): a unit is
// used from where the one below it would print 1000 (999.7 ms → "1.00 s").
struct Scale {
  double factor;
  std::string label;
  double from;
};
std::string Scaled(double v, const std::vector<Scale>& steps) {
  const double a = std::fabs(v);
  size_t i = 0;
  while (i + 1 < steps.size() && a >= steps[i + 1].from) ++i;
  return fmt::format("{} {}", Three(v / steps[i].factor), steps[i].label);
}

// SI prefixes (none to E) before `base`; `gap` between a prefix and the base.
std::vector<Scale> SiSteps(const std::string& base, const std::string& gap = "") {
  std::vector<Scale> steps;
  double f = 1;
  for (const char* p : {"", "k", "M", "G", "T", "P", "E"}) {
    steps.push_back({f, *p ? std::string(p) + gap + base : base, f * 0.9995});
    f *= 1000;
  }
  return steps;
}

}  // namespace

std::string FormatReportValue(double v, std::string_view unit) {
  if (!std::isfinite(v)) return "—";
  // Seconds up to 999 s, then minutes, hours and days, each up to 999.
  static const std::vector<Scale> kSeconds = {
      {1e-9, "ns", 0},    {1e-6, "us", 999.5e-9},  {1e-3, "ms", 999.5e-6},    {1, "s", 999.5e-3},
      {60, "min", 999.5}, {3600, "h", 999.5 * 60}, {86400, "d", 999.5 * 3600}};
  if (unit == "count" || unit == "rank") {
    if (std::fabs(v) < 1e15 && v == std::round(v)) return fmt::format("{:.0f}", v);
    return Three(v);
  }
  if (v == 0) return unit.empty() || unit == "ratio" ? "0" : fmt::format("0 {}", unit);
  if (unit == "s") return Scaled(v, kSeconds);
  if (unit == "B" || unit == "B/s" || unit == "FLOP/s" || unit == "FLOP") {
    return Scaled(v, SiSteps(std::string(unit)));
  }
  if (unit == "tokens/s" || unit == "tokens") return Scaled(v, SiSteps(std::string(unit), " "));
  if (unit.empty() || unit == "ratio") {
    if (std::fabs(v) < 999.5) return Three(v);
    std::string out = Scaled(v, SiSteps(""));
    return out.back() == ' ' ? out.substr(0, out.size() - 1) : out;
  }
  return Three(v) + " " + std::string(unit);
}

std::string RenderAnalyses(const std::vector<analysis::AnalysisResult>& results,
                           const std::vector<std::string>& metric_names, TableFormat format) {
  std::string out;
  if (format == TableFormat::kJson) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
      MetricSet filtered = analysis::SelectMetrics(r.metrics, metric_names);
      for (const Metric& m : filtered.metrics()) {
        metrics.push_back(MetricJson(m));
      }
      nlohmann::ordered_json run = {{"trace", r.trace_path}, {"metadata", r.metadata_path}};
      const nlohmann::ordered_json identity = trace::RunIdentityJson(r.identity);
      for (const auto& [k, v] : identity.items()) run[k] = v;
      run["read"] = r.stats.Summary();
      run["skipped_events"] = r.stats.skipped_total();
      run["metrics"] = std::move(metrics);
      all.push_back(std::move(run));
    }
    return (results.size() == 1 ? all[0] : all).dump(2) + "\n";
  }
  if (format == TableFormat::kCsv) {
    out =
        "trace,experiment,hardware,dtype,backend,metric,scope,value,unit,aggregation,unavailable\n";
    for (const auto& r : results) {
      MetricSet filtered = analysis::SelectMetrics(r.metrics, metric_names);
      const std::string run = fmt::format(
          "{},{},{},{},{}", CsvField(r.trace_path), CsvField(r.identity.experiment),
          CsvField(r.identity.hardware), CsvField(r.identity.dtype), CsvField(r.identity.backend));
      for (const Metric& m : filtered.metrics()) {
        out += fmt::format("{},{},{},{},{},{},{}\n", run, CsvField(m.name), CsvField(m.scope),
                           m.value ? CsvNumber(*m.value) : "", CsvField(m.unit),
                           CsvField(m.aggregation), CsvField(m.unavailable));
      }
    }
    return out;
  }
  for (const auto& r : results) {
    out += fmt::format("## {}\n\n", r.trace_path);
    if (!r.metadata_path.empty()) out += fmt::format("metadata: {}\n\n", r.metadata_path);
    if (!r.identity.empty()) out += fmt::format("run: {}\n\n", IdentityLine(r.identity));
    out += fmt::format("{}\n\n", r.stats.Summary());
    out += "| metric | scope | value | aggregation |\n|---|---|---|---|\n";
    MetricSet filtered = analysis::SelectMetrics(r.metrics, metric_names);
    for (const Metric& m : filtered.metrics()) {
      out += fmt::format("| {} | {} | {} | {} |\n", m.name, m.scope, Cell(&m), m.aggregation);
    }
    out += "\n";
  }
  return out;
}

}  // namespace shardscope::report
