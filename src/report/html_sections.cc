#include "report/html_sections.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <set>

#include "core/units.h"
#include "report/html_section_util.h"
#include "report/metric_table.h"
#include "trace/json_path.h"

namespace shardscope::report {

using nlohmann::json;

json Section::ToJson() const {
  json charts_json = json::array(), tables_json = json::array();
  for (const Chart& c : charts) charts_json.push_back(c.ToJson());
  for (const Table& t : tables) tables_json.push_back(t.ToJson());
  json j = {{"id", id}, {"title", title}, {"charts", charts_json}, {"tables", tables_json}};
  if (!note.empty()) j["note"] = note;
  return j;
}

namespace {

// The simulator's bounds in a run's metadata (sim.bounds), or null.
const json* RecordedBounds(const json& metadata) {
  const json* b = trace::JsonAt(metadata, {"sim", "bounds"});
  return b && b->is_object() ? b : nullptr;
}

// A claim's physical limit in the claim's unit (ClaimedQuantity's), NaN when the
// bounds do not give it (memory: the plan, not a bound; `shardscope check` says).
double ClaimBound(const json& bounds, const std::string& claim) {
  auto get = [&](const char* key) {
    return bounds.contains(key) && bounds[key].is_number() ? bounds[key].get<double>() : NAN;
  };
  if (claim == "tps") return get("tps");
  if (claim == "tpot_ms") return get("tpot_s") * 1e3;
  if (claim == "ttft_ms") return get("ttft_s") * 1e3;
  if (claim == "decode_tokens_per_s") return get("decode_tokens_per_s");
  return NAN;
}

// The summary's figures per run; `any_served`: whether a run was served.
Table FiguresTable(const std::vector<ReportRun>& runs, bool* any_served_out) {
  struct Column {
    const char* key;
    const char* title;
  };
  static constexpr Column kColumns[] = {
      {"ranks", "ranks"},
      {"ttft", "TTFT"},
      {"tpot", "TPOT"},
      {"tps", "throughput (prompt tokens / run time)"},
      {"prefill_throughput", "prefill throughput"},
      {"decode_throughput", "decode throughput"},
      {"peak_memory.max", "peak memory per device (max)"},
      {"comm_fraction", "comm share of busy time"},
      {"mfu.mean", "MFU (mean over ranks)"},
      {"load_imbalance", "load imbalance (max / mean busy)"},
  };
  Table t{"Figures per run (from the trace)", {"run"}, {}, {}};
  for (const Column& c : kColumns) t.columns.push_back(c.title);
  // A figure a run lacks is "—" in its cell; why, once per column and reason, under the table.
  std::vector<std::map<std::string, std::vector<std::string>>> why(std::size(kColumns));
  bool any_served = false;
  for (const ReportRun& r : runs) {
    const json& served = ServingMetrics(r);
    any_served = any_served || !served.is_null();
    std::vector<std::string> row = {r.label};
    for (size_t i = 0; i < std::size(kColumns); ++i) {
      const std::string key = kColumns[i].key;
      // A served run's TTFT and TPOT are per request (its serving metrics), not the trace's.
      const bool per_request = !served.is_null() && (key == "ttft" || key == "tpot");
      if (per_request) {
        const double p50 = ServingNumber(served, key + "_s", "p50"),
                     p99 = ServingNumber(served, key + "_s", "p99");
        row.push_back(std::isfinite(p50) ? fmt::format("{} (p99 {})", FormatReportValue(p50, "s"),
                                                       FormatReportValue(p99, "s"))
                                         : "—");
        continue;
      }
      const std::string unavailable = UnavailableOf(r.analysis.metrics, key);
      if (!unavailable.empty()) {
        why[i][unavailable].push_back(r.label);
        row.push_back("—");
      } else {
        row.push_back(CellOf(r.analysis.metrics, key));
      }
    }
    t.rows.push_back(std::move(row));
  }
  std::vector<std::string> notes;
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    for (const auto& [reason, labels] : why[i]) {
      notes.push_back(fmt::format(
          "{}: {}{}", kColumns[i].title, reason,
          labels.size() == runs.size() ? "" : fmt::format(" ({})", fmt::join(labels, ", "))));
    }
  }
  if (any_served) {
    notes.insert(notes.begin(),
                 "TTFT and TPOT of a served run: p50 (p99) over its measured requests, TTFT "
                 "from arrival");
  }
  if (!notes.empty()) t.note = "— not available. " + fmt::format("{}.", fmt::join(notes, ". "));
  *any_served_out = any_served;
  return t;
}

// Served runs: their own figures, per request (docs/metrics.md, served workloads).
Table ServedTable(const std::vector<ReportRun>& runs) {
  Table st{"Served runs (per request, from the run's serving metrics)",
           {"run", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "requests/s",
            "goodput (requests/s)", "output tokens/s"},
           {},
           {}};
  for (const ReportRun& r : runs) {
    const json& m = ServingMetrics(r);
    if (m.is_null()) continue;
    auto cell = [](double v, const char* unit) {
      return std::isfinite(v) ? FormatReportValue(v, unit) : std::string("—");
    };
    st.rows.push_back({r.label, cell(ServingNumber(m, "ttft_s", "p50"), "s"),
                       cell(ServingNumber(m, "ttft_s", "p99"), "s"),
                       cell(ServingNumber(m, "tpot_s", "p50"), "s"),
                       cell(ServingNumber(m, "tpot_s", "p99"), "s"),
                       cell(ServingNumber(m, "requests_per_s"), "requests/s"),
                       cell(ServingNumber(m, "goodput_requests_per_s"), "requests/s"),
                       cell(ServingNumber(m, "output_tokens_per_s"), "tokens/s")});
  }
  return st;
}

// Claims as the experiment states them against what the trace shows.
Table ClaimsTable(const std::vector<ReportRun>& runs) {
  Table claims{"Claims: claimed vs this run vs the physical bound",
               {"run", "claim", "claimed", "this run", "this run ÷ claimed", "bound"},
               {},
               {}};
  for (const ReportRun& r : runs) {
    const json& c = ExperimentField(r.metadata, "claims");
    if (!c.is_object()) continue;
    const json* b = RecordedBounds(r.metadata);
    for (const auto& [name, value] : c.items()) {
      if (!value.is_number()) continue;
      double claimed = value.get<double>();
      double got = ClaimedQuantity(r.analysis.metrics, name);
      double bound = b ? ClaimBound(*b, name) : NAN;
      claims.rows.push_back(
          {r.label, name, FormatReportValue(claimed, ""),
           std::isfinite(got) ? FormatReportValue(got, "") : "not in the trace",
           std::isfinite(got) && claimed != 0 ? FormatReportValue(got / claimed, "") : "—",
           std::isfinite(bound) ? FormatReportValue(bound, "") : "—"});
    }
  }
  return claims;
}

// Physical lower bounds the simulator recorded with the run (metadata sim.bounds).
Table BoundsTable(const std::vector<ReportRun>& runs) {
  Table bounds{"Physical bounds: this run against the lower bounds (docs/bounds.md)",
               {"run", "TTFT", "TTFT bound", "TTFT ÷ bound", "TPOT", "TPOT bound", "TPOT ÷ bound",
                "dominant bound"},
               {},
               {}};
  for (const ReportRun& r : runs) {
    const json* b = RecordedBounds(r.metadata);
    if (!b) continue;
    auto bound_cells = [&](const char* metric, const char* key, std::vector<std::string>* row) {
      const double got = ValueOf(r.analysis.metrics, metric);
      const double bound =
          b->contains(key) && (*b)[key].is_number() ? (*b)[key].get<double>() : NAN;
      row->push_back(CellOf(r.analysis.metrics, metric));
      row->push_back(std::isfinite(bound) ? FormatReportValue(bound, "s") : "—");
      row->push_back(std::isfinite(got) && std::isfinite(bound) && bound > 0
                         ? fmt::format("{:.2f}×", got / bound)
                         : "—");
    };
    std::vector<std::string> row = {r.label};
    bound_cells("ttft", "ttft_s", &row);
    bound_cells("tpot", "tpot_s", &row);
    const json& dom = b->value("dominant", json());
    row.push_back(dom.is_string() ? dom.get<std::string>() : "—");
    bounds.rows.push_back(std::move(row));
  }
  return bounds;
}

}  // namespace

