#include "estimate/bounds.h"

#include <algorithm>
#include <cmath>

#include "core/enum_names.h"
#include "core/units.h"
#include "program/program_builder.h"

namespace shardscope {
namespace {

struct RankCost {
  double compute = 0, memory = 0, network = 0;
};

// Bytes that must leave `rank` for one comm op, split by the link they cross:
// peers in the same scale-up domain (scale-up port) or beyond it (NIC).
struct LinkBytes {
  double scale_up = 0, scale_out = 0;
  bool crosses_nodes = false;
};

// `dedup`: the most an all-to-all's cross-domain bytes can shrink — topk when
// the hierarchical kernels send each token once per domain (a token's pairs to
// one domain are at most its topk), else 1.
LinkBytes CommBytes(const Op& op, int64_t rank, const Placement& pl, const ClusterSpec& c,
                    double dedup) {
  LinkBytes out;
  const double s = static_cast<double>(op.bytes);
  if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
    // A receive moves the same bytes into this rank: its ingress link bounds it.
    const bool same = c.SameScaleUpDomain(pl.Location(rank).device, pl.Location(op.peer).device);
    (same ? out.scale_up : out.scale_out) = s;
    out.crosses_nodes = !same;
    return out;
  }
  const Group& g = pl.groups()[op.group_id];
  const double n = static_cast<double>(g.ranks.size());
  if (n <= 1) return out;
  // Members sharing this rank's domain (k) and domains spanned (m).
  const int64_t my_domain = c.DomainOf(pl.Location(rank).device);
  std::vector<int64_t> domains;
  double k = 0;
  for (int64_t r : g.ranks) {
    int64_t d = c.DomainOf(pl.Location(r).device);
    if (d == my_domain && c.scale_up.kind != ScaleUpKind::kNone) ++k;
    if (std::find(domains.begin(), domains.end(), d) == domains.end()) domains.push_back(d);
  }
  if (c.scale_up.kind == ScaleUpKind::kNone) k = 1;
  const double m = static_cast<double>(domains.size());
  out.crosses_nodes = m > 1;
  switch (op.collective) {
    case Collective::kAllToAll: {
      for (const PeerBytes& p : op.peer_sends) {
        if (p.position < 0 || static_cast<size_t>(p.position) >= g.ranks.size()) continue;
        int64_t peer = g.ranks[p.position];
        if (peer == rank) continue;
        bool same = c.SameScaleUpDomain(pl.Location(rank).device, pl.Location(peer).device);
        (same ? out.scale_up : out.scale_out) += static_cast<double>(p.bytes);
      }
      out.scale_out /= dedup;
      return out;
    }
    case Collective::kAllReduce:
      // Reduce-scatter + all-gather: inside the domain 2(k−1)/k·S ((k−1)/k·S
      // each way when the switch reduces: NVLS); across domains each domain
      // must exchange 2(m−1)/m·S, spread over its k NICs.
      out.scale_up = k > 1 ? (c.collectives.nvls ? 1 : 2) * (k - 1) / k * s : 0;
      out.scale_out = m > 1 ? 2 * (m - 1) / m * s / k : 0;
      return out;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      out.scale_up = k > 1 ? (k - 1) / n * s : 0;
      out.scale_out = m > 1 ? (m - 1) / m * s / k : 0;
      return out;
    case Collective::kBroadcast:
      out.scale_up = k > 1 ? s / k : 0;
      out.scale_out = m > 1 ? s / k : 0;
      return out;
    default:
      return out;
  }
}

constexpr auto kBoundKindNames = MakeEnumNames<BoundKind>({{BoundKind::kCompute, "compute"},
                                                           {BoundKind::kMemory, "memory bandwidth"},
                                                           {BoundKind::kNetwork, "network"}});

}  // namespace

std::string_view BoundKindName(BoundKind kind) { return kBoundKindNames.Name(kind); }

double PhaseBound::seconds() const { return std::max({compute, memory, network}); }

BoundKind PhaseBound::dominant() const {
  if (compute >= memory && compute >= network) return BoundKind::kCompute;
  return memory >= network ? BoundKind::kMemory : BoundKind::kNetwork;
}

