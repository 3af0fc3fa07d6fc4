// Physical lower bounds on an experiment's latencies, and the throughput upper
// bounds they imply. Per rank and phase, from the Program's exact op costs:
//   compute = Σ FLOPs / peak FLOP/s of the workload dtype;
//   memory  = Σ (bytes read + written) / memory bandwidth (each op streams its
//             operands from device memory once; no reuse across ops);
//   network = Σ over comm ops of max(bytes that must leave the rank over the
//             scale-up port / its bandwidth, over the NIC / its bandwidth) + α.
// A rank cannot finish a phase before the largest of these (perfect overlap
// assumed), so the phase's bound is the maximum over ranks. docs/bounds.md has
// the derivations.
#ifndef SHARDSCOPE_ESTIMATE_BOUNDS_H_
#define SHARDSCOPE_ESTIMATE_BOUNDS_H_

#include <string>
#include <vector>

#include "config/experiment.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/program.h"

namespace shardscope {

enum class BoundKind { kCompute, kMemory, kNetwork };
std::string_view BoundKindName(BoundKind kind);  // "compute", "memory bandwidth", "network"

struct PhaseBound {
  double compute = 0;  // seconds, on the critical rank
  double memory = 0;
  double network = 0;
  int64_t critical_rank = 0;  // the rank with the largest bound
  double seconds() const;
  BoundKind dominant() const;
};

// Lower bound of one phase over all ranks.
StatusOr<PhaseBound> BoundPhase(const Experiment& experiment, const Placement& placement,
                                const PhaseProgram& program);

struct Bounds {
  PhaseBound ttft;                  // prefill
  PhaseBound tpot;                  // mean decode step (first and last step averaged)
  bool has_decode = false;          // tokens_to_generate ≥ 2
  double total = 0;                 // seconds: ttft + (generated − 1) · tpot
  double prefill_tokens_per_s = 0;  // upper bound: batch · prompt / ttft
  double decode_tokens_per_s = 0;   // upper bound: batch / tpot
  double tps = 0;                   // the seeds' TPS upper bound: batch · prompt / total
  BoundKind total_dominant = BoundKind::kCompute;
  // Weights a rank holds and the device's last-level cache: can they stay resident?
  double max_rank_weights = 0;
  double cache_bytes = 0;
};

StatusOr<Bounds> ComputeBounds(const Experiment& experiment, const Placement& placement);

// One stated claim against the bounds.
struct ClaimCheck {
  std::string key;     // e.g. "tps"
  double claimed = 0;  // in the claim's unit
  double bound = 0;    // the physical limit in the same unit
  bool possible = true;
  double margin = 0;   // claimed / bound (tps-like) or bound / claimed (latency-like)
  std::string reason;  // which bound rules it in or out, in words
};

std::vector<ClaimCheck> CheckClaims(const Experiment& experiment, const Bounds& bounds,
                                    const MemoryPlan& memory);

}  // namespace shardscope

#endif  // SHARDSCOPE_ESTIMATE_BOUNDS_H_
