// CommTuning: how a cluster's collective library turns link bandwidth into
// collective time — NCCL's cost terms per protocol (per-call base latency,
// per-step latency and bandwidth efficiency per link kind), NVLink SHARP
// (NVLS) on NVSwitch systems, and the fixed per-call costs of the MoE exchange
// kernels. The `collectives:` block of a hardware YAML; docs/sim.md
// "Collectives" has the formulas, docs/hardware.md the sources. Without the
// block (`modelled` false) the links are ideal: no per-call cost, full
// bandwidth, one protocol — the model CPU hosts and TPU slices use.
// Plain value type; SI units (seconds, fractions).
#ifndef SHARDSCOPE_CLUSTER_COMM_TUNING_H_
#define SHARDSCOPE_CLUSTER_COMM_TUNING_H_

#include <string_view>

#include "core/status.h"

namespace shardscope {

// A collective's algorithm (sim/collectives.h has what each does). kAuto:
// the model chooses, as NCCL's tuner; kDirect: every pair's bytes on its
// path (NCCL's pairwise all-to-all, send/recv); kHierarchical all-to-all and
// kLowLatency are the MoE exchange kernels (AllToAllKind).
enum class Algorithm { kAuto, kRing, kTree, kHierarchical, kDirect, kNvls, kNvlsTree, kLowLatency };
std::string_view AlgorithmName(Algorithm a);  // "auto", "ring", …, "nvls_tree", "low_latency"
StatusOr<Algorithm> ParseAlgorithm(std::string_view name);

// kAuto or one of NCCL's protocols.
enum class Protocol { kAuto, kLL, kLL128, kSimple };
std::string_view ProtocolName(Protocol p);  // "auto", "ll", "ll128", "simple"
StatusOr<Protocol> ParseProtocol(std::string_view name);

// How an expert-parallel all-to-all runs: NCCL's pairwise exchange, the
// hierarchical deduplicated kernels (DeepEP "normal", for prefill) or the
// low-latency ones (decode). kAuto: hierarchical for prefill and low-latency
// for decode on a tuned cluster (a GPU cluster with `collectives:`), NCCL's
// pairwise exchange elsewhere.
enum class AllToAllKind { kAuto, kNccl, kHierarchical, kLowLatency };
std::string_view AllToAllKindName(AllToAllKind k);  // "auto", "nccl", "hierarchical", "low_latency"
StatusOr<AllToAllKind> ParseAllToAllKind(std::string_view name);

// NCCL's wire protocols: LL (8-byte stores, half of them flags), LL128
// (128-byte lines, 8 bytes of flag) and Simple (bulk copies with fences).
enum class CommProtocol { kLL, kLL128, kSimple };
inline constexpr int kNumCommProtocols = 3;
std::string_view CommProtocolName(CommProtocol p);  // "ll", "ll128", "simple"

// One protocol's terms.
struct ProtocolCost {
  double ring_base_latency = 0;     // seconds per call, ring algorithm
  double tree_base_latency = 0;     // seconds per call, tree algorithm
  double scale_up_step = 0;         // seconds per algorithm step over the scale-up domain
  double scale_out_step = 0;        // seconds per algorithm step over the network
  double scale_up_efficiency = 1;   // fraction of a scale-up link's bandwidth delivered
  double scale_out_efficiency = 1;  // fraction of a NIC's bandwidth delivered
};

// One MoE exchange kernel's terms: seconds per call (cast, packing,
// signalling), the fraction of each link kind's bandwidth it delivers, and the
// fraction of the device's SMs its kernels hold while resident (from launch to
// end, busy-waiting included), which compute overlapped with them loses
// (docs/sim.md "SM contention"); 0: none.
struct ExchangeKernelCost {
  double latency = 0;
  double scale_up_efficiency = 1;
  double scale_out_efficiency = 1;
  double sm_share = 0;
};

struct CommTuning {
  bool modelled = false;  // the block was given
  ProtocolCost protocols[kNumCommProtocols];
  // NVLink SHARP: the switch reduces and multicasts (all-reduce, all-gather,
  // reduce-scatter inside a domain; with a tree across domains, all-reduce).
  // Simple protocol only.
  bool nvls = false;
  double nvls_base_latency = 0;  // seconds per call
  double nvls_efficiency = 1;    // fraction of the scale-up bandwidth per direction
  double nvls_tree_step = 0;     // seconds per tree level across domains (NVLS-tree)
  // Point-to-point (send/recv and NCCL's pairwise all-to-all): seconds per call.
  double p2p_latency = 0;
  // Algorithms pipelined across link kinds (tree and NVLS-tree across
  // domains): bytes per link of the less loaded kind that move before the
  // pipeline streams at its bottleneck (its fill); 0: perfect overlap.
  double pipeline_fill_bytes = 0;
  // MoE exchange kernels (DeepEP-like, docs/sim.md "All-to-all kinds").
  ExchangeKernelCost normal;       // hierarchical (prefill)
  ExchangeKernelCost low_latency;  // direct, fixed cost per call (decode)

  const ProtocolCost& Of(CommProtocol p) const { return protocols[static_cast<int>(p)]; }
};

}  // namespace shardscope

#endif  // SHARDSCOPE_CLUSTER_COMM_TUNING_H_
