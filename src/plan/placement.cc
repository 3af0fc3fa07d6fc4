#include "plan/placement.h"

#include <algorithm>
#include <set>

#include "core/yaml_reader.h"
#include "plan/shard_geometry.h"

namespace shardscope {
namespace {

// Context for plan errors: "file: experiment 'x': field 'parallelism.tp_size'".
YamlContext PlanField(const Experiment& e, std::string_view field) {
  return YamlContext{e.source_file, e.name, std::string(field)};
}

std::string_view SizeField(Dim d) {
  switch (d) {
    case Dim::kTp:
      return "parallelism.tp_size";
    case Dim::kSp:
      return "parallelism.seq_parallel_size";
    case Dim::kEp:
      return "parallelism.ep_size";
    case Dim::kDp:
      return "parallelism.dp_size";
    case Dim::kPp:
      return "parallelism.pp_size";
    case Dim::kNone:
      break;
  }
  return "parallelism";
}

Status ValidateOrder(const Experiment& e) {
  const auto& order = e.parallel.order;
  std::set<Dim> seen(order.begin(), order.end());
  if (order.size() != kNumDims || seen.size() != kNumDims) {
    return PlanField(e, "parallelism.order")
        .Error("must list each of tp, sp, ep, dp, pp exactly once");
  }
  return Status::Ok();
}

Status ValidateStages(const Experiment& e) {
  const ParallelSpec& p = e.parallel;
  const int64_t layers = e.model.num_layers;
  if (p.pp > layers) {
    return PlanField(e, "parallelism.pp_size")
        .Error(fmt::format("{} pipeline stages exceed the model's {} layers", p.pp, layers));
  }
  if (p.layer_to_stage.empty()) return Status::Ok();
  YamlContext ctx = PlanField(e, "parallelism.layer_to_stage");
  if (static_cast<int64_t>(p.layer_to_stage.size()) != layers) {
    return ctx.Error(
        fmt::format("maps {} layers but the model has {}", p.layer_to_stage.size(), layers));
  }
  std::vector<int64_t> count(p.pp, 0);
  for (size_t l = 0; l < p.layer_to_stage.size(); ++l) {
    int64_t s = p.layer_to_stage[l];
    if (s < 0 || s >= p.pp) {
      return ctx.Error(fmt::format("layer {} maps to stage {}, outside 0..{}", l, s, p.pp - 1));
    }
    if (l > 0 && s < p.layer_to_stage[l - 1]) {
      return ctx.Error(
          fmt::format("layer {} maps to stage {} after stage {}: stages must be "
                      "in layer order",
                      l, s, p.layer_to_stage[l - 1]));
    }
    ++count[s];
  }
  for (int64_t s = 0; s < p.pp; ++s) {
    if (count[s] == 0) return ctx.Error(fmt::format("stage {} has no layers", s));
  }
  return Status::Ok();
}

Status ValidateHeads(const Experiment& e) {
  const ModelSpec& m = e.model;
  const int64_t tp = e.parallel.tp;
  YamlContext ctx = PlanField(e, "parallelism.tp_size");
  if (m.num_heads % tp != 0) {
    return ctx.Error(fmt::format("tp {} does not divide the {} attention heads of model '{}'", tp,
                                 m.num_heads, m.name));
  }
  if (m.attention == AttentionKind::kGqa) {
    if (tp <= m.num_kv_heads && m.num_kv_heads % tp != 0) {
      return ctx.Error(fmt::format("tp {} does not divide the {} KV heads of model '{}'", tp,
                                   m.num_kv_heads, m.name));
    }
    if (tp > m.num_kv_heads && tp % m.num_kv_heads != 0) {
      return ctx.Error(
          fmt::format("tp {} exceeds the {} KV heads of model '{}' but is not a "
                      "multiple of them, so KV heads cannot be replicated evenly",
                      tp, m.num_kv_heads, m.name));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidatePlan(const Experiment& e) {
  const ParallelSpec& p = e.parallel;
  for (int i = 0; i < kNumDims; ++i) {
    Dim d = static_cast<Dim>(i);
    if (p.Size(d) < 1) {
      return PlanField(e, SizeField(d)).Error(fmt::format("must be at least 1, got {}", p.Size(d)));
    }
  }
  RETURN_IF_ERROR(ValidateOrder(e));
  const int64_t world = p.world_size();
  const int64_t devices = e.cluster.num_devices();
  if (world > devices) {
    return PlanField(e, "parallelism")
        .Error(fmt::format("world size tp·sp·ep·dp·pp = {}·{}·{}·{}·{} = {} exceeds the {} "
                           "devices of cluster '{}' ({} nodes × {})",
                           p.tp, p.sp, p.ep, p.dp, p.pp, world, devices, e.cluster.name,
                           e.cluster.num_nodes, e.cluster.devices_per_node));
  }
  RETURN_IF_ERROR(ValidateHeads(e));
  const int64_t prompt = e.workload.sequence_length;
  if (p.sp > 1) {
    int64_t chunks = p.sp_variant == SpVariant::kZigzag ? 2 * p.sp : p.sp;
    if (prompt % chunks != 0) {
      return PlanField(e, "parallelism.seq_parallel_size")
          .Error(fmt::format("the prompt of {} tokens does not split into {} equal chunks ({} "
                             "ring attention over sp = {})",
                             prompt, chunks, SpVariantName(p.sp_variant), p.sp));
    }
  }
  RETURN_IF_ERROR(ValidateStages(e));
  if (p.ep > 1) {
    if (!e.model.is_moe()) {
      return PlanField(e, "parallelism.ep_size")
          .Error(fmt::format("expert parallelism needs an MoE model; '{}' is dense", e.model.name));
    }
    if (p.redundant_experts > 0) {
      const int64_t slots = e.model.moe.num_routed_experts + p.redundant_experts;
      if (slots % p.ep != 0) {
        return PlanField(e, "parallelism.ep_size")
            .Error(fmt::format("ep {} does not divide the {} routed + {} redundant experts of "
                               "model '{}'",
                               p.ep, e.model.moe.num_routed_experts, p.redundant_experts,
                               e.model.name));
      }
    } else if (e.model.moe.num_routed_experts % p.ep != 0) {
      return PlanField(e, "parallelism.ep_size")
          .Error(fmt::format("ep {} does not divide the {} routed experts of model '{}'", p.ep,
                             e.model.moe.num_routed_experts, e.model.name));
    }
  }
  if (!p.expert_to_ep_rank.empty() &&
      static_cast<int64_t>(p.expert_to_ep_rank.size()) != e.model.moe.num_routed_experts) {
    return PlanField(e, "parallelism.expert_placement")
        .Error(fmt::format("places {} experts but the model has {}: place all or none",
                           p.expert_to_ep_rank.size(), e.model.moe.num_routed_experts));
  }
  for (const auto& [expert, rank] : p.expert_to_ep_rank) {
    if (expert < 0 || expert >= e.model.moe.num_routed_experts || rank < 0 || rank >= p.ep) {
      return PlanField(e, "parallelism.expert_placement")
          .Error(fmt::format("expert {} → ep rank {} is out of range", expert, rank));
    }
  }
  const int64_t replicas = p.dp * p.ep;
  if (e.workload.batch_size < replicas) {
    return PlanField(e, "batch_size")
        .Error(fmt::format("batch of {} requests is smaller than dp·ep = {}: some ranks would "
                           "serve no request",
                           e.workload.batch_size, replicas));
  }
  if (p.micro_batches > 0 && p.micro_batches > e.workload.batch_size / replicas) {
    return PlanField(e, "parallelism.micro_batches")
        .Error(fmt::format("{} micro-batches exceed the {} requests per replica", p.micro_batches,
                           e.workload.batch_size / replicas));
  }
  return Status::Ok();
}

StatusOr<Placement> Placement::Create(const Experiment& e) {
  RETURN_IF_ERROR(ValidatePlan(e));
  const ParallelSpec& p = e.parallel;
  Placement pl;
  pl.order_ = p.order;
  int64_t stride = 1;
  for (Dim d : p.order) {
    pl.sizes_[static_cast<int>(d)] = p.Size(d);
    pl.strides_[static_cast<int>(d)] = stride;
    stride *= p.Size(d);
  }
  const int64_t world = p.world_size();
  const int64_t per_node = e.cluster.devices_per_node;
  const int64_t domain = std::max<int64_t>(1, e.cluster.scale_up.domain_size);
  pl.coords_.resize(world);
  pl.locations_.resize(world);
  for (int64_t r = 0; r < world; ++r) {
    for (int i = 0; i < kNumDims; ++i) {
      pl.coords_[r][i] = (r / pl.strides_[i]) % pl.sizes_[i];
    }
    pl.locations_[r] = DeviceLocation{r / per_node, r % per_node, r};
  }
  // Groups: for each dimension, the ranks whose other coordinates agree.
  pl.group_of_.assign(world, {});
  for (int i = 0; i < kNumDims; ++i) {
    std::vector<int64_t> assigned(world, -1);
    for (int64_t r = 0; r < world; ++r) {
      if (assigned[r] >= 0) continue;
      Group g;
      g.id = static_cast<int64_t>(pl.groups_.size());
      g.dim = static_cast<Dim>(i);
      int64_t base = r - pl.coords_[r][i] * pl.strides_[i];
      for (int64_t c = 0; c < pl.sizes_[i]; ++c) g.ranks.push_back(base + c * pl.strides_[i]);
      for (int64_t m : g.ranks) {
        assigned[m] = g.id;
        pl.group_of_[m][i] = g.id;
        g.spans_nodes |= pl.locations_[m].node != pl.locations_[g.ranks[0]].node;
        g.spans_scale_up |= m / domain != g.ranks[0] / domain;
      }
      pl.groups_.push_back(std::move(g));
    }
  }
  // Pipeline stages.
  const int64_t layers = e.model.num_layers;
  pl.layer_to_stage_ = p.layer_to_stage;
  if (pl.layer_to_stage_.empty()) {
    // Contiguous split; the first (layers mod pp) stages take one extra layer,
    // since the last stage also runs the LM head.
    int64_t base = layers / p.pp, extra = layers % p.pp;
    for (int64_t s = 0; s < p.pp; ++s) {
      for (int64_t j = 0; j < base + (s < extra ? 1 : 0); ++j) pl.layer_to_stage_.push_back(s);
    }
  }
  pl.stage_layers_.assign(p.pp, {});
  for (int64_t l = 0; l < layers; ++l) pl.stage_layers_[pl.layer_to_stage_[l]].push_back(l);
  // Experts: contiguous blocks unless placed explicitly.
  const int64_t experts = e.model.moe.num_routed_experts;
  const ShardGeometry geo(e.model, p.tp, p.ep);
  pl.expert_to_ep_.resize(experts);
  pl.ep_experts_.assign(p.ep, {});
  for (int64_t x = 0; x < experts; ++x) {
    auto it = p.expert_to_ep_rank.find(x);
    // With redundant experts (EPLB) the builder places replicas per layer; this
    // is only each expert's home block, contiguous and balanced in count.
    int64_t rank = it != p.expert_to_ep_rank.end() ? it->second
                   : p.redundant_experts > 0       ? x * p.ep / experts
                                                   : x / geo.experts_per_rank();
    pl.expert_to_ep_[x] = rank;
    pl.ep_experts_[rank].push_back(x);
  }
  return pl;
}

int64_t Placement::RankAt(const std::array<int64_t, kNumDims>& coord) const {
  int64_t r = 0;
  for (int i = 0; i < kNumDims; ++i) r += coord[i] * strides_[i];
  return r;
}

const Group& Placement::GroupOf(int64_t rank, Dim d) const {
  return groups_[group_of_[rank][static_cast<int>(d)]];
}

std::vector<const Group*> Placement::GroupsOf(Dim d) const {
  std::vector<const Group*> out;
  for (const Group& g : groups_)
    if (g.dim == d) out.push_back(&g);
  return out;
}

}  // namespace shardscope