Section SummarySection(const std::vector<ReportRun>& runs) {
  Section s{"summary", "Summary", "", {}, {}};
  bool any_served = false;
  s.tables.push_back(FiguresTable(runs, &any_served));
  if (any_served) s.tables.push_back(ServedTable(runs));
  Table claims = ClaimsTable(runs);
  const bool any_claims = !claims.rows.empty();  // read before the table is moved
  if (any_claims) s.tables.push_back(std::move(claims));
  Table bounds = BoundsTable(runs);
  const bool any_bounds = !bounds.rows.empty();
  if (any_bounds) s.tables.push_back(std::move(bounds));
  s.note =
      "Figures are the analyzer's (docs/metrics.md) over what the trace holds. Bounds and the "
      "dominant bound come from the experiment (the simulator records them with each run; "
      "`shardscope check` prints claimed vs bound for each claim); a run at its bound would "
      "read 1.00×.";
  if (!any_bounds)
    s.note +=
        " No run here carries bounds (measured and foreign traces do not; simulate the "
        "experiment or run `shardscope check` for them).";
  if (!any_claims) s.note += " No run states claims in its metadata.";
  if (runs.size() > 1) {
    std::vector<std::string> labels;
    Series ttft{"TTFT", {}}, tpot{"TPOT", {}};
    for (const ReportRun& r : runs) {
      labels.push_back(r.label);
      ttft.values.push_back(ValueOf(r.analysis.metrics, "ttft"));
      tpot.values.push_back(ValueOf(r.analysis.metrics, "tpot"));
    }
    s.charts.push_back(BarChart("summary-latency", "TTFT and TPOT per run", labels, {ttft, tpot},
                                "run", "time", "s", false));
  }
  return s;
}

