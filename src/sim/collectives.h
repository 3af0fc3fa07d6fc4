// Collective decomposition: how a collective (or a send/recv) moves bytes over
// the topology, as a sequence of stages. Each stage is one network transfer
// (per-link byte loads, see network.h) started after a latency; the next stage
// starts when it ends.
//   ring          all-reduce 2(n−1)/n·S per ring link, 2(n−1) steps of latency;
//                 all-gather / reduce-scatter (n−1)/n·S, n−1 steps;
//                 broadcast: a pipelined chain from the root, S per link, n−1 steps.
//   tree          all-reduce over a binary tree: reduce up, broadcast down,
//                 pipelined; S per tree edge each way, 2·depth steps.
//   hierarchical  all-reduce across scale-up domains with k > 1 members each:
//                 reduce-scatter in each domain, k parallel rings of S/k across
//                 domains (one per rail), all-gather in each domain.
//   direct        all-to-all(v): every pair's real bytes on its path, as one
//                 coflow; send/recv: the message on its path.
// The automatic choice is NCCL's rule: the algorithm whose uncontended time
// (its closed form) is smallest. Pure functions; thread-safe.
#ifndef SHARDSCOPE_SIM_COLLECTIVES_H_
#define SHARDSCOPE_SIM_COLLECTIVES_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "program/op.h"
#include "sim/network.h"
#include "sim/topology.h"

namespace shardscope::sim {

enum class Algorithm { kAuto, kRing, kTree, kHierarchical, kDirect };
std::string_view AlgorithmName(Algorithm a);  // "auto", "ring", …
StatusOr<Algorithm> ParseAlgorithm(std::string_view name);

struct Stage {
  std::vector<LinkLoad> loads;  // bytes per link (a link may repeat; merged later)
  double latency = 0;           // seconds before the bytes start to move
};

struct CollectivePlan {
  Algorithm algorithm = Algorithm::kRing;
  std::vector<Stage> stages;
};

struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  std::vector<int64_t> devices;  // the group's devices in ring order (send/recv: {src, dst})
  int64_t bytes = 0;             // nccl-tests message size (op.h)
  int64_t root = 0;              // broadcast: position of the root in `devices`
  // All-to-all: per_peer[i][j] = bytes member i sends member j.
  std::vector<std::vector<int64_t>> per_peer;
  // All-to-all, instead of per_peer when non-empty: row i's non-zero entries
  // (by position), borrowed (the ops' own peer_sends), which must outlive the
  // Decompose call. A decode step's rows have a few non-zeros of n.
  std::vector<std::span<const PeerBytes>> sparse_rows;
};

// Decomposes `call`. `forced` kAuto picks by the closed forms; a forced
// algorithm the collective does not have (tree all-gather, …) is an
// Unimplemented error naming both.
StatusOr<CollectivePlan> Decompose(const Topology& topology, const CollectiveCall& call,
                                   Algorithm forced = Algorithm::kAuto);

// Seconds the plan takes on an idle network: Σ over stages of latency +
// max over links of load / capacity.
double UncontendedSeconds(const Topology& topology, const CollectivePlan& plan);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COLLECTIVES_H_
