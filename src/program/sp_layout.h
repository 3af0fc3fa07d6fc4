// SpLayout: which prompt positions each rank of a sequence-parallel (ring
// attention) group holds, and how many causal (query, key) pairs one rank's
// queries form with another rank's keys. Pure value type; thread-safe.
//
//   zigzag: 2·sp chunks of S/(2·sp) tokens; rank r holds chunks r and 2·sp−1−r.
//   ring:   sp contiguous chunks of S/sp tokens; rank r holds chunk r.
//   stripe: token t sits on rank t mod sp.
#ifndef SHARDSCOPE_PROGRAM_SP_LAYOUT_H_
#define SHARDSCOPE_PROGRAM_SP_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope {

class SpLayout {
 public:
  // Fails unless the prompt splits evenly (S divisible by 2·sp for zigzag, sp otherwise).
  static StatusOr<SpLayout> Create(SpVariant variant, int64_t seq_len, int64_t sp);

  SpVariant variant() const { return variant_; }
  int64_t seq_len() const { return seq_len_; }
  int64_t sp() const { return sp_; }
  // Tokens of one request on each rank: S / sp.
  int64_t LocalTokens() const { return seq_len_ / sp_; }
  // The rank holding prompt position `pos`.
  int64_t OwnerOf(int64_t pos) const;
  // Pairs (i, j), i a position on q_rank, j a position on k_rank, with j ≤ i:
  // the unmasked score entries of q_rank's queries against k_rank's keys (per head,
  // per request). Summed over all rank pairs this is S(S+1)/2.
  int64_t CausalPairs(int64_t q_rank, int64_t k_rank) const;

 private:
  struct Interval {
    int64_t begin = 0, size = 0;
  };
  // Contiguous position intervals of a rank (zigzag, ring).
  std::vector<Interval> IntervalsOf(int64_t rank) const;

  SpVariant variant_ = SpVariant::kZigzag;
  int64_t seq_len_ = 1;
  int64_t sp_ = 1;
};

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_SP_LAYOUT_H_
