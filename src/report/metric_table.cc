#include "report/metric_table.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/ccl_bench_names.h"
#include "core/units.h"

namespace shardscope::report {
namespace {

using analysis::Metric;
using analysis::MetricSet;

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Cell(const Metric* m) {
  if (m == nullptr) return "—";
  if (!m->value) return "not available: " + m->unavailable;
  return FormatValue(*m->value, m->unit);
}

std::string Number(double v) { return fmt::format("{:.9g}", v); }

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

}  // namespace

StatusOr<TableFormat> ParseTableFormat(std::string_view name) {
  if (name == "md" || name == "markdown") return TableFormat::kMarkdown;
  if (name == "json") return TableFormat::kJson;
  if (name == "csv") return TableFormat::kCsv;
  return InvalidArgument("unknown format '{}' (expected md, json or csv)", name);
}

std::string FormatValue(double v, std::string_view unit) {
  if (unit == "s") return FormatSeconds(v);
  if (unit == "B") return FormatBytes(v);
  if (unit == "B/s") return FormatBytes(v) + "/s";
  if (unit == "FLOP/s") return FormatFlops(v) + "/s";
  if (unit == "tokens/s") return FormatSi(v) + " tokens/s";
  if (unit == "tokens") return FormatSi(v) + " tokens";
  if (unit == "count" || unit == "rank") return fmt::format("{:.10g}", v);
  if (unit.empty() || unit == "ratio") return fmt::format("{:.4g}", v);
  return fmt::format("{:.4g} {}", v, unit);  // units as CCL-Bench gives them: "%", "GB", "ms"
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
      all.push_back({{"trace", r.trace_path},
                     {"metadata", r.metadata_path},
                     {"read", r.stats.Summary()},
                     {"skipped_events", r.stats.skipped_total()},
                     {"metrics", metrics}});
    }
    return (results.size() == 1 ? all[0] : all).dump(2) + "\n";
  }
  if (format == TableFormat::kCsv) {
    out = "trace,metric,scope,value,unit,aggregation,unavailable\n";
    for (const auto& r : results) {
      MetricSet filtered = analysis::SelectMetrics(r.metrics, metric_names);
      for (const Metric& m : filtered.metrics()) {
        out += fmt::format("{},{},{},{},{},{},{}\n", CsvField(r.trace_path), CsvField(m.name),
                           CsvField(m.scope), m.value ? Number(*m.value) : "", CsvField(m.unit),
                           CsvField(m.aggregation), CsvField(m.unavailable));
      }
    }
    return out;
  }
  for (const auto& r : results) {
    out += fmt::format("## {}\n\n", r.trace_path);
    if (!r.metadata_path.empty()) out += fmt::format("metadata: {}\n\n", r.metadata_path);
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

std::string RenderComparison(const analysis::AnalysisResult& baseline,
                             const analysis::AnalysisResult& proposed,
                             const std::vector<std::string>& metric_names, TableFormat format) {
  MetricSet base = analysis::SelectMetrics(baseline.metrics, metric_names);
  MetricSet prop = analysis::SelectMetrics(proposed.metrics, metric_names);
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const MetricSet* set : {&base, &prop}) {
    for (const Metric& m : set->metrics()) {
      if (seen.insert(m.key()).second) keys.push_back(m.key());
    }
  }
  struct Row {
    std::string key;
    const Metric* b;
    const Metric* p;
    std::optional<double> ratio, change;
  };
  std::vector<Row> rows;
  for (const std::string& key : keys) {
    Row row{key, base.Find(key), prop.Find(key), std::nullopt, std::nullopt};
    if (row.b && row.p && row.b->value && row.p->value && *row.b->value != 0) {
      row.ratio = *row.p->value / *row.b->value;
      row.change = (*row.p->value - *row.b->value) / std::fabs(*row.b->value) * 100.0;
    }
    rows.push_back(row);
  }
  if (format == TableFormat::kJson) {
    nlohmann::ordered_json j = {{"baseline", baseline.trace_path},
                                {"proposed", proposed.trace_path}};
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      const Metric* any = r.b ? r.b : r.p;
      nlohmann::ordered_json e = {{"metric", r.key}, {"unit", any->unit}};
      e["baseline"] = r.b && r.b->value ? nlohmann::ordered_json(*r.b->value) : nullptr;
      e["proposed"] = r.p && r.p->value ? nlohmann::ordered_json(*r.p->value) : nullptr;
      e["ratio"] = r.ratio ? nlohmann::ordered_json(*r.ratio) : nullptr;
      e["change_percent"] = r.change ? nlohmann::ordered_json(*r.change) : nullptr;
      arr.push_back(e);
    }
    j["metrics"] = arr;
    return j.dump(2) + "\n";
  }
  if (format == TableFormat::kCsv) {
    std::string out = "metric,unit,baseline,proposed,ratio,change_percent\n";
    for (const Row& r : rows) {
      const Metric* any = r.b ? r.b : r.p;
      out += fmt::format("{},{},{},{},{},{}\n", CsvField(r.key), CsvField(any->unit),
                         r.b && r.b->value ? Number(*r.b->value) : "",
                         r.p && r.p->value ? Number(*r.p->value) : "",
                         r.ratio ? Number(*r.ratio) : "", r.change ? Number(*r.change) : "");
    }
    return out;
  }
  std::string out =
      fmt::format("baseline: {}\nproposed: {}\n\n", baseline.trace_path, proposed.trace_path);
  out += "| metric | baseline | proposed | ratio | change |\n|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", r.key, Cell(r.b), Cell(r.p),
                       r.ratio ? fmt::format("{:.4g}", *r.ratio) : "—",
                       r.change ? fmt::format("{:+.1f} %", *r.change) : "—");
  }
  return out;
}

}  // namespace shardscope::report