StatusOr<PhaseBound> BoundPhase(const Experiment& e, const Placement& pl,
                                const PhaseProgram& program) {
  const ClusterSpec& c = e.cluster;
  ASSIGN_OR_RETURN(double peak, c.device.PeakFlops(e.workload.dtype));
  if (const Precision prec = PrecisionOf(e); prec.roles) {
    // The fastest dtype any op computes in: FP8 GEMMs may run above the bf16 peak.
    ASSIGN_OR_RETURN(double gemm_peak, c.device.PeakFlops(prec.GemmDType()));
    ASSIGN_OR_RETURN(double act_peak, c.device.PeakFlops(prec.activations));
    peak = std::max({peak, gemm_peak, act_peak});
  }
  const double bw = c.device.memory_bandwidth;
  std::vector<RankCost> costs(pl.world_size());
  const bool deduplicated =
      ResolvedAllToAll(e, program.phase == Phase::kDecode) == AllToAllKind::kHierarchical;
  const double dedup =
      deduplicated ? std::max<double>(1.0, static_cast<double>(e.model.moe.experts_per_token)) : 1;
  for (const RankProgram& rp : program.ranks) {
    RankCost& cost = costs[rp.rank];
    double flops = 0, bytes = 0, egress = 0, ingress = 0;
    for (const Op& op : rp.ops) {
      if (!op.is_comm()) {
        flops += static_cast<double>(op.flops);
        bytes += static_cast<double>(op.bytes_read + op.bytes_written);
        continue;
      }
      LinkBytes lb = CommBytes(op, rp.rank, pl, c, dedup);
      double t = 0;
      if (lb.scale_up > 0) t = std::max(t, lb.scale_up / c.scale_up.bandwidth_per_device);
      if (lb.scale_out > 0) t = std::max(t, lb.scale_out / c.scale_out.nic_bandwidth_per_device);
      if (lb.scale_up > 0 || lb.scale_out > 0) {
        t += lb.crosses_nodes ? c.scale_out.latency : c.scale_up.latency;
      }
      // Links are full duplex: sends load the way out, receives the way in,
      // collectives both.
      if (op.collective != Collective::kRecv) egress += t;
      if (op.collective != Collective::kSend) ingress += t;
    }
    cost.compute = flops / peak;
    cost.memory = bytes / bw;
    cost.network = std::max(egress, ingress);
  }
  // Along a pipeline, stage s must do all its own work, and before its first
  // micro-batch that micro-batch must pass every earlier stage, after its last
  // one every later stage: t ≥ c_s + f · Σ_{s'≠s} c_s', with f the smallest
  // micro-batch's share of the replica's requests. Without a pipeline this is
  // the rank's own cost.
  PhaseBound best;
  double best_seconds = -1;
  for (const Group* g : pl.GroupsOf(Dim::kPp)) {
    const int64_t requests = RequestsOfRank(e, pl, g->ranks[0]);
    const double f = requests > 0 ? static_cast<double>(requests / program.micro_batches) /
                                        static_cast<double>(requests)
                                  : 0.0;
    RankCost sum;
    for (int64_t r : g->ranks) {
      sum.compute += costs[r].compute;
      sum.memory += costs[r].memory;
      sum.network += costs[r].network;
    }
    for (int64_t r : g->ranks) {
      const RankCost& own = costs[r];
      PhaseBound b{own.compute + f * (sum.compute - own.compute),
                   own.memory + f * (sum.memory - own.memory),
                   own.network + f * (sum.network - own.network), r};
      if (b.seconds() > best_seconds) {
        best_seconds = b.seconds();
        best = b;
      }
    }
  }
  return best;
}

