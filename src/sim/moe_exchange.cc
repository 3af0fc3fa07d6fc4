#include "sim/moe_exchange.h"

#include <algorithm>
#include <cmath>

namespace shardscope::sim {
namespace {

// C(n − x, k) / C(n, k): the chance that k of n items drawn without
// replacement miss x given ones.
double MissAll(int64_t n, int64_t x, int64_t k) {
  if (n - x < k) return 0;
  double p = 1;
  for (int64_t i = 0; i < k; ++i) {
    p *= static_cast<double>(n - x - i) / static_cast<double>(n - i);
  }
  return p;
}

double Choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  return std::exp(std::lgamma(static_cast<double>(n + 1)) -
                  std::lgamma(static_cast<double>(k + 1)) -
                  std::lgamma(static_cast<double>(n - k + 1)));
}

}  // namespace

double ExpectedBinsReached(int64_t experts, int64_t bins, int64_t topk, int64_t groups,
                           int64_t group_limit) {
  const int64_t per_bin = experts / bins;
  const bool limited = groups > 0 && group_limit > 0 && group_limit < groups &&
                       experts % groups == 0 && (groups % bins == 0 || bins % groups == 0);
  double miss = MissAll(experts, per_bin, topk);
  if (limited) {
    const int64_t per_group = experts / groups;
    const int64_t pool = group_limit * per_group;  // experts a token chooses among
    if (groups % bins == 0) {
      // Each bin holds whole groups: j of its groups are chosen (hypergeometric).
      const int64_t own = groups / bins;
      miss = 0;
      for (int64_t j = 0; j <= std::min(own, group_limit); ++j) {
        const double pj =
            Choose(own, j) * Choose(groups - own, group_limit - j) / Choose(groups, group_limit);
        miss += pj * MissAll(pool, j * per_group, topk);
      }
    } else {
      // Each group spans bins / groups bins: the bin's group must be chosen.
      const double chosen = static_cast<double>(group_limit) / static_cast<double>(groups);
      miss = (1 - chosen) + chosen * MissAll(pool, per_bin, topk);
    }
  }
  return static_cast<double>(bins) * (1 - miss);
}

StatusOr<ExchangeResult> SimulateExchange(const ClusterSpec& cluster, const ExchangeOptions& o) {
  const int64_t devices = cluster.num_devices();
  const int64_t n = o.ranks == 0 ? devices : o.ranks;
  if (n < 2 || n > devices) {
    return InvalidArgument("--ranks must be in [2, {}] (the cluster's devices), got {}", devices,
                           n);
  }
  if (o.tokens < 1 || o.hidden < 1 || o.topk < 1) {
    return InvalidArgument("--tokens, --hidden and --topk must be at least 1");
  }
  if (o.experts < o.topk || o.experts % n != 0) {
    return InvalidArgument(
        "--experts ({}) must be at least --topk ({}) and a multiple of the ranks ({})", o.experts,
        o.topk, n);
  }
  const bool switched = cluster.scale_up.kind == ScaleUpKind::kSwitched;
  const int64_t k = switched ? std::min(cluster.scale_up.domain_size, n) : 1;
  if (n % k != 0) {
    return InvalidArgument("--ranks ({}) must fill whole scale-up domains of {}", n, k);
  }
  const int64_t m = n / k;  // nodes
  // Groups default to the nodes, as DeepEP's tests route (a group per node).
  const int64_t groups = o.groups == 0 && o.group_limit > 0 ? m : o.groups;
  if (o.group_limit > 0 && o.experts % groups != 0) {
    return InvalidArgument("--groups ({}) must divide --experts ({})", groups, o.experts);
  }
  const CommTuning& tuning = cluster.collectives;
  const double token_bytes =
      o.token_bytes > 0 ? o.token_bytes
      : o.dispatch      ? static_cast<double>(o.hidden) + static_cast<double>(o.hidden) / 128 * 4
                        : 2.0 * static_cast<double>(o.hidden);
  const double tokens = static_cast<double>(o.tokens);

  ExchangeResult r;
  r.nodes_per_token = ExpectedBinsReached(o.experts, m, o.topk, groups, o.group_limit);
  r.gpus_per_token = ExpectedBinsReached(o.experts, n, o.topk, groups, o.group_limit);
  const double remote = static_cast<double>(m - 1) / static_cast<double>(m);
  const double local = static_cast<double>(k - 1) / static_cast<double>(k);
  const ExchangeKernelCost* kernel = nullptr;
  double counted_rdma = 0, counted_nvlink = 0;
  if (o.kernel == ExchangeKernel::kNormal) {
    // One RDMA copy per remote node reached, then NVLink to the node's other
    // GPUs reached (by symmetry every rank sends what it receives).
    r.rdma_bytes = tokens * r.nodes_per_token * remote * token_bytes;
    r.nvlink_bytes = tokens * r.gpus_per_token * local * token_bytes;
    counted_rdma = tokens * r.nodes_per_token * token_bytes;
    counted_nvlink = tokens * r.gpus_per_token * token_bytes;
    kernel = &tuning.normal;
  } else {
    // Every selection straight to its expert's GPU.
    const double selections = tokens * static_cast<double>(o.topk);
    const double off_node = static_cast<double>(n - k) / static_cast<double>(n);
    const double on_node = static_cast<double>(k - 1) / static_cast<double>(n);
    r.rdma_bytes = selections * off_node * token_bytes;
    r.nvlink_bytes = selections * on_node * token_bytes;
    counted_rdma = counted_nvlink = selections * token_bytes;
    kernel = &tuning.low_latency;
  }
  const double nic = cluster.scale_out.nic_bandwidth_per_device * kernel->scale_out_efficiency;
  const double nvl = cluster.scale_up.bandwidth_per_device * kernel->scale_up_efficiency;
  r.rdma_seconds = r.rdma_bytes > 0 ? (nic > 0 ? r.rdma_bytes / nic : HUGE_VAL) : 0;
  r.nvlink_seconds = r.nvlink_bytes > 0 ? (nvl > 0 ? r.nvlink_bytes / nvl : HUGE_VAL) : 0;
  if (!std::isfinite(r.rdma_seconds) || !std::isfinite(r.nvlink_seconds)) {
    return InvalidArgument("cluster '{}' has no bandwidth for the exchange's links", cluster.name);
  }
  r.rdma_bound = r.rdma_seconds > r.nvlink_seconds;
  r.seconds = kernel->latency + std::max(r.rdma_seconds, r.nvlink_seconds);
  r.rdma_bandwidth = m > 1 ? counted_rdma / r.seconds : 0;
  r.nvlink_bandwidth = counted_nvlink / r.seconds;
  return r;
}

}  // namespace shardscope::sim
