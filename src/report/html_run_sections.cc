// The report's sections on bandwidth, memory, experts, sweeps and comparisons
// (html_sections.h); the others are in html_sections.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "core/units.h"
#include "report/html_section_util.h"
#include "report/html_sections.h"
#include "report/metric_table.h"

namespace shardscope::report {

using nlohmann::json;

namespace {

double LargestOf(const std::vector<Series>& series) {
  double m = 0;
  for (const Series& s : series) {
    for (double v : s.values) {
      if (std::isfinite(v)) m = std::max(m, v);
    }
  }
  return m;
}

}  // namespace

namespace {

// busbw against message size: one line per collective and dimension over the size
// buckets (x: the bucket's 2^k bytes), the fastest link's peak dashed.
Chart SizeChart(const ReportRun& r, std::string id, double peak) {
  std::map<double, size_t> xs;
  std::map<std::string, std::map<double, double>> lines;
  for (const analysis::SizeBandwidth& b : r.analysis.bandwidth_by_size) {
    xs[b.bucket_bytes] = 0;
    std::string label(CollectiveName(b.collective));
    if (b.dim != Dim::kNone) label += fmt::format(" ({})", DimName(b.dim));
    lines[label][b.bucket_bytes] = b.busbw;
  }
  std::vector<double> x;
  for (const auto& [v, unused] : xs) x.push_back(v);
  std::vector<Series> series;
  for (const auto& [label, by_x] : lines) {
    Series se{label, {}};
    for (double v : x) {
      auto it = by_x.find(v);
      se.values.push_back(it == by_x.end() ? NAN : it->second);
    }
    series.push_back(std::move(se));
  }
  Series reference;
  if (peak > 0) reference = {"link peak (fastest group)", std::vector<double>(x.size(), peak)};
  return LineChart(std::move(id), "Bus bandwidth vs message size: " + r.label, x, series,
                   "message size (B, buckets of [2^k, 2^(k+1)))", "bus bandwidth", "B/s",
                   x.size() > 1, reference);
}

// How the collectives ran, where the trace says (simulated runs): one row per
// collective, dimension and message-size bucket, its algorithm/protocol choices
// with their op counts ("ring/ll ×12, nvls/simple ×4").
std::optional<Table> ChoiceTable(const ReportRun& r) {
  if (r.analysis.comm_choices.empty()) return std::nullopt;
  Table t;
  t.title = "Algorithm and protocol per collective: " + r.label;
  t.columns = {"collective", "dimension", "message size", "ops", "algorithm / protocol"};
  std::map<std::tuple<int, int, double>, std::pair<int64_t, std::string>> rows;
  for (const analysis::CommChoice& c : r.analysis.comm_choices) {
    auto& [ops, text] = rows[{static_cast<int>(c.collective),
                              static_cast<int>(trace::DimPosition(c.dim)), c.bucket_bytes}];
    ops += c.ops;
    if (!text.empty()) text += ", ";
    text += fmt::format("{} ×{}", c.choice, c.ops);
  }
  for (const auto& [key, value] : rows) {
    const auto& [collective, dim, bucket] = key;
    t.rows.push_back({std::string(CollectiveName(static_cast<Collective>(collective))),
                      std::string(DimName(trace::kDimListOrder[static_cast<size_t>(dim)])),
                      fmt::format("{} – {}", FormatBytes(bucket), FormatBytes(2 * bucket)),
                      std::to_string(value.first), value.second});
  }
  t.note =
      "As the simulator chose them (trace args algorithm, protocol, all_to_all; docs/sim.md "
      "\"Collectives\"): the algorithm, NCCL's protocol where one applies, an all-to-all's "
      "kind; ops of each size bucket [2^k, 2^(k+1)) bytes.";
  return t;
}

}  // namespace

Section BandwidthSection(const std::vector<ReportRun>& runs) {
  Section s{"bandwidth", "Bus bandwidth per collective", "", {}, {}};
  s.note =
      "busbw (nccl-tests convention) per communication group and collective: the mean over its "
      "ops (Σ bytes × bus factor / Σ time) and the median op, with the peak of the links the "
      "group spans drawn dashed (up to 40 groups with the most ops); and busbw against message "
      "size per collective and parallel dimension (ops bucketed by powers of two, Σ bytes × bus "
      "factor / Σ time per bucket, as nccl-tests tables it).";
  size_t i = 0;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    const analysis::MetricSet& m = r.analysis.metrics;
    std::vector<std::pair<double, std::string>> groups;  // (ops, scope)
    for (const analysis::Metric& x : m.metrics()) {
      if (x.name == "busbw" && x.value && x.scope.starts_with("group ")) {
        groups.emplace_back(ValueOf(m, "comm_ops[" + x.scope + "]"), x.scope);
      }
    }
    if (groups.empty()) {
      std::string why = UnavailableOf(m, "busbw");
      s.note +=
          fmt::format(" No bandwidth for {}: {}.", r.label, why.empty() ? "no communication" : why);
      continue;
    }
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    if (groups.size() > 40) groups.resize(40);
    std::vector<std::string> labels;
    Series mean{"busbw (Σ over ops)", {}}, p50{"busbw (median op)", {}};
    std::vector<double> peak;
    for (const auto& [ops, scope] : groups) {
      labels.push_back(scope.substr(6));
      double bw = ValueOf(m, "busbw[" + scope + "]");
      mean.values.push_back(bw);
      p50.values.push_back(ValueOf(m, "busbw.p50[" + scope + "]"));
      double util = ValueOf(m, "busbw_util[" + scope + "]");
      peak.push_back(util > 0 ? bw / util : NAN);
    }
    double peak_max = LargestOf({Series{"", peak}});
    Chart c =
        BarChart(fmt::format("busbw-{}", i++), "Bus bandwidth: " + r.label, labels, {mean, p50},
                 "group and collective", "bus bandwidth", "B/s", false, peak_max);
    if (peak_max > 0) {
      AddReferenceLine(&c, "link peak", peak, "B/s");
    } else {
      s.note += fmt::format(" No link peak for {}: {}.", r.label,
                            UnavailableOf(m, "busbw_util[" + groups.front().second + "]"));
    }
    s.charts.push_back(std::move(c));
    if (!r.analysis.bandwidth_by_size.empty()) {
      s.charts.push_back(SizeChart(r, fmt::format("busbw-size-{}", i - 1), peak_max));
    }
    if (std::optional<Table> t = ChoiceTable(r)) s.tables.push_back(std::move(*t));
  }
  return s;
}