StatusOr<Bounds> ComputeBounds(const Experiment& e, const Placement& pl) {
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, pl));
  Bounds b;
  ASSIGN_OR_RETURN(PhaseProgram prefill, builder.Build(Phase::kPrefill, 0));
  ASSIGN_OR_RETURN(b.ttft, BoundPhase(e, pl, prefill));
  const Workload& w = e.workload;
  const int64_t decode_steps = w.tokens_to_generate - 1;  // prefill yields the first token
  b.has_decode = decode_steps > 0;
  {  // Step 0 is bounded even without decode steps: TPOT claims refer to it.
    // Each component is affine in the context length, so the mean over all
    // steps is the mean of the first and the last step.
    ASSIGN_OR_RETURN(PhaseProgram decode, builder.Build(Phase::kDecode, 0));
    ASSIGN_OR_RETURN(PhaseBound f, BoundPhase(e, pl, decode));
    PhaseBound l = f;
    if (decode_steps > 1) {  // the same program, updated to the last step
      RETURN_IF_ERROR(builder.Update(decode, decode_steps - 1));
      ASSIGN_OR_RETURN(l, BoundPhase(e, pl, decode));
    }
    b.tpot = PhaseBound{(f.compute + l.compute) / 2, (f.memory + l.memory) / 2,
                        (f.network + l.network) / 2, l.critical_rank};
  }
  const double steps = static_cast<double>(std::max<int64_t>(decode_steps, 0));
  b.total = b.ttft.seconds() + steps * b.tpot.seconds();
  const double batch = static_cast<double>(w.batch_size);
  const double prompt_tokens = batch * static_cast<double>(w.sequence_length);
  b.prefill_tokens_per_s = prompt_tokens / b.ttft.seconds();
  b.decode_tokens_per_s = batch / b.tpot.seconds();
  b.tps = prompt_tokens / b.total;
  // Which component dominates the whole run.
  PhaseBound run{b.ttft.compute + steps * b.tpot.compute, b.ttft.memory + steps * b.tpot.memory,
                 b.ttft.network + steps * b.tpot.network, 0};
  b.total_dominant = run.dominant();
  MemoryPlan mem = PlanMemory(e, pl);
  for (const RankMemory& r : mem.ranks)
    b.max_rank_weights = std::max(b.max_rank_weights, r.weights);
  b.cache_bytes = e.cluster.device.l2_cache_bytes;
  return b;
}

namespace {

std::string Components(const PhaseBound& b) {
  return fmt::format("compute {}, memory {}, network {}", FormatSeconds(b.compute),
                     FormatSeconds(b.memory), FormatSeconds(b.network));
}

}  // namespace

std::vector<ClaimCheck> CheckClaims(const Experiment& e, const Bounds& b,
                                    const MemoryPlan& memory) {
  std::vector<ClaimCheck> out;
  const double tokens = static_cast<double>(e.workload.batch_size) * e.workload.sequence_length;
  for (const auto& [key, claimed] : e.claims) {
    ClaimCheck c;
    c.key = key;
    c.claimed = claimed;
    if (key == "tps") {
      c.bound = b.tps;
      c.possible = claimed <= b.tps;
      c.margin = claimed / b.tps;
      c.reason = fmt::format(
          "the claim allows {} for {} tokens; the run needs at least {} ({} bound; prefill {}; "
          "{} decode steps of {})",
          FormatSeconds(tokens / claimed), FormatSi(tokens), FormatSeconds(b.total),
          BoundKindName(b.total_dominant), Components(b.ttft),
          std::max<int64_t>(e.workload.tokens_to_generate - 1, 0), FormatSeconds(b.tpot.seconds()));
    } else if (key == "ttft_ms") {
      c.bound = b.ttft.seconds() * 1e3;
      c.possible = claimed >= c.bound;
      c.margin = c.bound / claimed;
      c.reason =
          fmt::format("prefill needs at least {} ({} bound: {})", FormatSeconds(b.ttft.seconds()),
                      BoundKindName(b.ttft.dominant()), Components(b.ttft));
    } else if (key == "tpot_ms" || key == "decode_tokens_per_s") {
      const bool latency = key == "tpot_ms";
      c.bound = latency ? b.tpot.seconds() * 1e3 : b.decode_tokens_per_s;
      c.possible = latency ? claimed >= c.bound : claimed <= c.bound;
      c.margin = latency ? c.bound / claimed : claimed / c.bound;
      c.reason = fmt::format("a decode step of {} requests needs at least {} ({} bound: {})",
                             e.workload.batch_size, FormatSeconds(b.tpot.seconds()),
                             BoundKindName(b.tpot.dominant()), Components(b.tpot));
    } else if (key == "memory_per_gpu_gb") {
      const RankMemory& peak = memory.Peak();
      // Weights and the KV cache must be resident; activations and buffers
      // depend on the implementation and are left out of this floor.
      const double floor = peak.weights + peak.kv_cache;
      c.bound = floor / 1e9;
      c.possible = claimed * 1e9 >= floor;
      c.margin = c.bound / claimed;
      c.reason = fmt::format("rank {} holds {} of weights and {} of KV cache", peak.rank,
                             FormatBytes(peak.weights), FormatBytes(peak.kv_cache));
    } else {
      continue;  // the loader rejects unknown keys
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace shardscope
