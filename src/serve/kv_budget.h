// KvBudget: how many KV-cache blocks one replica's scheduler may hand out —
// the device memory the server may use (gpu_memory_utilization) less the
// weights, the activation peak of a full iteration (max_num_batched_tokens;
// under expert parallelism each rank's share of it) and the communication buffers of the memory
// plan (plan/memory.h), divided by the KV bytes a block of tokens takes on the fullest rank
// (scheduler.memory_rule: TensorRT-LLM's share of what is free instead; SGLang's static share
// less the weights alone, activations and buffers in the rest). Pure function.
#ifndef SHARDSCOPE_SERVE_KV_BUDGET_H_
#define SHARDSCOPE_SERVE_KV_BUDGET_H_

#include <cstdint>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope::serve {

struct KvBudget {
  int64_t blocks = 0;           // per replica
  int64_t block_size = 16;      // tokens per block
  double bytes_per_token = 0;   // KV bytes one token of a request takes on its fullest rank
  double free_bytes = 0;        // the KV pool's bytes on the rank with the least room
  double activation_bytes = 0;  // the activation peak reserved on that rank
  bool from_config = false;     // scheduler.kv_blocks set the count
  int64_t tokens() const { return blocks * block_size; }
};

// Fails when the weights and activations leave no room for one block on some
// rank, or (static share) the activations and buffers do not fit outside the
// share; the message names the rank and the figures. `experiment.serving` must be set.
StatusOr<KvBudget> PlanKvBudget(const Experiment& experiment);

// KV-cache bytes of one token of one request over the whole model (every
// layer; MLA's latent cache, or K and V of every KV head), in the KV dtype, and
// of the draft model's with a draft model: what a disaggregated deployment
// sends from prefill to decode per token.
double ModelKvBytesPerToken(const Experiment& experiment);

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_KV_BUDGET_H_
