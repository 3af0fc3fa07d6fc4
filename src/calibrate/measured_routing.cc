#include "calibrate/measured_routing.h"

#include <algorithm>
#include <optional>

#include "importers/importer.h"
#include "plan/placement.h"

namespace shardscope::calibrate {
namespace {

class RoutingSink : public trace::TraceSink {
 public:
  void OnOp(const trace::OpEvent& op) override {
    if (op.layer < 0) return;
    if (op.collective == Collective::kAllToAll && !op.bytes_per_peer.empty() &&
        op.name.find("dispatch") != std::string::npos) {
      std::vector<double>& to = dispatch[op.layer];
      to.resize(std::max(to.size(), op.bytes_per_peer.size()), 0.0);
      for (size_t j = 0; j < op.bytes_per_peer.size(); ++j) {
        to[j] += static_cast<double>(op.bytes_per_peer[j]);
      }
    }
    if (!op.expert_tokens.empty() && op.experts.size() == op.expert_tokens.size()) {
      for (size_t i = 0; i < op.experts.size(); ++i) {
        tokens[op.layer][op.experts[i]] += static_cast<double>(op.expert_tokens[i]);
      }
    }
  }
  std::map<int64_t, std::vector<double>> dispatch;      // layer → bytes to each EP rank
  std::map<int64_t, std::map<int32_t, double>> tokens;  // layer → expert → tokens
};

}  // namespace

StatusOr<MeasuredRouting> ReadMeasuredRouting(const std::string& trace,
                                              const Experiment& experiment) {
  MeasuredRouting out;
  const ModelSpec& m = experiment.model;
  if (!m.is_moe()) return out;
  RoutingSink sink;
  ASSIGN_OR_RETURN(importers::ImportResult imported,
                   importers::ImportTrace(trace, std::nullopt, &sink));
  (void)imported;
  const int64_t experts = m.moe.num_routed_experts, ep = experiment.parallel.ep;
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(experiment));
  double imbalance = 0;
  auto add = [&](int64_t layer, std::vector<double> weights, const std::vector<double>& shares) {
    double sum = 0, most = 0;
    for (double s : shares) sum += s, most = std::max(most, s);
    if (!(sum > 0) || layer >= m.num_layers) return;
    imbalance += most / (sum / static_cast<double>(shares.size()));
    out.layer_weights[layer] = std::move(weights);
  };
  if (ep > 1) {
    for (const auto& [layer, to] : sink.dispatch) {
      if (static_cast<int64_t>(to.size()) != ep) continue;  // not this plan's EP group
      std::vector<double> weights(static_cast<size_t>(experts), 0.0);
      for (int64_t j = 0; j < ep; ++j) {
        const std::vector<int64_t>& mine = placement.ExpertsOfEpRank(j);
        for (int64_t e : mine) {
          weights[static_cast<size_t>(e)] = to[j] / static_cast<double>(mine.size());
        }
      }
      add(layer, std::move(weights), to);
    }
    if (!out.layer_weights.empty()) out.source = "dispatch all-to-all";
  }
  if (out.layer_weights.empty()) {
    for (const auto& [layer, by_expert] : sink.tokens) {
      std::vector<double> weights(static_cast<size_t>(experts), 0.0);
      bool valid = true;
      for (const auto& [e, t] : by_expert) {
        if (e < 0 || e >= experts) valid = false;
        if (valid) weights[static_cast<size_t>(e)] = t;
      }
      if (!valid) continue;
      std::vector<double> shares(static_cast<size_t>(std::max<int64_t>(ep, 1)), 0.0);
      for (int64_t j = 0; j < static_cast<int64_t>(shares.size()); ++j) {
        for (int64_t e : placement.ExpertsOfEpRank(j)) shares[j] += weights[e];
      }
      add(layer, std::move(weights), shares);
    }
    if (!out.layer_weights.empty()) out.source = "expert token counts";
  }
  if (!out.layer_weights.empty()) {
    out.imbalance = imbalance / static_cast<double>(out.layer_weights.size());
  }
  return out;
}

Experiment WithMeasuredRouting(Experiment experiment, const MeasuredRouting& routing) {
  if (routing.layer_weights.empty()) return experiment;
  RoutingSpec& r = experiment.workload.routing;
  r.kind = RoutingKind::kFixed;
  r.fixed_weights.clear();  // layers the trace does not cover: uniform
  r.layer_weights = routing.layer_weights;
  return experiment;
}

}  // namespace shardscope::calibrate
