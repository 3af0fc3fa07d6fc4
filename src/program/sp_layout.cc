#include "program/sp_layout.h"

#include <algorithm>

namespace shardscope {
namespace {

// Σ over queries i in [0, x) of the keys j in [b, b+m) with j ≤ i.
int64_t PrefixPairs(int64_t x, int64_t b, int64_t m) {
  const int64_t u = std::clamp<int64_t>(x - b, 0, m);  // queries inside the key range
  int64_t pairs = u * (u + 1) / 2;
  if (x > b + m) pairs += (x - b - m) * m;  // queries past it see all m keys
  return pairs;
}

// Causal pairs of queries [a, a+n) against keys [b, b+m).
int64_t IntervalPairs(int64_t a, int64_t n, int64_t b, int64_t m) {
  return PrefixPairs(a + n, b, m) - PrefixPairs(a, b, m);
}

}  // namespace

StatusOr<SpLayout> SpLayout::Create(SpVariant variant, int64_t seq_len, int64_t sp) {
  if (sp < 1 || seq_len < 1) {
    return InvalidArgument("sequence parallelism needs sp ≥ 1 and a prompt ≥ 1 (got sp {}, {})", sp,
                           seq_len);
  }
  const int64_t chunks = variant == SpVariant::kZigzag ? 2 * sp : sp;
  if (sp > 1 && seq_len % chunks != 0) {
    return InvalidArgument(
        "{} ring attention over sp = {} needs the prompt of {} tokens to split "
        "into {} equal chunks",
        SpVariantName(variant), sp, seq_len, chunks);
  }
  SpLayout layout;
  layout.variant_ = sp == 1 ? SpVariant::kRing : variant;
  layout.seq_len_ = seq_len;
  layout.sp_ = sp;
  return layout;
}

std::vector<SpLayout::Interval> SpLayout::IntervalsOf(int64_t rank) const {
  if (variant_ == SpVariant::kZigzag) {
    const int64_t c = seq_len_ / (2 * sp_);
    return {{rank * c, c}, {(2 * sp_ - 1 - rank) * c, c}};
  }
  const int64_t c = seq_len_ / sp_;
  return {{rank * c, c}};
}

int64_t SpLayout::OwnerOf(int64_t pos) const {
  switch (variant_) {
    case SpVariant::kStripe:
      return pos % sp_;
    case SpVariant::kRing:
      return pos / (seq_len_ / sp_);
    case SpVariant::kZigzag: {
      const int64_t chunk = pos / (seq_len_ / (2 * sp_));
      return chunk < sp_ ? chunk : 2 * sp_ - 1 - chunk;
    }
  }
  return 0;
}

int64_t SpLayout::CausalPairs(int64_t q_rank, int64_t k_rank) const {
  if (variant_ == SpVariant::kStripe) {
    // Query q_rank + sp·u sees keys k_rank + sp·v for v ≤ u (k ≤ q) or v < u (k > q).
    const int64_t n = seq_len_ / sp_;
    return k_rank <= q_rank ? n * (n + 1) / 2 : n * (n - 1) / 2;
  }
  int64_t pairs = 0;
  for (const Interval& q : IntervalsOf(q_rank)) {
    for (const Interval& k : IntervalsOf(k_rank)) {
      pairs += IntervalPairs(q.begin, q.size, k.begin, k.size);
    }
  }
  return pairs;
}

}  // namespace shardscope