Section BreakdownSection(const std::vector<ReportRun>& runs) {
  Section s{"breakdown", "Per-rank time breakdown", "", {}, {}};
  s.note =
      "Each bar is one rank's run window: compute only, communication overlapped by compute, "
      "exposed communication (less sync wait), sync wait (waiting for peers inside a collective), "
      "pipeline bubble (idle before receives) and other idle time.";
  size_t i = 0;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    const analysis::MetricSet& m = r.analysis.metrics;
    std::vector<int32_t> ranks = RanksOf(m);
    if (ranks.empty()) continue;
    std::vector<Series> series = {{"compute only", {}},    {"overlapped comm", {}},
                                  {"exposed comm", {}},    {"sync wait", {}},
                                  {"pipeline bubble", {}}, {"idle", {}}};
    std::vector<std::string> labels;
    for (int32_t rank : ranks) {
      auto v = [&](const char* name) {
        double x = ValueOf(m, fmt::format("{}[rank {}]", name, rank));
        return std::isfinite(x) ? x : 0.0;
      };
      double compute = v("compute_time"), overlap = v("overlap_time"),
             exposed = v("exposed_comm_time");
      double wait = std::min(v("sync_wait"), exposed), idle = v("idle_time");
      double bubble = std::min(v("pipeline_bubble"), idle);
      labels.push_back(std::to_string(rank));
      double parts[] = {compute - overlap, overlap, exposed - wait, wait, bubble, idle - bubble};
      for (size_t k = 0; k < series.size(); ++k)
        series[k].values.push_back(std::max(parts[k], 0.0));
    }
    s.charts.push_back(BarChart(fmt::format("breakdown-{}", i++), "Time per rank: " + r.label,
                                labels, series, "rank", "time", "s", true));
  }
  if (s.charts.empty()) s.note = "No run has per-rank times (the traces hold no ops).";
  return s;
}

Section TimelineSection(const std::vector<ReportRun>& runs) {
  Section s{"timeline", "Timeline overview", "", {}, {}};
  s.note = fmt::format(
      "Per rank, what each of {} time bins is mostly doing (downsampled; open the trace in "
      "ui.perfetto.dev for every op). The top lane marks phases and decode steps.",
      kTimelineBins);
  size_t i = 0;
  std::vector<std::string> missing;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    if (r.timeline.empty()) {
      missing.push_back(r.label);
      continue;
    }
    s.charts.push_back(TimelineChart(fmt::format("timeline-{}", i++), r));
  }
  if (!missing.empty()) {
    s.note += fmt::format(" No timeline for {} run(s) ({}): no timed op in the trace.",
                          missing.size(), missing.front());
  }
  return s;
}

