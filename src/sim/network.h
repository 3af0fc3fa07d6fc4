// FlowNetwork: a fluid model of transfers sharing links. A transfer carries a
// number of bytes over each link it uses (a point-to-point message: its size on
// every link of its path; a ring: the ring's per-link total on each ring link;
// an all-to-all: each port's total) and progresses proportionally on all of
// them, finishing when its most loaded link has delivered its load. Rates are
// max-min fair (progressive filling), recomputed when a transfer starts or
// ends — only over the transfers connected to it through shared links (other
// components keep their rates). Deterministic. Not thread-safe.
#ifndef SHARDSCOPE_SIM_NETWORK_H_
#define SHARDSCOPE_SIM_NETWORK_H_

#include <cstdint>
#include <limits>
#include <vector>

namespace shardscope::sim {

struct LinkLoad {
  int32_t link = 0;
  double bytes = 0;
};

// Sorts `loads` by link and sums repeated links; a list already strictly
// increasing (an all-to-all's per-link sums) is only checked.
void SortAndMergeLoads(std::vector<LinkLoad>* loads);

class FlowNetwork {
 public:
  // capacities: bytes/s per link (one direction).
  explicit FlowNetwork(std::vector<double> capacities);

  // Starts a transfer at `now` (≥ the last AdvanceTo). Repeated links are
  // merged; links with no bytes dropped. `tag` is returned when it finishes.
  // A transfer with no bytes must not be started (it takes no time).
  void Start(double now, const std::vector<LinkLoad>& loads, int64_t tag);

  // Time the next transfer finishes; +inf when none is active.
  double NextCompletion() const { return next_completion_; }
  // Moves time to t (≤ NextCompletion()) and appends the tags of the transfers
  // finished at t, in the order they started.
  void AdvanceTo(double t, std::vector<int64_t>* finished);

  int64_t active() const { return static_cast<int64_t>(active_.size()); }
  int64_t transfers_started() const { return started_; }
  // Bottleneck-normalised rate (bytes/s on the transfer's most loaded link) of
  // the active transfer with `tag`; 0 when none.
  double RateOf(int64_t tag) const;

 private:
  struct Transfer {
    int64_t tag = 0;
    std::vector<LinkLoad> coeff;  // per link: its load / the largest load
    double size = 0;              // the largest per-link load, bytes
    double remaining = 0;         // bytes left on the most loaded link
    double rate = 0;              // bytes/s on the most loaded link
    double updated = 0;           // time `remaining` refers to
    bool live = false;
  };

  void Settle(Transfer& t, double now);
  // Recomputes the rates of every transfer connected to `seed_links`.
  void Recompute(double now, const std::vector<int32_t>& seed_links);
  double FinishTime(const Transfer& t) const;
  // Sets next_completion_; called whenever a finish time may have changed.
  void UpdateNextCompletion();

  std::vector<double> capacity_;
  std::vector<Transfer> transfers_;            // slot per transfer ever started
  std::vector<int32_t> active_;                // slots of live transfers, by start order
  std::vector<std::vector<int32_t>> on_link_;  // live transfer slots per link
  std::vector<int32_t> free_slots_;
  double now_ = 0;
  double next_completion_ = std::numeric_limits<double>::infinity();
  int64_t started_ = 0;
  // Scratch for Recompute.
  std::vector<int32_t> link_mark_, transfer_mark_;
  int32_t epoch_ = 0;
  std::vector<double> cap_left_, weight_left_;
  std::vector<int32_t> unfrozen_on_link_;
  std::vector<int32_t> links_, comp_, stack_;  // the component's links and transfers, DFS stack
  std::vector<int32_t> seeds_;                 // links whose transfers changed
};

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_NETWORK_H_