Section MemorySection(const std::vector<ReportRun>& runs) {
  Section s{"memory", "Memory per rank", "", {}, {}};
  s.note =
      "Peak of each memory series per rank (the trace's \"memory\" counters) against the device "
      "capacity.";
  size_t i = 0;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    const analysis::MetricSet& m = r.analysis.metrics;
    std::vector<int32_t> ranks;
    std::map<std::string, std::map<int32_t, double>> by_series;
    for (const analysis::Metric& x : m.metrics()) {
      int32_t rank;
      if (!x.value || std::sscanf(x.scope.c_str(), "rank %d", &rank) != 1 ||
          x.scope != fmt::format("rank {}", rank)) {
        continue;
      }
      if (x.name == "peak_memory") ranks.push_back(rank);
      if (x.name.starts_with("peak_memory.")) by_series[x.name.substr(12)][rank] = *x.value;
    }
    if (ranks.empty()) {
      s.note += fmt::format(" No memory for {}: {}.", r.label, UnavailableOf(m, "peak_memory.max"));
      continue;
    }
    std::vector<std::string> labels;
    for (int32_t rank : ranks) labels.push_back(std::to_string(rank));
    std::vector<Series> series;
    if (by_series.empty()) by_series["total"];
    for (const auto& [name, values] : by_series) {
      Series se{name, {}};
      for (int32_t rank : ranks) {
        auto it = values.find(rank);
        se.values.push_back(it != values.end() ? it->second
                            : name == "total"
                                ? ValueOf(m, fmt::format("peak_memory[rank {}]", rank))
                                : 0.0);
      }
      series.push_back(std::move(se));
    }
    const json& cap = ExperimentField(r.metadata, "cluster");
    double capacity = NAN;
    if (cap.is_object() && cap.contains("device") && cap["device"].contains("memory_bytes") &&
        cap["device"]["memory_bytes"].is_number()) {
      capacity = cap["device"]["memory_bytes"].get<double>();
    }
    Chart c =
        BarChart(fmt::format("memory-{}", i++), "Peak memory per rank: " + r.label, labels, series,
                 "rank", "memory", "B", true, std::isfinite(capacity) ? capacity : 0.0);
    if (std::isfinite(capacity)) {
      AddReferenceLine(&c, "device capacity", std::vector<double>(ranks.size(), capacity), "B");
    } else {
      s.note += fmt::format(" No capacity for {}: the trace has no store metadata.", r.label);
    }
    s.charts.push_back(std::move(c));
  }
  return s;
}

