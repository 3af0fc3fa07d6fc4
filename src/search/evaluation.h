// Evaluation of one candidate in two steps. Screen: reject it by the plan's
// validity, the device budget, memory fit or a physical bound that rules out
// the SLOs — in that order, cheapest first — and compute its bounds. Simulate:
// run the simulator on a screened candidate and derive the figures the search
// ranks by. Each step depends on its candidate alone, so candidates can be
// evaluated on any rank in any order with the same result.
#ifndef SHARDSCOPE_SEARCH_EVALUATION_H_
#define SHARDSCOPE_SEARCH_EVALUATION_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "config/experiment.h"
#include "search/candidate.h"
#include "search/search_spec.h"

namespace shardscope::search {

// What decided a candidate, in the order the rules run.
enum class Outcome {
  kInvalidPlan,  // ValidatePlan refused it (heads, prompt chunks, experts, batch)
  kOverBudget,   // its replicas need more devices than the budget
  kNoMemoryFit,  // a rank needs more than its device's memory
  kSloBound,     // a physical lower bound already misses an SLO
  kDominated,    // its bounds are beaten on every axis by a simulated plan (search.h)
  kSimulated,    // simulated (after Screen alone: passed, to simulate)
};
inline constexpr int kNumOutcomes = 6;
std::string_view OutcomeName(Outcome o);  // "plan", "device budget", "memory", "slo bound", ...

// Figures of one simulated candidate. Throughput is generated tokens (prompt
// tokens for a prefill-only workload, tokens_to_generate = 1) per second over
// all replicas serving the experiment's batch.
struct Figures {
  double ttft = 0;             // seconds
  double tpot = 0;             // seconds; 0 without decode
  double total = 0;            // seconds for the whole request
  double tokens_per_s = 0;     // all replicas
  double per_gpu = 0;          // tokens_per_s / devices
  double per_user = 0;         // 1 / tpot (prompt tokens / ttft without decode)
  double cost_per_mtok = 0;    // dollars per million tokens at the spec's GPU-hour price
  double memory_peak = 0;      // bytes on the fullest rank
  double memory_capacity = 0;  // bytes per device
  double bound_ttft = 0;       // physical lower bounds, seconds
  double bound_tpot = 0;
  double bound_total = 0;
  double bound_per_gpu = 0;  // upper bounds implied by them
  double bound_per_user = 0;
  std::string dominant;       // the bound that dominates the whole run
  double sim_over_bound = 0;  // total / bound_total
};

struct Evaluation {
  Candidate candidate;
  Outcome outcome = Outcome::kSimulated;
  std::string reason;  // why it was rejected, in words (empty when simulated)
  Figures figures;     // bounds and memory filled as far as the candidate got
  bool meets_slo = true;
};

// Runs the rules and computes the bounds; a candidate that passes them all
// has outcome kSimulated and only its bound and memory figures.
StatusOr<Evaluation> Screen(const Experiment& base, const SearchSpec& spec,
                            const Candidate& candidate);
// Simulates a screened candidate (spec.decode_steps decode steps) and fills in
// its figures. A simulator failure is an error.
StatusOr<Evaluation> Simulate(const Experiment& base, const SearchSpec& spec, Evaluation screened);
// Screen, then Simulate when it passed.
StatusOr<Evaluation> Evaluate(const Experiment& base, const SearchSpec& spec,
                              const Candidate& candidate);

// The objective's figure, oriented so that larger is better: of the simulated
// figures, or (bound = true) of the physical bounds, which no simulation beats.
double Score(const Figures& f, Objective objective, bool bound = false);

// Exact round trip (doubles keep every bit), for gathering across ranks; the
// candidate is not carried (every rank enumerates the same ones).
nlohmann::json EvaluationToJson(const Evaluation& e);
StatusOr<Evaluation> EvaluationFromJson(const nlohmann::json& j);

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_EVALUATION_H_
