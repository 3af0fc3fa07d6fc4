// KvTransfers: the KV caches that disaggregated serving ships from prefill to
// decode instances, as flows of the simulator's fluid network model
// (sim::FlowNetwork, max-min fair). Each instance's NICs are one link: a
// prefill instance's egress, a decode instance's ingress, of capacity devices ×
// NIC bandwidth × the calibration's network efficiency. A transfer loads its
// source's and its destination's link with the cache's bytes, so transfers out
// of one prefill instance, or into one decode instance, share its NICs fairly;
// the scale-out fabric between them is taken as non-blocking (a rail-optimised
// fat tree). A cache arrives the scale-out latency after its flow completes.
// Deterministic. Not thread-safe.
#ifndef SHARDSCOPE_SERVE_KV_TRANSFERS_H_
#define SHARDSCOPE_SERVE_KV_TRANSFERS_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "sim/network.h"

namespace shardscope::serve {

class KvTransfers {
 public:
  // nic_bandwidth[i]: bytes/s of instance i's NICs (efficiency applied);
  // latency: seconds from a flow's completion to the cache's arrival.
  KvTransfers(std::vector<double> nic_bandwidth, double latency);

  // Starts shipping `bytes` from instance `from` to instance `to` at `now`
  // (≥ every earlier event); `request` comes back on arrival.
  void Start(double now, size_t from, size_t to, double bytes, int64_t request);

  // Time of the next event: a flow completing or a cache arriving; +inf: none.
  double Next() const;
  // Handles the events at `t` == Next(): completed flows free their share of
  // the links (their caches arrive `latency` later); caches arriving at t are
  // appended to `arrived`, in the order their flows started.
  void AdvanceTo(double t, std::vector<int64_t>* arrived);

  bool idle() const { return network_.active() == 0 && arrivals_.empty(); }

 private:
  sim::FlowNetwork network_;
  double latency_;
  // (arrival time, start order, request): completed flows still in latency.
  using Arrival = std::tuple<double, int64_t, int64_t>;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;
  std::vector<int64_t> order_;  // start order by request, for ties
  std::vector<int64_t> finished_;
  int64_t started_ = 0;
};

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_KV_TRANSFERS_H_