namespace {

// Tokens ÷ the layer's mean per expert, rows = layer numbers (dense layers empty).
Chart ExpertHeatmap(const ReportRun& r, size_t index) {
  const auto& tokens = r.analysis.expert_tokens;
  int32_t experts = 0;
  for (const auto& [layer, by_expert] : tokens) {
    if (!by_expert.empty()) experts = std::max(experts, by_expert.rbegin()->first + 1);
  }
  std::vector<std::vector<double>> values(
      static_cast<size_t>(tokens.rbegin()->first + 1),
      std::vector<double>(static_cast<size_t>(experts), std::nan("")));
  for (const auto& [layer, by_expert] : tokens) {
    double sum = 0;
    for (const auto& [e, n] : by_expert) sum += static_cast<double>(n);
    const double mean = sum / experts;
    if (layer < 0 || mean <= 0) continue;
    std::vector<double>& row = values[static_cast<size_t>(layer)];
    for (int32_t e = 0; e < experts; ++e) {
      auto it = by_expert.find(e);
      row[static_cast<size_t>(e)] =
          (it == by_expert.end() ? 0.0 : static_cast<double>(it->second)) / mean;
    }
  }
  return Heatmap(fmt::format("experts-heatmap-{}", index),
                 "Tokens per expert ÷ layer mean: " + r.label, values, "expert", "layer",
                 "tokens ÷ layer mean", "ratio");
}

}  // namespace

Section ExpertSection(const std::vector<ReportRun>& runs) {
  Section s{"experts", "Expert load", "", {}, {}};
  s.note =
      "Per MoE layer: imbalance (max ÷ mean tokens) over experts and over EP ranks, mean over "
      "steps; and each expert's tokens (all phases and steps) as a share of its layer's mean, "
      "layer by expert (1 = an even split; hot experts stand out).";
  size_t i = 0;
  for (const ReportRun& r : DetailRuns(runs, &s.note)) {
    const analysis::MetricSet& m = r.analysis.metrics;
    if (!r.analysis.expert_tokens.empty()) s.charts.push_back(ExpertHeatmap(r, i));
    std::vector<double> layers;
    for (const analysis::Metric& x : m.metrics()) {
      int layer;
      if (x.name == "expert_load.tokens" && std::sscanf(x.scope.c_str(), "layer %d", &layer) == 1) {
        layers.push_back(layer);
      }
    }
    if (layers.empty()) {
      std::string why = UnavailableOf(m, "expert_load.imbalance.mean");
      if (!why.empty()) s.note += fmt::format(" {}: {}.", r.label, why);
      continue;
    }
    std::vector<Series> series = {{"experts: imbalance", {}}, {"EP ranks: imbalance", {}}};
    for (double layer : layers) {
      std::string scope = fmt::format("[layer {}]", static_cast<int>(layer));
      series[0].values.push_back(ValueOf(m, "expert_load.imbalance.mean" + scope));
      series[1].values.push_back(ValueOf(m, "ep_rank_load.imbalance.mean" + scope));
    }
    s.charts.push_back(LineChart(fmt::format("experts-{}", i++),
                                 "Expert load imbalance: " + r.label, layers, series, "layer",
                                 "max ÷ mean tokens", "ratio", false));
  }
  if (s.charts.empty()) s.note += " No run has expert token counts (args.expert_tokens).";
  return s;
}

}  // namespace shardscope::report
