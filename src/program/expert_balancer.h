// ExpertBalancer: EPLB (DeepSeek's expert-parallel load balancer) for one MoE
// layer — R redundant expert slots given to the hottest experts, and every
// replica placed on an EP rank so that the ranks' expected loads balance
// (docs/sim.md, "EPLB"). A pure function of the per-expert loads; no state.
#ifndef SHARDSCOPE_PROGRAM_EXPERT_BALANCER_H_
#define SHARDSCOPE_PROGRAM_EXPERT_BALANCER_H_

#include <cstdint>
#include <vector>

namespace shardscope {

// Where each physical expert slot of one layer lives and which routed expert
// it holds: slots [k·S, (k+1)·S) sit on EP rank k (S = slots_per_rank).
struct ExpertReplicas {
  int64_t slots_per_rank = 0;
  std::vector<int32_t> slot_expert;                // slot → routed expert
  std::vector<std::vector<int32_t>> expert_slots;  // routed expert → its slots, ascending
  // Expected load per EP rank: each expert's load split evenly over its replicas.
  std::vector<double> rank_load;
};

// Balances `load` (one non-negative expected load per routed expert, e.g. the
// routing probabilities or measured token counts) over `ep` ranks holding
// (E + redundant) / ep slots each; ep must divide E + redundant.
//  1. Replication: each expert starts with one replica; each redundant slot
//     goes to the expert of the highest load per replica (ties: lowest id).
//  2. Packing, longest processing time first: replicas (each carrying its
//     expert's load / its replicas) in decreasing load (ties: expert id) go to
//     the least-loaded rank with a free slot (ties: lowest rank).
ExpertReplicas BalanceExperts(const std::vector<double>& load, int64_t redundant, int64_t ep);

// max ÷ mean of `load` (1 for a perfectly even load; 0 when empty or all zero).
double LoadImbalance(const std::vector<double>& load);

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_EXPERT_BALANCER_H_
