// ExpertRouting: how many of a rank's token→expert assignments go to each routed
// expert in one MoE layer, drawn from the workload's routing distribution when no
// real router runs. Deterministic: the same (seed, layer, stream key) gives the same
// counts on every machine (own PRNG and samplers, no std:: distributions).
// Immutable after Create; thread-safe.
#ifndef SHARDSCOPE_PROGRAM_EXPERT_ROUTING_H_
#define SHARDSCOPE_PROGRAM_EXPERT_ROUTING_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope {

class ExpertRouting {
 public:
  // Fails on a fixed distribution whose weights are not one non-negative weight
  // per expert with a positive sum, or a negative zipf exponent.
  static StatusOr<ExpertRouting> Create(const RoutingSpec& spec, int64_t num_experts,
                                        uint64_t seed);

  // Probability that an assignment picks each expert in `layer`. uniform: 1/E;
  // zipf: ∝ 1/rank^s, popularity ranks given by a random permutation of the
  // experts fixed by (seed, layer); fixed: the normalised weights.
  std::vector<double> Probabilities(int64_t layer) const;

  // Per-expert counts summing to `assignments` (tokens × experts per token).
  // uniform and zipf: a multinomial draw from the PRNG stream `stream` (see
  // StreamKey) — sequential binomials, O(experts), or with fewer assignments than
  // experts each assignment drawn from the cumulative distribution; fixed: the
  // proportional split, each expert the floor or the ceiling of its share
  // (systematic sampling shifted per stream: its share on average over streams).
  std::vector<int64_t> Counts(int64_t layer, int64_t assignments, uint64_t stream) const;

  // A layer's probabilities and their running sums, computed once for many draws.
  struct LayerDistribution {
    int64_t layer = 0;
    std::vector<double> p, cdf;
  };
  LayerDistribution Distribution(int64_t layer) const;
  // Counts(d.layer, assignments, stream) into `counts` (one per expert), without
  // recomputing the layer's distribution or allocating.
  void CountsInto(const LayerDistribution& d, int64_t assignments, uint64_t stream,
                  std::span<int64_t> counts) const;

  // Mixes values into a PRNG stream key (e.g. layer, phase, step, owner).
  static uint64_t StreamKey(std::initializer_list<uint64_t> parts);

 private:
  RoutingSpec spec_;
  int64_t num_experts_ = 0;
  uint64_t seed_ = 0;
};

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_EXPERT_ROUTING_H_
