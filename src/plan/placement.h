// Placement: where each global rank of a validated plan runs, its coordinate on
// each parallelism dimension, the communication groups of every dimension, and
// which layers each pipeline stage holds. Immutable after construction;
// thread-safe to read.
#ifndef SHARDSCOPE_PLAN_PLACEMENT_H_
#define SHARDSCOPE_PLAN_PLACEMENT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope {

struct DeviceLocation {
  int64_t node = 0;
  int64_t local = 0;   // device index within the node
  int64_t device = 0;  // global device index = node · devices_per_node + local
};

// A set of ranks that communicate along one dimension (e.g. a TP group).
struct Group {
  int64_t id = 0;  // unique across all dimensions
  Dim dim = Dim::kTp;
  std::vector<int64_t> ranks;   // ordered by coordinate on `dim`
  bool spans_nodes = false;     // true when members sit on more than one node
  bool spans_scale_up = false;  // true when members sit in more than one scale-up domain
};

class Placement {
 public:
  // Validates the experiment's plan (see ValidatePlan) and places its ranks.
  static StatusOr<Placement> Create(const Experiment& experiment);

  int64_t world_size() const { return static_cast<int64_t>(coords_.size()); }
  int64_t Coord(int64_t rank, Dim d) const { return coords_[rank][static_cast<int>(d)]; }
  // The rank with the given coordinates (indexed by Dim).
  int64_t RankAt(const std::array<int64_t, kNumDims>& coord) const;
  const DeviceLocation& Location(int64_t rank) const { return locations_[rank]; }

  // The group of `dim` that `rank` belongs to (a group of one when that size is 1).
  const Group& GroupOf(int64_t rank, Dim d) const;
  const std::vector<Group>& groups() const { return groups_; }
  // Only the groups of one dimension.
  std::vector<const Group*> GroupsOf(Dim d) const;

  // Pipeline: stage of each layer and the layers of each stage.
  int64_t StageOfLayer(int64_t layer) const { return layer_to_stage_[layer]; }
  const std::vector<int64_t>& LayersOfStage(int64_t stage) const { return stage_layers_[stage]; }
  int64_t num_stages() const { return static_cast<int64_t>(stage_layers_.size()); }

  // Expert parallelism: EP rank (coordinate) holding routed expert e.
  int64_t EpRankOfExpert(int64_t expert) const { return expert_to_ep_[expert]; }
  const std::vector<int64_t>& ExpertsOfEpRank(int64_t ep_rank) const {
    return ep_experts_[ep_rank];
  }

  // Mesh order used, innermost first.
  const std::vector<Dim>& order() const { return order_; }

 private:
  std::vector<std::array<int64_t, kNumDims>> coords_;
  std::array<int64_t, kNumDims> sizes_{};
  std::array<int64_t, kNumDims> strides_{};
  std::vector<DeviceLocation> locations_;
  std::vector<Group> groups_;
  std::vector<std::array<int64_t, kNumDims>> group_of_;  // rank → group index per dim
  std::vector<int64_t> layer_to_stage_;
  std::vector<std::vector<int64_t>> stage_layers_;
  std::vector<int64_t> expert_to_ep_;
  std::vector<std::vector<int64_t>> ep_experts_;
  std::vector<Dim> order_;
};

// Checks a plan against its model and cluster; the first problem is returned
// with the file, the experiment and the field named:
//  - every size ≥ 1 and their product (the world size) fits the cluster;
//  - tp divides the attention heads (KV heads replicate when tp exceeds them,
//    otherwise tp must divide them too);
//  - sp divides the prompt (2·sp for zigzag);
//  - pp ≤ layers; a layer→stage map covers every layer once, stages in order;
//  - ep divides the routed experts (and ep > 1 needs an MoE model);
//  - the batch splits over dp (and over ep for data-parallel attention).
Status ValidatePlan(const Experiment& experiment);

}  // namespace shardscope

#endif  // SHARDSCOPE_PLAN_PLACEMENT_H_
