// ShardGeometry: which heads, KV heads, experts, vocabulary rows and FFN
// columns each rank of a plan holds. The one home of these rules: the program
// builder, the memory plan, the weights and the executor all ask it.
//   - Query heads split evenly over tp (ValidatePlan checks tp divides them).
//   - GQA KV heads split over tp when tp ≤ kv_heads; when tp > kv_heads each
//     rank holds the one KV head its query heads use, replicated over
//     tp / kv_heads ranks. MLA's latent cache is not split (replicated over tp).
//   - Vocabulary rows and FFN columns split floor/ceil (SplitRange).
//   - Routed experts: contiguous blocks of E / ep per EP coordinate unless the
//     plan places them explicitly (Placement::ExpertsOfEpRank is the truth).
// Value type; thread-compatible.
#ifndef SHARDSCOPE_PLAN_SHARD_GEOMETRY_H_
#define SHARDSCOPE_PLAN_SHARD_GEOMETRY_H_

#include <cstdint>

#include "model/model.h"

namespace shardscope {

// A contiguous [begin, begin + count) slice of one dimension.
struct Range {
  int64_t begin = 0, count = 0;
  int64_t end() const { return begin + count; }
  bool operator==(const Range&) const = default;
};

// Items of `n` that part `i` of `parts` holds: n / parts, the first n mod parts
// parts one more.
int64_t SplitCount(int64_t n, int64_t parts, int64_t i);
// The slice of `n` items that part `i` of `parts` holds (SplitCount's sizes, in order).
Range SplitRange(int64_t n, int64_t parts, int64_t i);

class ShardGeometry {
 public:
  // `tp` and `ep` are the plan's tensor- and expert-parallel sizes (≥ 1).
  ShardGeometry(const ModelSpec& model, int64_t tp, int64_t ep);

  int64_t tp() const { return tp_; }
  int64_t ep() const { return ep_; }

  // Query heads per TP rank, and those of TP coordinate `c`.
  int64_t q_heads() const { return q_heads_; }
  Range QHeads(int64_t c) const { return {c * q_heads_, q_heads_}; }

  // GQA: KV heads per TP rank (≥ 1) and how many TP ranks hold each of them
  // (1 unless tp > kv_heads). MLA: 1 latent "head", replicated over tp.
  int64_t kv_heads() const { return kv_heads_; }
  int64_t kv_replication() const { return kv_replication_; }
  // The global KV heads of TP coordinate `c` (GQA; MLA: {0, 1}).
  Range KvHeads(int64_t c) const;

  // Vocabulary rows (embedding) / columns (LM head) of TP coordinate `c`.
  Range Vocab(int64_t c) const { return SplitRange(vocab_, tp_, c); }
  // Columns of an FFN of intermediate width `inter` held by TP coordinate `c`.
  Range Intermediate(int64_t inter, int64_t c) const { return SplitRange(inter, tp_, c); }

  // Routed experts of EP coordinate `c` under the default contiguous placement
  // (ep divides the expert count; ValidatePlan checks).
  Range Experts(int64_t c) const { return {c * experts_per_rank_, experts_per_rank_}; }
  int64_t experts_per_rank() const { return experts_per_rank_; }

 private:
  int64_t tp_ = 1, ep_ = 1;
  bool mla_ = false;
  int64_t num_heads_ = 0, num_kv_heads_ = 0, vocab_ = 0;
  int64_t q_heads_ = 0, kv_heads_ = 1, kv_replication_ = 1;
  int64_t experts_per_rank_ = 0;
};

}  // namespace shardscope

#endif  // SHARDSCOPE_PLAN_SHARD_GEOMETRY_H_
