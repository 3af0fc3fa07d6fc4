// Topology: the links of a cluster as the network model sees them, and the
// path a transfer between two devices takes.
//  - switched scale-up (NVLink + NVSwitch): each device's port into the switch,
//    one link per direction; a transfer a→b uses up(a), down(b);
//  - torus scale-up (TPU ICI): one link per device, dimension and direction;
//    dimension-order routing, the shorter way round with wraparound;
//  - scale-out: each device's NIC (up, down) into a rail-optimised fat tree
//    with a non-blocking core: a→b across domains uses nic_up(a), nic_down(b).
// Capacities are bytes/s per direction. Immutable; thread-safe.
#ifndef SHARDSCOPE_SIM_TOPOLOGY_H_
#define SHARDSCOPE_SIM_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "core/collective.h"

namespace shardscope::sim {

// A collective's measured line t = latency + bytes / algbw (calibration).
struct MeasuredCollective {
  double latency = 0;  // seconds
  double algbw = 0;    // bytes/s of the nccl-tests size; 0: not measured
  // Typical time a member waits for the later ones: ranks drift apart between
  // synchronisations (OS noise, uneven work), which symmetric simulated ranks
  // do not; added to the latency.
  double wait = 0;
  // Measured on its own by a microbenchmark (nccl-tests): the line is the
  // collective's time, replacing the model's in both directions. Else (fitted
  // from traces) each part only slows the model's plan.
  bool exact = false;
};
// Per (collective, group size); send/recv: kSend, 2.
using MeasuredCollectives = std::map<std::pair<Collective, int32_t>, MeasuredCollective>;

class Topology {
 public:
  explicit Topology(const ClusterSpec& cluster, MeasuredCollectives measured = {});

  int32_t num_links() const { return static_cast<int32_t>(capacity_.size()); }
  double Capacity(int32_t link) const { return capacity_[link]; }
  const std::vector<double>& capacities() const { return capacity_; }
  // "nvl_up[3]", "nic_down[9]", "ici[5].d1-" — for messages and tests.
  std::string LinkName(int32_t link) const;

  // Appends the links from device a to device b (none when a == b).
  void AppendPath(int64_t a, int64_t b, std::vector<int32_t>* links) const;
  // Seconds of latency from a to b (= ClusterSpec::LatencyBetween).
  double Latency(int64_t a, int64_t b) const;
  // = ClusterSpec::SameScaleUpDomain.
  bool SameDomain(int64_t a, int64_t b) const {
    return a != b && domains_ && DomainOf(a) == DomainOf(b);
  }
  int64_t DomainOf(int64_t device) const { return device / domain_size_; }
  // Paths are one or two links (scale-up switch or NICs), never a torus route.
  bool torus() const { return torus_; }
  // Scale-up domains exist: devices of one domain reach each other over it.
  bool has_domains() const { return domains_; }
  // Without a torus, Latency of any two devices of one domain, and of any two
  // devices of different domains.
  double SwitchLatency() const { return cluster_.scale_up.latency; }
  double NicLatency() const { return cluster_.scale_out.latency; }
  // The collective library's cost terms (cluster/comm_tuning.h).
  const CommTuning& tuning() const { return cluster_.collectives; }
  // The link is a NIC's (scale-out), not the scale-up domain's.
  bool IsScaleOut(int32_t link) const { return link >= 2 * devices_ && link < 4 * devices_; }
  int64_t num_devices() const { return devices_; }
  int64_t DomainSize() const { return domain_size_; }
  // The calibration's measured line for `collective` over `group` devices
  // (OverheadTerms::collectives); nullptr: none measured.
  const MeasuredCollective* Measured(Collective collective, int64_t group) const {
    if (measured_.empty()) return nullptr;
    if (collective == Collective::kRecv) collective = Collective::kSend;
    auto it = measured_.find({collective, static_cast<int32_t>(group)});
    return it == measured_.end() ? nullptr : &it->second;
  }

  // Link ids (exposed for tests).
  int32_t ScaleUpUp(int64_t d) const { return static_cast<int32_t>(d); }
  int32_t ScaleUpDown(int64_t d) const { return static_cast<int32_t>(devices_ + d); }
  int32_t NicUp(int64_t d) const { return static_cast<int32_t>(2 * devices_ + d); }
  int32_t NicDown(int64_t d) const { return static_cast<int32_t>(3 * devices_ + d); }
  int32_t TorusLink(int64_t d, int dim, bool negative) const {
    return static_cast<int32_t>(4 * devices_ + d * 6 + dim * 2 + (negative ? 1 : 0));
  }

 private:
  void AppendTorusPath(int64_t a, int64_t b, std::vector<int32_t>* links) const;

  // Torus coordinates of `device` in its domain, dimension 0 fastest (as
  // ClusterSpec::TorusCoords, without allocating).
  void Coords(int64_t device, int64_t* coords) const;

  // The cluster's path and latency rules, precomputed for the hot path (the
  // all-to-all decomposition calls them for every pair of members).
  static constexpr int kStackDims = 8;  // more torus dimensions: coordinates on the heap
  ClusterSpec cluster_;
  int64_t devices_;
  int64_t domain_size_;
  bool domains_;  // scale-up domains exist (kind not none, size > 1)
  bool torus_;
  int num_dims_;               // torus dimensions
  std::vector<int64_t> dims_;  // torus sizes
  // Torus domains of at most kTableDomain devices: the path and latency of
  // every pair of positions in a domain, precomputed (a domain's links are
  // those of domain 0 shifted by 6 per device). Empty otherwise.
  static constexpr int64_t kTableDomain = 256;
  std::vector<int32_t> torus_path_begin_;  // per pair la * domain + lb, CSR into torus_path_
  std::vector<int32_t> torus_path_;        // links of domain 0
  std::vector<double> torus_latency_;      // per pair
  std::vector<double> capacity_;
  MeasuredCollectives measured_;
};

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_TOPOLOGY_H_
