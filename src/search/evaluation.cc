#include "search/evaluation.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/units.h"
#include "estimate/bounds.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "serve/kv_budget.h"
#include "serve/serving_simulator.h"
#include "sim/simulator.h"

namespace shardscope::search {

namespace {

constexpr auto kOutcomeNames = MakeEnumNames<Outcome>({{Outcome::kInvalidPlan, "plan"},
                                                       {Outcome::kOverBudget, "device budget"},
                                                       {Outcome::kNoMemoryFit, "memory"},
                                                       {Outcome::kSloBound, "slo bound"},
                                                       {Outcome::kDominated, "dominated"},
                                                       {Outcome::kSimulated, "simulated"}});

}  // namespace

std::string_view OutcomeName(Outcome o) { return kOutcomeNames.Name(o); }

namespace {

// Throughput figures of a run whose request takes `ttft` then `tpot` per
// further token (`total` in all) on `devices` devices serving `requests`.
struct Rates {
  double tokens_per_s = 0, per_gpu = 0, per_user = 0;
};
Rates RatesOf(const Workload& w, int64_t requests, int64_t devices, double ttft, double tpot,
              double total) {
  Rates r;
  const double n = static_cast<double>(requests);
  if (w.tokens_to_generate >= 2 && tpot > 0) {
    r.tokens_per_s = n * static_cast<double>(w.tokens_to_generate) / total;
    r.per_user = 1.0 / tpot;
  } else if (ttft > 0) {
    r.tokens_per_s = n * static_cast<double>(w.sequence_length) / ttft;
    r.per_user = static_cast<double>(w.sequence_length) / ttft;
  }
  r.per_gpu = r.tokens_per_s / static_cast<double>(devices);
  return r;
}

}  // namespace

StatusOr<Evaluation> Screen(const Experiment& base, const SearchSpec& spec,
                            const Candidate& candidate) {
  Evaluation ev;
  ev.candidate = candidate;
  const Experiment e = CandidateExperiment(base, candidate);
  auto reject = [&](Outcome o, std::string reason) {
    ev.outcome = o;
    ev.reason = std::move(reason);
    ev.meets_slo = false;
    return ev;
  };
  if (Status valid = ValidatePlan(e); !valid.ok()) {
    return reject(Outcome::kInvalidPlan, valid.message());
  }
  const int64_t budget = DeviceBudget(base, spec);
  if (candidate.devices() > budget) {
    return reject(Outcome::kOverBudget,
                  fmt::format("{} replicas × {} devices = {} exceed the budget of {} devices",
                              candidate.replicas, candidate.world(), candidate.devices(), budget));
  }
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  const MemoryPlan memory = PlanMemory(e, placement);
  Figures& f = ev.figures;
  f.memory_peak = memory.Peak().total();
  f.memory_capacity = memory.capacity;
  if (!memory.Fits()) {
    return reject(Outcome::kNoMemoryFit,
                  fmt::format("rank {} needs {:.1f} GB of the device's {:.1f} GB",
                              memory.Peak().rank, f.memory_peak / kGB, f.memory_capacity / kGB));
  }
  if (base.serving) {
    // A served plan must leave its replicas room for a KV cache (the scheduler's
    // memory); the fixed-batch bounds are no limit on per-request figures (requests
    // batch differently), so neither the SLO-bound nor the dominance rule applies.
    if (StatusOr<serve::KvBudget> kv = serve::PlanKvBudget(e); !kv.ok()) {
      return reject(Outcome::kNoMemoryFit, kv.status().message());
    }
    f.bound_per_gpu = f.bound_per_user = std::numeric_limits<double>::max();
    ev.outcome = Outcome::kSimulated;
    return ev;
  }
  ASSIGN_OR_RETURN(Bounds bounds, ComputeBounds(e, placement));
  f.bound_ttft = bounds.ttft.seconds();
  f.bound_tpot = bounds.has_decode ? bounds.tpot.seconds() : 0;
  f.bound_total = bounds.total;
  f.dominant = std::string(BoundKindName(bounds.total_dominant));
  const Rates upper = RatesOf(e.workload, base.workload.batch_size, candidate.devices(),
                              f.bound_ttft, f.bound_tpot, f.bound_total);
  f.bound_per_gpu = upper.per_gpu;
  f.bound_per_user = upper.per_user;
  if (spec.slo.ttft_ms > 0 && f.bound_ttft * 1e3 > spec.slo.ttft_ms) {
    return reject(
        Outcome::kSloBound,
        fmt::format("TTFT bound {:.3f} ms ({}) exceeds the SLO of {} ms", f.bound_ttft * 1e3,
                    BoundKindName(bounds.ttft.dominant()), spec.slo.ttft_ms));
  }
  if (spec.slo.tpot_ms > 0 && bounds.has_decode && f.bound_tpot * 1e3 > spec.slo.tpot_ms) {
    return reject(
        Outcome::kSloBound,
        fmt::format("TPOT bound {:.3f} ms ({}) exceeds the SLO of {} ms", f.bound_tpot * 1e3,
                    BoundKindName(bounds.tpot.dominant()), spec.slo.tpot_ms));
  }
  ev.outcome = Outcome::kSimulated;
  return ev;
}

StatusOr<Evaluation> Simulate(const Experiment& base, const SearchSpec& spec, Evaluation screened) {
  Evaluation ev = std::move(screened);
  if (ev.outcome != Outcome::kSimulated) return ev;
  const Candidate& candidate = ev.candidate;
  const Experiment e = CandidateExperiment(base, candidate);
  Figures& f = ev.figures;
  bool rejects_requests = false;
  if (base.serving) {
    // Served: p99 TTFT and TPOT (what SLOs bound), output tokens/s, per user 1 / mean TPOT.
    serve::ServeOptions so;
    so.sim.write_trace = false;
    ASSIGN_OR_RETURN(serve::ServingResult served, serve::SimulateServing(e, so));
    const serve::ServingMetrics& m = served.metrics;
    f.ttft = m.ttft.p99;
    f.tpot = m.tpot.p99;
    f.total = m.e2e.mean;
    f.tokens_per_s = m.output_tokens_per_s;
    f.per_gpu = m.output_tokens_per_s_per_device;
    f.per_user = m.tpot.mean > 0 ? 1.0 / m.tpot.mean : 0;
    rejects_requests = m.rejected > 0;
  } else {
    sim::SimOptions options;
    options.write_trace = false;
    options.max_decode_steps = spec.decode_steps;
    ASSIGN_OR_RETURN(sim::SimResult sim, sim::SimulateExperiment(e, options));
    f.ttft = sim.ttft;
    f.tpot = sim.tpot;
    f.total = sim.total;
    const Rates rates =
        RatesOf(e.workload, base.workload.batch_size, candidate.devices(), f.ttft, f.tpot, f.total);
    f.tokens_per_s = rates.tokens_per_s;
    f.per_gpu = rates.per_gpu;
    f.per_user = rates.per_user;
    f.sim_over_bound = f.bound_total > 0 ? f.total / f.bound_total : 0;
  }
  f.cost_per_mtok = f.tokens_per_s > 0 ? static_cast<double>(candidate.devices()) *
                                             spec.gpu_hour_usd / 3600.0 / f.tokens_per_s * 1e6
                                       : 0;
  ev.outcome = Outcome::kSimulated;
  ev.meets_slo = !rejects_requests && (spec.slo.ttft_ms <= 0 || f.ttft * 1e3 <= spec.slo.ttft_ms) &&
                 (spec.slo.tpot_ms <= 0 || f.tpot <= 0 || f.tpot * 1e3 <= spec.slo.tpot_ms);
  return ev;
}

StatusOr<Evaluation> Evaluate(const Experiment& base, const SearchSpec& spec,
                              const Candidate& candidate) {
  ASSIGN_OR_RETURN(Evaluation screened, Screen(base, spec, candidate));
  return Simulate(base, spec, std::move(screened));
}

double Score(const Figures& f, Objective objective, bool bound) {
  switch (objective) {
    case Objective::kThroughput:
      return bound ? f.bound_per_gpu : f.per_gpu;
    case Objective::kTtft:
      return -(bound ? f.bound_ttft : f.ttft);
    case Objective::kTpot: {
      // Prefill-only workloads have no TPOT: the one latency there is.
      const double tpot = bound ? f.bound_tpot : f.tpot;
      return tpot > 0 ? -tpot : -(bound ? f.bound_ttft : f.ttft);
    }
    case Objective::kCost:
      // Cost ∝ 1 / tokens/s per GPU.
      return bound ? f.bound_per_gpu : f.per_gpu;
  }
  return 0;
}

nlohmann::json EvaluationToJson(const Evaluation& e) {
  const Figures& f = e.figures;
  return nlohmann::json{
      {"index", e.candidate.index},
      {"outcome", static_cast<int>(e.outcome)},
      {"reason", e.reason},
      {"meets_slo", e.meets_slo},
      {"f",
       {f.ttft, f.tpot, f.total, f.tokens_per_s, f.per_gpu, f.per_user, f.cost_per_mtok,
        f.memory_peak, f.memory_capacity, f.bound_ttft, f.bound_tpot, f.bound_total,
        f.bound_per_gpu, f.bound_per_user, f.sim_over_bound}},
      {"dominant", f.dominant}};
}

StatusOr<Evaluation> EvaluationFromJson(const nlohmann::json& j) {
  try {
    Evaluation e;
    e.candidate.index = j.at("index").get<int64_t>();
    int outcome = j.at("outcome").get<int>();
    if (outcome < 0 || outcome >= kNumOutcomes) return DataLoss("bad search outcome {}", outcome);
    e.outcome = static_cast<Outcome>(outcome);
    e.reason = j.at("reason").get<std::string>();
    e.meets_slo = j.at("meets_slo").get<bool>();
    const auto& a = j.at("f");
    if (!a.is_array() || a.size() != 15) return DataLoss("bad search figures");
    Figures& f = e.figures;
    double* fields[] = {
        &f.ttft,       &f.tpot,          &f.total,         &f.tokens_per_s,    &f.per_gpu,
        &f.per_user,   &f.cost_per_mtok, &f.memory_peak,   &f.memory_capacity, &f.bound_ttft,
        &f.bound_tpot, &f.bound_total,   &f.bound_per_gpu, &f.bound_per_user,  &f.sim_over_bound};
    for (size_t i = 0; i < 15; ++i) *fields[i] = a[i].get<double>();
    f.dominant = j.at("dominant").get<std::string>();
    return e;
  } catch (const nlohmann::json::exception& ex) {
    return DataLoss("bad search result from a rank: {}", ex.what());
  }
}

}  // namespace shardscope::search
