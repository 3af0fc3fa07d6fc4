#include "serve/kv_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/units.h"
#include "plan/memory.h"
#include "plan/placement.h"

namespace shardscope::serve {

StatusOr<KvBudget> PlanKvBudget(const Experiment& experiment) {
  const SchedulerSpec& sched = experiment.serving->scheduler;
  const ParallelSpec& p = experiment.parallel;
  // One request per (dp, ep) replica holding the tokens a rank prefills in a
  // full iteration (rounded up to whole ring-attention chunks), one
  // micro-batch: its memory plan gives the weights, the activation peak and
  // the KV bytes per token. Under expert parallelism attention is
  // data-parallel: the replica's budget of max_num_batched_tokens is spent
  // over its ep ranks, each holding ⌈budget / ep⌉ tokens (SGLang divides its
  // chunked_prefill_size by the DP-attention size the same way), and an MoE
  // layer receives the k copies of each token routed to its experts: with
  // balanced routing k × budget / ep, which is k per local token (plan/memory.cc).
  Experiment probe = experiment;
  const int64_t chunks = p.sp > 1 ? 2 * p.sp : 1;
  const int64_t rank_tokens = (sched.max_num_batched_tokens + p.ep - 1) / p.ep;
  probe.workload.batch_size = p.dp * p.ep;
  probe.workload.sequence_length = (rank_tokens + chunks - 1) / chunks * chunks;
  probe.workload.tokens_to_generate = 1;
  probe.parallel.micro_batches = 1;
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(probe));
  const MemoryPlan plan = PlanMemory(probe, placement);
  KvBudget b;
  b.block_size = sched.block_size;
  double tokens = std::numeric_limits<double>::infinity();
  b.free_bytes = std::numeric_limits<double>::infinity();
  for (const RankMemory& r : plan.ranks) {
    // Bytes per request token on this rank (its share of the sequence and layers).
    const double per_token = r.kv_cache / static_cast<double>(probe.workload.sequence_length);
    // vLLM: a share of the capacity, less weights, activations and buffers.
    // TensorRT-LLM: a share of what they leave free. SGLang (static share,
    // model_runner.py profile_max_num_token): the share holds the weights and
    // the pool only; activations and buffers live in the capacity outside it.
    const double capacity_share = plan.capacity * sched.gpu_memory_utilization;
    const double rest = r.weights + r.activations + r.comm_buffers;
    double free = capacity_share - rest;
    switch (sched.memory_rule) {
      case KvMemoryRule::kShareOfCapacity:
        break;
      case KvMemoryRule::kShareOfFree:
        free = (plan.capacity - rest) * sched.gpu_memory_utilization;
        break;
      case KvMemoryRule::kStaticShare:
        free = capacity_share - r.weights;
        break;
    }
    b.bytes_per_token = std::max(b.bytes_per_token, per_token);
    if (free < b.free_bytes) b.activation_bytes = r.activations;
    b.free_bytes = std::min(b.free_bytes, free);
    if (per_token > 0) tokens = std::min(tokens, free / per_token);
    if (sched.kv_blocks > 0) continue;
    if (sched.memory_rule == KvMemoryRule::kStaticShare &&
        plan.capacity - capacity_share < r.activations + r.comm_buffers) {
      return InvalidArgument(
          "rank {} has no room for its activations: the {} of {} outside the static share {} "
          "hold less than {} of activations and {} of buffers",
          r.rank, FormatBytes(plan.capacity - capacity_share), FormatBytes(plan.capacity),
          sched.gpu_memory_utilization, FormatBytes(r.activations), FormatBytes(r.comm_buffers));
    }
    if (free < per_token * sched.block_size) {
      if (sched.memory_rule == KvMemoryRule::kShareOfFree) {
        return InvalidArgument(
            "rank {} has no room for the KV cache: {} of capacity hold {} of weights, {} of "
            "activations and {} of buffers",
            r.rank, FormatBytes(plan.capacity), FormatBytes(r.weights), FormatBytes(r.activations),
            FormatBytes(r.comm_buffers));
      }
      if (sched.memory_rule == KvMemoryRule::kStaticShare) {
        return InvalidArgument(
            "rank {} has no room for the KV cache: {} of {} × {} (weights and KV pool) hold {} "
            "of weights",
            r.rank, FormatBytes(capacity_share), FormatBytes(plan.capacity),
            sched.gpu_memory_utilization, FormatBytes(r.weights));
      }
      return InvalidArgument(
          "rank {} has no room for the KV cache: {} of {} × {} hold {} of weights, {} of "
          "activations and {} of buffers",
          r.rank, FormatBytes(capacity_share), FormatBytes(plan.capacity),
          sched.gpu_memory_utilization, FormatBytes(r.weights), FormatBytes(r.activations),
          FormatBytes(r.comm_buffers));
    }
  }
  if (sched.kv_blocks > 0) {
    b.blocks = sched.kv_blocks;
    b.from_config = true;
    return b;
  }
  // Each EP rank keeps the KV cache of its own requests (attention is data-parallel there).
  b.blocks = static_cast<int64_t>(std::floor(tokens / sched.block_size)) * p.ep;
  return b;
}

namespace {

double KvValuesPerToken(const ModelSpec& m) {
  const double values = m.attention == AttentionKind::kMla
                            ? static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim)
                            : 2.0 * static_cast<double>(m.num_kv_heads * m.head_dim);
  return static_cast<double>(m.num_layers) * values;
}

}  // namespace

double ModelKvBytesPerToken(const Experiment& e) {
  double values = KvValuesPerToken(e.model);
  if (e.speculative.draft()) values += KvValuesPerToken(e.speculative.draft_model);
  return values * static_cast<double>(DTypeSize(PrecisionOf(e).kv_cache));
}

}  // namespace shardscope::serve
