#include "sim/sim_setup.h"

namespace shardscope::sim {

EngineOptions CommunicationOptions(const Experiment& experiment) {
  const CommunicationSpec& c = experiment.communication;
  EngineOptions o;
  o.allreduce = c.algorithm;
  o.protocol = c.protocol;
  o.prefill_all_to_all = ResolvedAllToAll(experiment, false);
  o.decode_all_to_all = ResolvedAllToAll(experiment, true);
  // The SMs the phase's exchange kernels hold (NCCL's pairwise kind: none modelled).
  const CommTuning& tuning = experiment.cluster.collectives;
  auto share = [&](AllToAllKind kind) {
    switch (kind) {
      case AllToAllKind::kHierarchical:
        return tuning.normal.sm_share;
      case AllToAllKind::kLowLatency:
        return tuning.low_latency.sm_share;
      default:
        return 0.0;
    }
  };
  o.prefill_sm_share = share(o.prefill_all_to_all);
  o.decode_sm_share = share(o.decode_all_to_all);
  const MoeSpec& moe = experiment.model.moe;
  o.routing = {moe.num_routed_experts, moe.experts_per_token,
               moe.topk_group < moe.n_group ? moe.n_group : 0,
               moe.topk_group < moe.n_group ? moe.topk_group : 0};
  return o;
}

ClusterSpec NetworkCluster(const ClusterSpec& cluster, const Calibration& calibration) {
  ClusterSpec network_cluster = cluster;
  network_cluster.scale_up.bandwidth_per_device *= calibration.network_efficiency;
  network_cluster.scale_up.link_bandwidth *= calibration.network_efficiency;
  network_cluster.scale_out.nic_bandwidth_per_device *= calibration.network_efficiency;
  // The measured exchange kernels' terms replace the hardware file's.
  const std::pair<const ExchangeOverride*, ExchangeKernelCost*> kernels[] = {
      {&calibration.exchange_normal, &network_cluster.collectives.normal},
      {&calibration.exchange_low_latency, &network_cluster.collectives.low_latency}};
  for (const auto& [measured, cost] : kernels) {
    if (measured->latency) cost->latency = *measured->latency;
    if (measured->scale_up_efficiency) cost->scale_up_efficiency = *measured->scale_up_efficiency;
    if (measured->scale_out_efficiency) {
      cost->scale_out_efficiency = *measured->scale_out_efficiency;
    }
  }
  return network_cluster;
}

Topology NetworkTopology(const ClusterSpec& cluster, const Calibration& calibration) {
  return Topology(NetworkCluster(cluster, calibration), calibration.terms.collectives);
}

StatusOr<std::unique_ptr<const SimSetup>> MakeSimSetup(const Experiment& experiment,
                                                       const std::string& calibration_file) {
  Calibration calibration = DefaultCalibration(experiment.cluster.device);
  if (!calibration_file.empty()) {
    ASSIGN_OR_RETURN(calibration, LoadCalibration(calibration_file, calibration));
  }
  // Ranks of one node share its memory bus (calibrated node bandwidth, busy ranks).
  ASSIGN_OR_RETURN(
      ComputeModel compute,
      ComputeModel::Create(
          experiment.cluster.device, PrecisionOf(experiment), calibration,
          SharedBandwidthPerDevice(NodeBandwidthCluster(experiment.cluster, calibration),
                                   ConcurrentDevicesPerNode(experiment)),
          calibration.cache_bandwidth > 0 && CacheResident(experiment)));
  ComputeModel replay = compute.WithoutLaunch();
  Topology topology = NetworkTopology(experiment.cluster, calibration);
  const bool serial_comm = experiment.cluster.device.kind == DeviceKind::kCpu;
  return std::unique_ptr<const SimSetup>(
      new SimSetup{std::move(calibration), std::move(compute), std::move(topology),
                   std::move(replay), serial_comm, CommunicationOptions(experiment)});
}

}  // namespace shardscope::sim
