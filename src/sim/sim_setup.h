// SimSetup: what every simulation of an experiment needs besides its Program —
// the calibration (defaults or a file), the compute model and the network
// topology with the calibrated network efficiency applied. Shared by the
// fixed-batch simulator and the serving simulator (serve/), so both cost an
// op and a transfer the same way. Immutable; an Engine borrows its members.
#ifndef SHARDSCOPE_SIM_SIM_SETUP_H_
#define SHARDSCOPE_SIM_SIM_SETUP_H_

#include <memory>
#include <string>

#include "config/experiment.h"
#include "core/status.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/rank_spread.h"
#include "sim/topology.h"

namespace shardscope::sim {

struct SimSetup {
  Calibration calibration;
  ComputeModel compute;
  Topology topology;
  // Kernels replayed from a CUDA graph (calibration.terms.cuda_graphs): no launch each.
  ComputeModel replay_compute;
  // A CPU rank is one thread that computes and drives its MPI calls: its
  // messages move only inside those calls (no progress thread, no copy
  // engine), so a comm op does not overlap the rank's compute — the rank's ops
  // run in program order (EngineOptions::serial_comm). Accelerators overlap.
  bool serial_comm = false;
  // The experiment's communication choices, resolved (CommunicationSpec):
  // forced algorithm and protocol, the all-to-all kind of each phase and the
  // routing the hierarchical kind deduplicates against.
  EngineOptions communication;

  // The options of an Engine over this setup for a placement of `ranks` ranks
  // (the experiment's world, or a serving replica's), with `allreduce`'s
  // algorithm (kAuto: the experiment's): its ranks' compute factors are
  // RankTimeScales of the calibration's rank_speed_spread over them.
  EngineOptions EngineOptionsFor(Algorithm allreduce, int64_t ranks) const {
    EngineOptions o = communication;
    if (allreduce != Algorithm::kAuto) o.allreduce = allreduce;
    o.serial_comm = serial_comm;
    o.rank_scale = RankTimeScales(calibration.terms.rank_speed_spread, ranks);
    return o;
  }
};

// The experiment's CommunicationSpec as engine options; kAuto all-to-alls
// become the MoE exchange kernels (hierarchical prefill, low-latency decode)
// on a tuned NVSwitch cluster, NCCL's pairwise exchange elsewhere.
EngineOptions CommunicationOptions(const Experiment& experiment);

// The cluster with its links scaled by the calibration's network_efficiency
// and its MoE exchange kernels' terms replaced by the calibration's measured
// ones (Calibration::exchange_normal, exchange_low_latency).
ClusterSpec NetworkCluster(const ClusterSpec& cluster, const Calibration& calibration);
// The network as the simulator sees it: NetworkCluster's links, with the
// calibration's measured collectives.
Topology NetworkTopology(const ClusterSpec& cluster, const Calibration& calibration);

// Fails on a bad calibration file (empty path: the device family's defaults)
// or a dtype the device has no peak for. Heap-allocated: engines keep pointers.
StatusOr<std::unique_ptr<const SimSetup>> MakeSimSetup(const Experiment& experiment,
                                                       const std::string& calibration_file);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_SIM_SETUP_H_
