// Program: for one phase (prefill, or decode step k), the ordered ops of every
// rank. One Program feeds the simulator and the real executors alike.
#ifndef SHARDSCOPE_PROGRAM_PROGRAM_H_
#define SHARDSCOPE_PROGRAM_PROGRAM_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "program/op.h"

namespace shardscope {

struct RankProgram {
  int64_t rank = 0;
  std::vector<Op> ops;
  std::vector<int32_t> deps;  // every op's deps, each op's a block (Op::deps_begin)
};

// The ops `op` (one of rp.ops) waits for beyond its stream's order.
inline std::span<const int32_t> DepsOf(const RankProgram& rp, const Op& op) {
  return {rp.deps.data() + op.deps_begin, static_cast<size_t>(op.deps_count)};
}

// Sets rp.ops[i]'s deps to `deps`, appended to rp.deps (tests and hand-made programs;
// the builder appends each op's as it builds it).
inline void SetDeps(RankProgram& rp, size_t i, std::initializer_list<int32_t> deps) {
  Op& op = rp.ops[i];
  op.deps_begin = static_cast<int32_t>(rp.deps.size());
  op.deps_count = static_cast<int32_t>(deps.size());
  rp.deps.insert(rp.deps.end(), deps.begin(), deps.end());
}

struct PhaseProgram {
  Phase phase = Phase::kPrefill;
  int64_t step = 0;           // decode step (0-based); 0 for prefill
  int64_t context_len = 0;    // tokens already in the KV cache before this phase
  int64_t new_tokens = 0;     // tokens per request processed in this phase
  int64_t micro_batches = 1;  // pipeline micro-batches each replica's requests form
  std::vector<RankProgram> ranks;
};

// Totals over one rank's ops.
struct OpTotals {
  int64_t compute_ops = 0;
  int64_t comm_ops = 0;
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t weight_bytes = 0;
  int64_t comm_bytes[kNumDims] = {};  // message bytes by dimension
};

// Totals over one rank's ops (comm ops count in comm_ops and comm_bytes only).
OpTotals Totals(const RankProgram& program);

// FLOPs of the phase with redundant work counted once: Σ over ranks and compute
// ops of flops / replication (the single-device total of the same work).
double UniqueFlops(const PhaseProgram& program);

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_PROGRAM_H_
