// Collective decomposition: how a collective (or a send/recv) moves bytes over
// the topology, as a sequence of stages. Each stage is one network transfer
// (per-link byte loads, see network.h) started after a latency; the next stage
// starts when it ends. Stages of one pipelined algorithm are one stage (its
// time is its most loaded link's).
//   ring          all-reduce 2(n−1)/n·S per ring link, 2(n−1) steps of latency;
//                 all-gather / reduce-scatter (n−1)/n·S, n−1 steps;
//                 broadcast: a pipelined chain from the root, S per link, n−1 steps.
//                 With a tuned cluster, a ring crossing domains runs one channel
//                 per rail: its cross-domain bytes spread over the domain's NICs.
//   tree          all-reduce: untuned, a binary tree over the members (S per edge
//                 each way, 2·depth steps); tuned, NCCL's tree: a chain in each
//                 domain and a double binary tree across domains, pipelined.
//   nvls          NVLink SHARP inside one NVSwitch domain: the switch reduces and
//                 multicasts; all-reduce S up and S down per member; all-gather
//                 S/n up, (n−1)/n·S down; reduce-scatter the reverse.
//   nvls_tree     all-reduce across domains: NVLS in each domain, a double binary
//                 tree across them (one per rail), pipelined.
//   hierarchical  all-reduce across scale-up domains with k > 1 members each:
//                 reduce-scatter in each domain, k parallel rings of S/k across
//                 domains (one per rail), all-gather in each domain.
//   direct        all-to-all(v): every pair's real bytes on its path, as one
//                 coflow; send/recv: the message on its path.
// A tuned cluster (ClusterSpec::collectives) adds NCCL's protocols: a per-call
// base latency, a per-step latency and a bandwidth efficiency per link kind
// for LL, LL128 and Simple (NVLS: Simple only). The automatic choice is NCCL's
// tuner rule: the (algorithm, protocol) whose uncontended time is smallest. A
// forced algorithm applies to the collectives that have it (as NCCL_ALGO);
// the others choose automatically. docs/sim.md "Collectives". Pure functions;
// thread-safe.
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

// The choices, defined with the cluster's tuning (cluster/comm_tuning.h).
using ::shardscope::Algorithm;
using ::shardscope::AlgorithmName;
using ::shardscope::AllToAllKind;
using ::shardscope::ParseAlgorithm;
using ::shardscope::ParseProtocol;
using ::shardscope::Protocol;
using ::shardscope::ProtocolName;

struct Stage {
  std::vector<LinkLoad> loads;  // bytes per link (a link may repeat; merged later)
  double latency = 0;           // seconds before the bytes start to move
};

struct CollectivePlan {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;  // untuned clusters: Simple at full bandwidth
  std::vector<Stage> stages;
};

struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  std::vector<int64_t> devices;  // the group's devices in ring order (send/recv: {src, dst})
  int64_t bytes = 0;             // nccl-tests message size (op.h)
  int64_t root = 0;              // broadcast: position of the root in `devices`
  // All-to-all: per_peer[i][j] = bytes member i sends member j.
  std::vector<std::vector<int64_t>> per_peer = {};
  // All-to-all: which kernels run it (a tuned cluster; AllToAllKind) and, for
  // the hierarchical kind, the (token, node) pairs per (token, expert) pair:
  // what deduplicating per node leaves of the bytes to a remote node.
  AllToAllKind all_to_all = AllToAllKind::kNccl;
  double node_ratio = 1;
  // All-to-all, instead of per_peer when non-empty: row i's non-zero entries
  // (by position), borrowed (the ops' own peer_sends), which must outlive the
  // Decompose call. A decode step's rows have a few non-zeros of n.
  std::vector<std::span<const PeerBytes>> sparse_rows = {};
};

// Decomposes `call`. `forced` kAuto picks by the closed forms; a forced
// algorithm the collective does not have (tree all-gather, …) or that the
// topology cannot run (NVLS without NVSwitch SHARP) leaves the choice to the
// rule. A forced protocol applies where the algorithm has it (NVLS: Simple).
StatusOr<CollectivePlan> Decompose(const Topology& topology, const CollectiveCall& call,
                                   Algorithm forced = Algorithm::kAuto,
                                   Protocol protocol = Protocol::kAuto);

// Whether `algorithm` can run `call` on `topology` (kAuto: always).
bool HasAlgorithm(const Topology& topology, const CollectiveCall& call, Algorithm algorithm);

// Seconds the plan takes on an idle network: Σ over stages of latency +
// max over links of load / capacity.
double UncontendedSeconds(const Topology& topology, const CollectivePlan& plan);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COLLECTIVES_H_