namespace {

// Gap and inter-arrival percentiles per parallel dimension and dimension pair.
void AddIntervalCharts(const ReportRun& r, size_t index, Section* s) {
  const analysis::MetricSet& m = r.analysis.metrics;
  for (const std::string family : {"comm_gap", "comm_interarrival"}) {
    std::vector<std::string> labels;
    Series p50{"p50", {}}, mean{"mean", {}}, p99{"p99", {}};
    for (const analysis::Metric& x : m.metrics()) {
      if (x.name != family + ".mean" || !x.value) continue;
      if (!x.scope.starts_with("dim ") && !x.scope.starts_with("dims ")) continue;
      labels.push_back(x.scope.substr(x.scope.find(' ') + 1));
      mean.values.push_back(*x.value);
      p50.values.push_back(ValueOf(m, family + ".p50[" + x.scope + "]"));
      p99.values.push_back(ValueOf(m, family + ".p99[" + x.scope + "]"));
    }
    if (labels.empty()) continue;
    const bool gap = family == "comm_gap";
    s->charts.push_back(BarChart(
        fmt::format("traffic-{}-{}", family, index),
        fmt::format("{} within and across parallel dimensions: {}",
                    gap ? "Gaps between comm calls" : "Inter-arrival times of comm calls", r.label),
        labels, {p50, mean, p99}, "dimension (D -> E: a call of D followed by one of E)",
        gap ? "gap" : "inter-arrival time", "s", false));
  }
}

}  // namespace

Section TrafficSection(const std::vector<ReportRun>& runs) {
  Section s{"traffic", "Traffic", "", {}, {}};
  s.note =
      "Bytes on the wire from each rank to each other rank (the collectives' algorithms "
      "decomposed into transfers), and per collective and parallel dimension. Traffic "
      "intervals: the gap (next call's start − this call's end; negative when they overlap) "
      "and the inter-arrival time (start to start) of each rank's consecutive comm calls within "
      "each parallel dimension and from one dimension to the next (docs/metrics.md).";
  size_t i = 0, runs_seen = 0;
  std::vector<std::string> why;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    const analysis::MetricSet& m = r.analysis.metrics;
    AddIntervalCharts(r, runs_seen++, &s);
    std::vector<std::vector<double>> matrix = TrafficMatrix(m);
    if (matrix.empty()) {
      std::string reason = UnavailableOf(m, "traffic_matrix");
      why.push_back(fmt::format("{}: {}", r.label, reason.empty() ? "no communication" : reason));
      continue;
    }
    s.charts.push_back(Heatmap(fmt::format("traffic-matrix-{}", i), "Traffic matrix: " + r.label,
                               matrix, "to rank", "from rank", "bytes sent", "B"));
    for (const char* kind : {"collective", "dim"}) {
      std::vector<std::string> labels;
      Series traffic{"on the wire", {}}, payload{"payload (args.bytes)", {}};
      for (const analysis::Metric& x : m.metrics()) {
        if (x.name != "traffic_bytes" || !x.value || !x.scope.starts_with(std::string(kind) + " "))
          continue;
        labels.push_back(x.scope.substr(std::string(kind).size() + 1));
        traffic.values.push_back(*x.value);
        payload.values.push_back(ValueOf(m, "payload_bytes[" + x.scope + "]"));
      }
      if (labels.empty()) continue;
      std::string what = std::string(kind) == "dim" ? "parallel dimension" : "collective";
      s.charts.push_back(BarChart(fmt::format("traffic-{}-{}", kind, i),
                                  fmt::format("Traffic by {}: {}", what, r.label), labels,
                                  {traffic, payload}, what, "bytes", "B", false));
    }
    ++i;
  }
  for (const std::string& w : why) s.note += " No traffic for " + w + ".";
  return s;
}

}  // namespace shardscope::report
