// CollectiveSweep: one collective timed on its own over a range of sizes, as
// nccl-tests runs it (one call at a time on an idle network, every member
// starting together), with nccl-tests' columns: size (bytes, the test's -b/-e
// size: the whole buffer for all-gather / reduce-scatter, each rank's send
// buffer for all-to-all), count (elements of the type), time, algbw = size /
// time and busbw = algbw × the collective's bus factor (all-reduce 2(n−1)/n;
// all-gather, reduce-scatter, all-to-all (n−1)/n; send/recv and broadcast 1).
// Each row names the algorithm and protocol chosen and the link that bounds
// it. `shardscope collective` prints it; docs/sim.md "Collectives".
#ifndef SHARDSCOPE_SIM_COLLECTIVE_SWEEP_H_
#define SHARDSCOPE_SIM_COLLECTIVE_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/collective.h"
#include "core/status.h"
#include "sim/collectives.h"
#include "sim/topology.h"

namespace shardscope::sim {

struct SweepOptions {
  Collective collective = Collective::kAllReduce;
  int64_t ranks = 0;         // members: devices 0..ranks−1 (node-major); 0: every device
  int64_t min_bytes = 8;     // -b
  int64_t max_bytes = 8;     // -e
  double factor = 2;         // -f: sizes grow by this factor
  int64_t element_size = 4;  // bytes of the type (nccl-tests' default float)
  Algorithm algorithm = Algorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
};

struct SweepRow {
  int64_t bytes = 0;
  int64_t count = 0;
  double seconds = 0;
  double algbw = 0;  // bytes/s
  double busbw = 0;  // bytes/s
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  std::string bottleneck;  // "nvlink", "nic" or "latency"
};

// Parses nccl-tests-style sizes "8", "64K", "8G" (binary: K = 1024).
StatusOr<int64_t> ParseByteSize(std::string_view text);

// Times each size. Errors name the option (ranks out of range, sizes, a
// collective without a sweep).
StatusOr<std::vector<SweepRow>> SweepCollective(const Topology& topology, int64_t devices,
                                                const SweepOptions& options);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COLLECTIVE_SWEEP_H_
