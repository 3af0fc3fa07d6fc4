// IterationCost: how long one scheduler iteration takes on one replica, from
// the simulator itself. A batch of n requests is built by the ProgramBuilder
// as a fixed-batch phase of the experiment's plan with dp = 1 — prefill of n
// prompts of t tokens, or one decode step of n requests over a context of c
// cached tokens — and run on the Engine with the experiment's calibration and
// network; its time is the last rank's end. So every parallel plan the
// builder supports (TP, PP, ring attention, EP, MLA) is served the same way.
//
// Costs are cached on a grid: each coordinate is exact up to 2·P and then
// rounded to P points per octave (P = scheduler.grid_points_per_octave; 0: every
// value exact), and values between grid points are interpolated linearly
// (bilinearly in n and t or c). Grid points of prompt lengths and contexts are
// multiples of the ring-attention chunk count when sp > 1. Not thread-safe.
#ifndef SHARDSCOPE_SERVE_ITERATION_COST_H_
#define SHARDSCOPE_SERVE_ITERATION_COST_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "plan/placement.h"
#include "sim/collectives.h"
#include "sim/engine.h"
#include "sim/sim_setup.h"

namespace shardscope::serve {

class IterationCost {
 public:
  // One replica of `experiment` (its plan with dp = 1). Fails on a bad
  // calibration file or a plan the builder cannot express.
  static StatusOr<std::unique_ptr<IterationCost>> Create(const Experiment& experiment,
                                                         const std::string& calibration_file,
                                                         sim::Algorithm allreduce,
                                                         int64_t grid_points_per_octave);
  IterationCost(const IterationCost&) = delete;
  IterationCost& operator=(const IterationCost&) = delete;

  // Seconds to prefill `requests` prompts of `tokens` tokens each (both ≥ 1).
  StatusOr<double> Prefill(int64_t requests, int64_t tokens);
  // Extra seconds a prefill chunk of `chunk` tokens takes when `prior` tokens of
  // its request are already cached, beyond the same chunk alone: a chunk costs
  // the larger of its cost alone and the marginal cost of growing its request's
  // prefill from `prior` to `prior + chunk` tokens (Prefill(1, prior + chunk) −
  // Prefill(1, prior)), which carries the attention over the cached tokens.
  // Under expert parallelism (attention data-parallel over the ep ranks) a
  // rank attends over its own requests' prefixes while the others do theirs;
  // the marginal cost is that of the rank's attention kernels alone,
  // AttentionSeconds(prior + chunk) − AttentionSeconds(prior) −
  // AttentionSeconds(chunk): the one-request pass of the whole group would add
  // its MoE layers' and exchanges' non-additive terms (and subtract their
  // fixed costs) to each request's attention.
  StatusOr<double> PriorContextExtra(int64_t prior, int64_t chunk);
  // Extra seconds of an iteration's chunks over their cached prefixes, each
  // chunk given as {prior, chunk} in the iteration's order. One attention
  // rank (ep = 1): the sum of PriorContextExtra. Under expert parallelism the
  // chunks go to the ep ranks in turn (round robin, as the iteration's
  // requests are spread), the ranks attend at the same time, and the
  // iteration waits for the rank with the most: the largest per-rank sum.
  StatusOr<double> PriorContextSeconds(std::span<const std::pair<int64_t, int64_t>> chunks);
  // Seconds of an iteration that prefills `chunks` chunks of `tokens` tokens in
  // all (both ≥ 1) and decodes `requests` (≥ 1) requests over a mean context of
  // `context` tokens in one fused forward pass, as serving engines run it: the
  // GEMMs, norms and MoE layers go over all T + m tokens at once, reading the
  // weights once. It costs the prefill of n prompts of ⌈(T + m)/n⌉ tokens plus
  // the decode step's attention over its cached contexts,
  // Decode(m, c) − Decode(m, 1) (≥ 0); chunks' prior contexts are the
  // caller's (PriorContextExtra).
  StatusOr<double> Mixed(int64_t chunks, int64_t tokens, int64_t requests, int64_t context);
  // Seconds of one decode step of `requests` requests over `context` cached
  // tokens; `replay`: its kernels replayed from a CUDA graph (no per-kernel
  // launch; the replay itself is terms().IterationSeconds's).
  StatusOr<double> Decode(int64_t requests, int64_t context, bool replay = false);
  // The calibration's overhead terms (sim::OverheadTerms; all 0 by default).
  const sim::OverheadTerms& terms() const { return setup_->calibration.terms; }
  const sim::Calibration& calibration() const { return setup_->calibration; }

  // Ranks that attend over their own requests side by side: ep (attention is
  // data-parallel under expert parallelism), else 1.
  int64_t attention_ranks() const { return std::max<int64_t>(replica_.parallel.ep, 1); }

  int64_t programs_simulated() const { return programs_simulated_; }
  int64_t ops_simulated() const { return ops_simulated_; }
  const std::string& calibration_source() const { return setup_->calibration.source; }

  // The grid points around x: {lo, hi} with lo ≤ x ≤ hi (equal when x is one).
  static std::pair<int64_t, int64_t> GridPoints(int64_t x, int64_t per_octave, int64_t align);

 private:
  IterationCost(Experiment replica, Placement placement, std::unique_ptr<const sim::SimSetup> setup,
                sim::Algorithm allreduce, int64_t per_octave);
  enum class Kind { kPrefill, kDecode, kDecodeReplay };
  StatusOr<double> Interpolated(Kind kind, int64_t requests, int64_t tokens);
  // Seconds of one rank's prefill attention kernels (no fixed costs: a kernel's
  // launch or device-side cost is not the prefix's) in the prefill of one request of `tokens`
  // tokens on every attention rank; cached.
  StatusOr<double> AttentionSeconds(int64_t tokens);
  StatusOr<double> AtGridPoint(Kind kind, int64_t requests, int64_t tokens);

  Experiment replica_;  // the experiment with dp = 1
  Placement placement_;
  std::unique_ptr<const sim::SimSetup> setup_;
  sim::Engine engine_;
  sim::ComputeModel replay_compute_;     // setup_->compute without launches
  sim::Engine replay_engine_;            // decode steps replayed from a CUDA graph
  sim::ComputeModel attention_compute_;  // setup_->compute without fixed costs
  int64_t per_octave_;
  int64_t align_;  // prompt and context grid points are multiples of this
  std::map<std::tuple<Kind, int64_t, int64_t>, double> cache_;
  std::map<int64_t, double> attention_cache_;  // AttentionSeconds by tokens
  int64_t programs_simulated_ = 0, ops_simulated_ = 0;
};

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_ITERATION_COST_H_
