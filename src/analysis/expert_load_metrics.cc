// Expert load (MoE): tokens routed to each expert and to each EP rank per layer
// and step, and their imbalance (max ÷ mean) and coefficient of variation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "analysis/metric_families.h"

namespace shardscope::analysis {
namespace {

constexpr char kNoCounts[] = "no expert counts in the trace";

// max ÷ mean and std ÷ mean (population std) of one cell's loads.
struct Spread {
  double imbalance = 0;
  double cv = 0;
};

std::optional<Spread> SpreadOf(const std::vector<double>& loads) {
  if (loads.empty()) return std::nullopt;
  double sum = 0, max = 0;
  for (double x : loads) sum += x, max = std::max(max, x);
  const double n = static_cast<double>(loads.size());
  const double mean = sum / n;
  if (mean <= 0) return std::nullopt;
  double var = 0;
  for (double x : loads) var += (x - mean) * (x - mean);
  return Spread{max / mean, std::sqrt(var / n) / mean};
}

// Mean and max of one spread measure over a set of cells.
struct Agg {
  double sum = 0, max = 0;
  int64_t n = 0;
  void Add(double x) { sum += x, max = std::max(max, x), ++n; }
};

// The four measures: expert imbalance, expert cv, ep rank imbalance, ep rank cv.
struct Aggs {
  Agg a[4];
  void Add(const Spread& experts, const Spread& ep) {
    a[0].Add(experts.imbalance), a[1].Add(experts.cv), a[2].Add(ep.imbalance), a[3].Add(ep.cv);
  }
};

constexpr const char* kNames[4] = {"expert_load.imbalance", "expert_load.cv",
                                   "ep_rank_load.imbalance", "ep_rank_load.cv"};

void EmitMeanMax(const Aggs& aggs, const std::string& scope, const char* over, MetricSet* out) {
  for (int i = 0; i < 4; ++i) {
    const Agg& g = aggs.a[i];
    if (g.n == 0) continue;
    out->Add(fmt::format("{}.mean", kNames[i]), scope, g.sum / static_cast<double>(g.n), "ratio",
             fmt::format("mean over {}", over));
    out->Add(fmt::format("{}.max", kNames[i]), scope, g.max, "ratio",
             fmt::format("max over {}", over));
  }
}

}  // namespace

void AddExpertLoadMetrics(const Context& ctx, MetricSet* out) {
  const RunData& data = *ctx.data;
  Aggs run;
  std::map<Phase, Aggs> by_phase;
  std::map<int32_t, Aggs> by_layer;
  std::map<int32_t, std::map<int32_t, double>> layer_expert_tokens;  // summed over steps
  for (const auto& [key, cell] : data.expert_load) {
    const auto& [phase, step, layer] = key;
    std::vector<double> experts;
    std::map<int32_t, double> ep;
    for (const auto& [x, t] : cell.tokens) {
      experts.push_back(static_cast<double>(t));
      ep[cell.ep_rank.at(x)] += static_cast<double>(t);
      layer_expert_tokens[layer][x] += static_cast<double>(t);
    }
    std::vector<double> ep_loads;
    for (const auto& [r, t] : ep) ep_loads.push_back(t);
    auto se = SpreadOf(experts);
    auto sr = SpreadOf(ep_loads);
    if (!se || !sr) continue;  // no token reached any expert
    run.Add(*se, *sr);
    by_phase[phase].Add(*se, *sr);
    by_layer[layer].Add(*se, *sr);
  }
  if (run.a[0].n == 0) {
    for (const char* name : kNames) {
      out->AddUnavailable(fmt::format("{}.mean", name), "", "ratio", kNoCounts);
      out->AddUnavailable(fmt::format("{}.max", name), "", "ratio", kNoCounts);
    }
    return;
  }
  EmitMeanMax(run, "", "MoE layers and steps", out);
  for (const auto& [phase, aggs] : by_phase) {
    if (phase == Phase::kNone) continue;
    EmitMeanMax(aggs, fmt::format("phase {}", trace::PhaseName(phase)), "MoE layers and steps",
                out);
  }
  for (const auto& [layer, aggs] : by_layer) {
    const std::string scope = fmt::format("layer {}", layer);
    EmitMeanMax(aggs, scope, "steps", out);
    double total = 0, most = 0;
    for (const auto& [x, t] : layer_expert_tokens[layer]) total += t, most = std::max(most, t);
    out->Add("expert_load.tokens", scope, total, "count", "sum over experts, ranks and steps");
    out->Add("expert_load.tokens.max", scope, most, "count", "max over experts");
  }
}

}  // namespace shardscope::analysis
