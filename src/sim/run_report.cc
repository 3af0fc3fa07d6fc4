#include "sim/run_report.h"

#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "plan/placement.h"

namespace shardscope::sim {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// The simulated counterpart of a claim key (units in the key's name).
double Simulated(const std::string& key, const SimResult& s, const MemoryPlan& m) {
  if (key == "tps") return s.tps;
  if (key == "tpot_ms") return s.decode_steps_simulated > 0 ? s.tpot * 1e3 : kNan;
  if (key == "ttft_ms") return s.ttft * 1e3;
  if (key == "decode_tokens_per_s") return s.decode_tokens_per_s;
  // memory_per_gpu_gb: planned, not simulated (the mem/dev column shows it).
  return kNan;
}

std::string Num(double v) { return std::isnan(v) ? "-" : FormatSi(v); }

}  // namespace

StatusOr<RunReport> BuildRunReport(const Experiment& e, const SimOptions& options) {
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  RunReport r{e, {}, {}, PlanMemory(e, pl), {}};
  ASSIGN_OR_RETURN(r.bounds, ComputeBounds(e, pl));
  SimOptions with_bounds = options;
  with_bounds.bounds = &r.bounds;  // into the trace metadata, for the report
  ASSIGN_OR_RETURN(r.sim, SimulateExperiment(e, with_bounds));
  for (const ClaimCheck& c : CheckClaims(e, r.bounds, r.memory)) {
    r.claims.push_back({c, Simulated(c.key, r.sim, r.memory)});
  }
  return r;
}

std::string RunReportText(const std::vector<RunReport>& reports) {
  std::string out =
      fmt::format("{:<36} {:>10} {:>10} {:>10} {:>11} {:>10} {:>6} {:<17} {:>8}\n", "experiment",
                  "TTFT", "TPOT", "tok/s", "TPS", "mem/dev", "comm%", "dominant bound", "sim/bnd");
  for (const RunReport& r : reports) {
    const SimResult& s = r.sim;
    const bool decode = s.decode_steps_simulated > 0;
    const PhaseBound& dominant = decode ? r.bounds.tpot : r.bounds.ttft;
    const double ratio =
        decode ? s.tpot / r.bounds.tpot.seconds() : s.ttft / r.bounds.ttft.seconds();
    out += fmt::format(
        "{:<36} {:>10} {:>10} {:>10} {:>11} {:>10} {:>5.1f}% {:<17} {:>7.2f}×\n", r.experiment.name,
        FormatSeconds(s.ttft), decode ? FormatSeconds(s.tpot) : "-",
        decode ? FormatSi(s.decode_tokens_per_s) : "-", FormatSi(s.tps),
        FormatBytes(r.memory.Peak().total()) + (r.memory.Fits() ? "" : "!"),
        100 * s.comm_fraction(),
        std::string(BoundKindName(dominant.dominant())) + (decode ? " (tpot)" : " (ttft)"), ratio);
  }
  out +=
      "  TTFT/TPOT simulated; tok/s = batch / TPOT; TPS = batch·prompt / run time (the seeds' "
      "figure) over every decode step, where `analyze` of the trace divides by its traced steps' "
      "wall time (trace_steps); mem/dev = planned peak per device (! = does not fit); comm% = comm "
      "/ (comm + "
      "compute) over all "
      "ranks; sim/bnd = simulated / physical lower bound (≥ 1).\n";
  for (const RunReport& r : reports) {
    const SimResult& s = r.sim;
    if (!r.memory.Fits()) {
      out += fmt::format(
          "  {}: DOES NOT FIT: planned peak {} per device > {} capacity (mem/dev marked !); the "
          "times above assume it did\n",
          r.experiment.name, FormatBytes(r.memory.Peak().total()), FormatBytes(r.memory.capacity));
    }
    if (!s.terms.empty()) {
      out += fmt::format("  {}: fidelity terms on (calibration, docs/fidelity.md): {}\n",
                         r.experiment.name, fmt::join(s.terms, ", "));
    }
    if (s.decode_steps_simulated < s.decode_steps) {
      out += fmt::format(
          "  {}: simulated the first {} of {} decode steps (--decode-steps, default at most 1024) "
          "and the last; TPOT, "
          "run time and TPS interpolate step time linearly in context between them\n",
          r.experiment.name, s.decode_steps_simulated, s.decode_steps);
    }
  }
  bool any_claims = false;
  for (const RunReport& r : reports) any_claims = any_claims || !r.claims.empty();
  if (any_claims) {
    out += "\nclaims: claimed vs simulated vs physical bound\n";
    out += fmt::format("  {:<36} {:<20} {:>10} {:>10} {:>10}  {}\n", "experiment", "claim",
                       "claimed", "simulated", "bound", "verdict");
    for (const RunReport& r : reports) {
      for (const ClaimRow& c : r.claims) {
        out += fmt::format("  {:<36} {:<20} {:>10} {:>10} {:>10}  {}\n", r.experiment.name,
                           c.check.key, Num(c.check.claimed), Num(c.simulated), Num(c.check.bound),
                           c.check.possible ? "possible" : "IMPOSSIBLE (breaks the bound)");
      }
    }
  }
  // The heading only over a list (`run --no-trace` writes none).
  std::string traces;
  for (const RunReport& r : reports) {
    if (!r.sim.trace_path.empty()) traces += fmt::format("  {}\n", r.sim.trace_path);
  }
  if (!traces.empty()) out += "\ntraces\n" + traces;
  return out;
}

nlohmann::json RunReportJson(const RunReport& r) {
  const SimResult& s = r.sim;
  nlohmann::json claims = nlohmann::json::array();
  for (const ClaimRow& c : r.claims) {
    claims.push_back(
        {{"claim", c.check.key},
         {"claimed", c.check.claimed},
         {"simulated", std::isnan(c.simulated) ? nlohmann::json() : nlohmann::json(c.simulated)},
         {"bound", c.check.bound},
         {"possible", c.check.possible}});
  }
  nlohmann::json j = {{"experiment", r.experiment.name},
                      {"ttft_s", s.ttft},
                      {"tpot_s", s.tpot},
                      {"decode_steps", s.decode_steps},
                      {"decode_steps_simulated", s.decode_steps_simulated},
                      {"run_s", s.total},
                      {"decode_tokens_per_s", s.decode_tokens_per_s},
                      {"prefill_tokens_per_s", s.prefill_tokens_per_s},
                      {"tps", s.tps},
                      {"comm_fraction", s.comm_fraction()},
                      {"exposed_comm_s", s.exposed_comm_seconds},
                      {"memory_peak_bytes", r.memory.Peak().total()},
                      {"memory_capacity_bytes", r.memory.capacity},
                      {"fits_in_memory", r.memory.Fits()},
                      {"bound_ttft_s", r.bounds.ttft.seconds()},
                      {"bound_tpot_s", r.bounds.tpot.seconds()},
                      {"ops", s.ops},
                      {"transfers", s.transfers},
                      {"calibration", s.calibration_source},
                      {"trace", s.trace_path},
                      {"metadata", s.metadata_path},
                      {"claims", claims}};
  if (!s.terms.empty()) j["fidelity_terms"] = s.terms;  // only when on: outputs stay as they were
  return j;
}

}  // namespace shardscope::sim
