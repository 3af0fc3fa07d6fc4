#include "plan/shard_geometry.h"

namespace shardscope {

int64_t SplitCount(int64_t n, int64_t parts, int64_t i) {
  return n / parts + (i < n % parts ? 1 : 0);
}

Range SplitRange(int64_t n, int64_t parts, int64_t i) {
  const int64_t base = n / parts, extra = n % parts;
  return {i * base + (i < extra ? i : extra), SplitCount(n, parts, i)};
}

ShardGeometry::ShardGeometry(const ModelSpec& m, int64_t tp, int64_t ep)
    : tp_(tp),
      ep_(ep),
      mla_(m.attention == AttentionKind::kMla),
      num_heads_(m.num_heads),
      num_kv_heads_(m.num_kv_heads),
      vocab_(m.vocab_size) {
  q_heads_ = m.num_heads / tp;
  if (mla_) {
    kv_heads_ = 1;
    kv_replication_ = tp;
  } else if (tp > m.num_kv_heads) {
    kv_heads_ = 1;
    kv_replication_ = m.num_kv_heads > 0 ? tp / m.num_kv_heads : tp;
  } else {
    kv_heads_ = m.num_kv_heads / tp;
    kv_replication_ = 1;
  }
  experts_per_rank_ = m.is_moe() ? m.moe.num_routed_experts / ep : 0;
}

Range ShardGeometry::KvHeads(int64_t c) const {
  if (mla_) return {0, 1};
  if (tp_ > num_kv_heads_) {
    // The KV head that this rank's query heads (group of num_heads / kv_heads) read.
    return {c * q_heads_ / (num_heads_ / num_kv_heads_), 1};
  }
  return {c * kv_heads_, kv_heads_};
}

}  // namespace shardscope
