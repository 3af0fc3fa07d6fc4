// ExchangeFit: the MoE exchange kernels' terms (cluster/comm_tuning.h
// ExchangeKernelCost, as sim/moe_exchange.h uses them) fitted from DeepEP's
// test logs (deepep_log.h). A figure's time t (printed, or DeepEP's counted
// bytes over its GB/s) and the bytes the model puts on the bottleneck link
// for it (DeepEP's counted bytes × the remote share: normal RDMA (m−1)/m of
// the per-node bytes over m nodes, normal NVLink (k−1)/k of the per-GPU
// bytes in a domain of k; low-latency (n−k)/n of the selections over RDMA,
// (k−1)/n over NVLink) give t = latency + wire / (efficiency × link).
//  - normal: one token count per run, so the latency stays the cluster's and
//    each figure gives an efficiency; the median over internode figures is
//    scale_out_efficiency, over intranode ones scale_up_efficiency.
//  - low-latency: its EP sizes and directions (dispatch FP8, combine BF16)
//    give several (wire, t) points: the latency and efficiency by
//    FitLinkRobust (relative errors) over the multi-node points (RDMA), the
//    NVLink efficiency from the single-node points at that latency.
// Efficiencies above 1 are capped (noted). Pure functions.
#ifndef SHARDSCOPE_CALIBRATE_EXCHANGE_FIT_H_
#define SHARDSCOPE_CALIBRATE_EXCHANGE_FIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/deepep_log.h"
#include "cluster/cluster.h"
#include "core/status.h"
#include "sim/calibration.h"

namespace shardscope::calibrate {

struct ExchangePoint {
  std::string file;
  int line = 0;
  bool dispatch = true;
  int64_t ranks = 0;
  bool rdma = false;   // the RDMA figure (multi-node); else NVLink
  double seconds = 0;  // measured (or estimated: see time_estimated)
  bool time_estimated = false;
  double bandwidth = 0;      // DeepEP's figure, bytes/s
  double wire_bytes = 0;     // on the bottleneck link per rank
  double model_seconds = 0;  // the fitted model's time
};

struct ExchangeFit {
  bool fitted = false;
  std::string why_not;  // when not fitted
  std::string note;
  ExchangeKernelCost prior;      // the cluster's
  sim::ExchangeOverride result;  // the fitted fields only
  std::vector<ExchangePoint> points;
};

struct DeepEpFit {
  ExchangeFit normal, low_latency;
};

// `cluster`: the network as the simulator sees it (sim::NetworkCluster of the
// calibration so far). `ranks`: the EP size of logs that do not print it
// (the normal kernels' tests, a low-latency log of one rank's lines); 0: none
// given (an error for such a log).
StatusOr<DeepEpFit> FitDeepEp(const std::vector<DeepEpLog>& logs, const ClusterSpec& cluster,
                              int64_t ranks);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_EXCHANGE_FIT_H_
