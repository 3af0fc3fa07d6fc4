// MemoryPlan: the bytes each rank needs resident — weights as sharded, KV
// cache at the end of generation, the activation peak (prefill), and
// communication buffers — against its device's memory. Pure function of the
// experiment and placement; docs/memory.md gives every formula.
#ifndef SHARDSCOPE_PLAN_MEMORY_H_
#define SHARDSCOPE_PLAN_MEMORY_H_

#include <cstdint>
#include <vector>

#include "config/experiment.h"
#include "plan/placement.h"

namespace shardscope {

struct RankMemory {
  int64_t rank = 0;
  int64_t requests = 0;      // requests this rank serves (dp·ep share of the batch)
  double weight_params = 0;  // parameters held (shards count their share)
  double weights = 0;        // bytes
  double kv_cache = 0;       // bytes at the last generated token
  double activations = 0;    // peak bytes of live activations (prefill)
  double comm_buffers = 0;   // bytes
  double total() const { return weights + kv_cache + activations + comm_buffers; }
};

struct MemoryPlan {
  std::vector<RankMemory> ranks;
  double capacity = 0;  // device memory, bytes
  // The rank with the largest total.
  const RankMemory& Peak() const;
  bool Fits() const { return Peak().total() <= capacity; }
};

// Buffers a communicator of more than one rank reserves (NCCL-like: send and
// receive buffers per channel); an assumption, documented in docs/memory.md.
inline constexpr double kCommBufferPerCommunicator = 32.0 * 1024 * 1024;

MemoryPlan PlanMemory(const Experiment& experiment, const Placement& placement);

// Requests served by `rank`: the batch split over dp·ep replicas, the first
// (batch mod replicas) replicas taking one more.
int64_t RequestsOfRank(const Experiment& experiment, const Placement& placement, int64_t rank);

}  // namespace shardscope

#endif  // SHARDSCOPE_PLAN_MEMORY_H_
