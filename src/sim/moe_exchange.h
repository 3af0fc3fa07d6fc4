// MoeExchange: the expert-parallel dispatch and combine as today's kernels
// run them (DeepEP's terms), in closed form for one call on an idle network.
//   normal       (hierarchical; prefill) each token crosses the network once
//                per remote node it needs (RDMA to the same-index GPU there),
//                then is forwarded over NVLink to the node's GPUs that hold its
//                experts; group-limited routing bounds the nodes per token.
//   low_latency  (decode) each (token, expert) pair goes straight to its
//                GPU, over RDMA or NVLink, after a fixed per-call cost (cast,
//                packing, signalling).
// Routing is uniform (as DeepEP's tests draw it): a token picks `group_limit`
// of `groups` expert groups, then `topk` experts among them; the expected
// numbers of nodes and GPUs a token reaches are exact for that draw. Time =
// the kernel's per-call latency + the slower of its NVLink and RDMA parts at
// the tuned efficiency (cluster/comm_tuning.h). docs/sim.md "All-to-all kinds".
#ifndef SHARDSCOPE_SIM_MOE_EXCHANGE_H_
#define SHARDSCOPE_SIM_MOE_EXCHANGE_H_

#include <cstdint>

#include "cluster/cluster.h"
#include "core/status.h"

namespace shardscope::sim {

enum class ExchangeKernel { kNormal, kLowLatency };

struct ExchangeOptions {
  bool dispatch = true;  // false: combine
  ExchangeKernel kernel = ExchangeKernel::kNormal;
  int64_t ranks = 0;      // EP ranks: devices 0..ranks−1; 0: every device
  int64_t tokens = 4096;  // tokens per rank
  int64_t hidden = 7168;
  int64_t topk = 8;
  int64_t experts = 256;    // routed experts, spread evenly over the ranks
  int64_t groups = 0;       // expert groups (DeepSeek n_group); 0: one per node
  int64_t group_limit = 0;  // groups a token may use (topk_group); 0: no limit
  // Bytes per token on the wire: dispatch FP8 with one fp32 scale per 128
  // values (DeepSeek's block scaling), combine BF16; 0 takes those.
  double token_bytes = 0;
};

struct ExchangeResult {
  double seconds = 0;
  double nodes_per_token = 0;  // expected nodes a token reaches (its own included)
  double gpus_per_token = 0;   // expected GPUs a token reaches (its own included)
  double rdma_bytes = 0;       // per rank, sent over its NIC
  double nvlink_bytes = 0;     // per rank, sent over NVLink
  double rdma_seconds = 0, nvlink_seconds = 0;
  // DeepEP's figures: bytes of every (token, destination) the kernel counts,
  // over the time (normal: per node for RDMA, per GPU for NVLink; low-latency:
  // per (token, expert) selection).
  double rdma_bandwidth = 0;    // bytes/s
  double nvlink_bandwidth = 0;  // bytes/s
  bool rdma_bound = false;
};

StatusOr<ExchangeResult> SimulateExchange(const ClusterSpec& cluster,
                                          const ExchangeOptions& options);

// Expected distinct bins a token reaches when it picks `topk` of `experts`
// uniformly, the experts split evenly into `bins` bins (nodes or GPUs), under
// the group limit (groups, group_limit; 0 = none). Exposed for tests.
double ExpectedBinsReached(int64_t experts, int64_t bins, int64_t topk, int64_t groups,
                           int64_t group_limit);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_MOE_EXCHANGE_H_
