// The report's sections over several runs: sweeps and baseline vs proposed
// (html_sections.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/html_section_util.h"
#include "report/html_sections.h"
#include "report/metric_table.h"

namespace shardscope::report {

using nlohmann::json;

namespace {

// The experiment fields a sweep may vary, in the order they are preferred as x.
struct Knob {
  const char* group;
  const char* field;
  const char* label;
};
constexpr Knob kKnobs[] = {
    {"parallelism", "ep_size", "EP degree"},
    {"parallelism", "tp_size", "TP degree"},
    {"parallelism", "pp_size", "PP degree"},
    {"parallelism", "seq_parallel_size", "SP degree"},
    {"parallelism", "dp_size", "DP degree"},
    {"workload", "sequence_length", "sequence length (tokens)"},
    {"workload", "batch_size", "batch size"},
};

double KnobValue(const ReportRun& r, const Knob& k) {
  const json& g = ExperimentField(r.metadata, k.group);
  if (!g.is_object() || !g.contains(k.field) || !g[k.field].is_number()) return NAN;
  return g[k.field].get<double>();
}

struct Quantity {
  const char* key;
  const char* title;
  const char* unit;
};
constexpr Quantity kSweepQuantities[] = {{"ttft", "TTFT", "s"},
                                         {"tpot", "TPOT", "s"},
                                         {"tps", "throughput", "tokens/s"},
                                         {"peak_memory.max", "peak memory per device", "B"}};

}  // namespace

Section SweepSection(const std::vector<ReportRun>& runs) {
  Section s{"sweeps", "Sweeps", "", {}, {}};
  // Runs of one sweep: same experiment "sweep" (or name) in their metadata.
  std::map<std::string, std::vector<const ReportRun*>> sweeps;
  for (const ReportRun& r : runs) {
    std::string key = SweepKey(r.metadata);
    if (!key.empty()) sweeps[key].push_back(&r);
  }
  size_t i = 0;
  for (const auto& [name, members] : sweeps) {
    if (members.size() < 2) continue;
    std::vector<const Knob*> varying;
    for (const Knob& k : kKnobs) {
      std::set<double> values;
      for (const ReportRun* r : members) values.insert(KnobValue(*r, k));
      if (values.size() > 1) varying.push_back(&k);
    }
    if (varying.empty()) continue;
    const Knob& x_knob = *varying.front();
    // One line per combination of the other varying fields.
    std::map<std::string, std::map<double, const ReportRun*>> lines;
    std::set<double> xs;
    for (const ReportRun* r : members) {
      std::string line;
      for (size_t v = 1; v < varying.size(); ++v) {
        line += fmt::format("{}{} {:g}", line.empty() ? "" : ", ", varying[v]->label,
                            KnobValue(*r, *varying[v]));
      }
      double x = KnobValue(*r, x_knob);
      lines[line.empty() ? name : line][x] = r;
      xs.insert(x);
    }
    std::vector<double> x(xs.begin(), xs.end());
    const bool log_x = x.front() > 0 && x.back() / x.front() >= 8;
    for (const Quantity& q : kSweepQuantities) {
      std::vector<Series> series;
      for (const auto& [line, by_x] : lines) {
        Series se{line, {}};
        for (double xv : x) {
          auto it = by_x.find(xv);
          se.values.push_back(it == by_x.end() ? NAN
                                               : ValueOf(it->second->analysis.metrics, q.key));
        }
        series.push_back(std::move(se));
      }
      s.charts.push_back(LineChart(fmt::format("sweep-{}-{}", i, q.key),
                                   fmt::format("{}: {} vs {}", name, q.title, x_knob.label), x,
                                   series, x_knob.label, q.title, q.unit, log_x));
    }
    ++i;
  }
  if (s.charts.empty()) {
    s.note =
        "No sweep among these runs: a sweep is two or more runs of one experiment (same name in "
        "the store metadata) that differ in a parallel degree, sequence length or batch size.";
  } else {
    s.note =
        "Each sweep's runs against the value it sweeps (one line per value of any other swept "
        "field).";
  }
  return s;
}

Section ComparisonSection(const std::vector<ReportRun>& baseline,
                          const std::vector<ReportRun>& proposed) {
  Section s{"comparison", "Baseline vs proposed", "", {}, {}};
  if (baseline.empty()) {
    s.note = "No baseline given (--baseline PATH) to compare against.";
    return s;
  }
  static constexpr Quantity kCompared[] = {
      {"ttft", "TTFT", "s"},
      {"tpot", "TPOT", "s"},
      {"tps", "throughput", "tokens/s"},
      {"wall_time", "wall time", "s"},
      {"peak_memory.max", "peak memory per device", "B"},
      {"comm_fraction", "comm share", "ratio"},
      {"traffic_bytes", "traffic on the wire", "B"},
  };
  std::vector<std::string> labels;
  for (const Quantity& q : kCompared) labels.push_back(q.title);
  std::vector<Series> ratios;
  Table t{"Baseline vs proposed",
          {"baseline", "proposed", "quantity", "baseline value", "proposed value",
           "proposed ÷ baseline"},
          {},
          {}};
  for (size_t p = 0; p < proposed.size(); ++p) {
    const ReportRun& b = baseline[baseline.size() == 1 ? 0 : std::min(p, baseline.size() - 1)];
    const ReportRun& r = proposed[p];
    Series se{fmt::format("{} ÷ {}", r.label, b.label), {}};
    for (const Quantity& q : kCompared) {
      double bv = ValueOf(b.analysis.metrics, q.key), pv = ValueOf(r.analysis.metrics, q.key);
      double ratio = std::isfinite(bv) && std::isfinite(pv) && bv != 0 ? pv / bv : NAN;
      se.values.push_back(ratio);
      t.rows.push_back({b.label, r.label, q.title, CellOf(b.analysis.metrics, q.key),
                        CellOf(r.analysis.metrics, q.key),
                        std::isfinite(ratio) ? FormatReportValue(ratio, "") : "—"});
    }
    ratios.push_back(std::move(se));
  }
  s.charts.push_back(BarChart("comparison-ratios", "Proposed ÷ baseline (1 = unchanged)", labels,
                              ratios, "quantity", "ratio", "ratio", false));
  s.tables.push_back(std::move(t));
  s.note = baseline.size() == 1 ? "Every proposed run against the one baseline."
                                : "Proposed run i against baseline run i (in the order given).";
  if (baseline.size() > 1 && baseline.size() != proposed.size()) {
    s.note +=
        fmt::format(" {} baseline runs for {} proposed: the last baseline stands for the rest.",
                    baseline.size(), proposed.size());
  }
  return s;
}

}  // namespace shardscope::report
