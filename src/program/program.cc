#include "program/program.h"

namespace shardscope {

OpTotals Totals(const RankProgram& program) {
  OpTotals t;
  for (const Op& op : program.ops) {
    if (op.is_comm()) {
      ++t.comm_ops;
      t.comm_bytes[static_cast<int>(op.dim)] += op.bytes;
      continue;
    }
    ++t.compute_ops;
    t.flops += op.flops;
    t.bytes_read += op.bytes_read;
    t.bytes_written += op.bytes_written;
    t.weight_bytes += op.weight_bytes;
  }
  return t;
}

double UniqueFlops(const PhaseProgram& program) {
  long double sum = 0;
  for (const RankProgram& rp : program.ranks) {
    for (const Op& op : rp.ops) {
      if (!op.is_comm()) sum += static_cast<long double>(op.flops) / op.replication;
    }
  }
  return static_cast<double>(sum);
}

}  // namespace shardscope
