#include "report/plan_report.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "config/experiment_json.h"
#include "core/units.h"
#include "program/program_builder.h"

namespace shardscope {
namespace {

using nlohmann::json;

// Ranks shown one per row in text; beyond that, a summary and --json.
constexpr int64_t kMaxRankRows = 16;

std::string PlanLabel(const ParallelSpec& p) {
  std::string s;
  for (Dim d : {Dim::kTp, Dim::kSp, Dim::kEp, Dim::kPp, Dim::kDp}) {
    if (p.Size(d) > 1) s += fmt::format("{}{}{}", s.empty() ? "" : " × ", DimName(d), p.Size(d));
  }
  return s.empty() ? "single device" : s;
}

std::string Header(const Experiment& e) {
  const ClusterSpec& c = e.cluster;
  const Workload& w = e.workload;
  std::string out = fmt::format("experiment {}", e.name);
  if (!e.source_file.empty()) out += fmt::format("  ({})", e.source_file);
  out += "\n";
  if (!e.description.empty()) out += fmt::format("  {}\n", e.description);
  out += fmt::format("  model    {} ({} layers, hidden {})\n", e.model.name, e.model.num_layers,
                     e.model.hidden_size);
  out += fmt::format("  cluster  {}: {} node{} × {} {}\n", c.name, c.num_nodes,
                     c.num_nodes == 1 ? "" : "s", c.devices_per_node, c.device.name);
  out += fmt::format("  plan     {} = {} rank{} ({}), order {}\n", PlanLabel(e.parallel),
                     e.parallel.world_size(), e.parallel.world_size() == 1 ? "" : "s",
                     e.parallel.strategy, [&] {
                       std::string o;
                       for (Dim d : e.parallel.order)
                         o += (o.empty() ? "" : ",") + std::string(DimName(d));
                       return o;
                     }());
  out += fmt::format("  workload batch {} × prompt {}, generate {}, {}, backend {}\n", w.batch_size,
                     w.sequence_length, w.tokens_to_generate, DTypeName(w.dtype),
                     RunnerKindName(e.backend));
  return out;
}

std::string RankList(const std::vector<int64_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks.size() > 8 && i == 4) {
      s += ", …";
      i = ranks.size() - 2;
      continue;
    }
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]);
  }
  return "[" + s + "]";
}

json MemoryJson(const RankMemory& m) {
  return {{"rank", m.rank},
          {"requests", m.requests},
          {"weight_params", m.weight_params},
          {"weights", m.weights},
          {"kv_cache", m.kv_cache},
          {"activations", m.activations},
          {"comm_buffers", m.comm_buffers},
          {"total", m.total()}};
}

json PhaseBoundJson(const PhaseBound& b) {
  return {{"seconds", b.seconds()},
          {"compute", b.compute},
          {"memory", b.memory},
          {"network", b.network},
          {"dominant", BoundKindName(b.dominant())},
          {"critical_rank", b.critical_rank}};
}

// Totals per op kind (comm ops per collective and dimension), in first-seen order.
std::vector<KindTotals> ByKind(const RankProgram& rp) {
  std::vector<KindTotals> out;
  std::map<std::string, size_t> index;
  for (const Op& op : rp.ops) {
    std::string kind =
        op.is_comm() ? fmt::format("{}.{}", CollectiveShortName(op.collective), DimName(op.dim))
                     : std::string(OpKindName(op.kind));
    auto [it, inserted] = index.emplace(kind, out.size());
    if (inserted) out.push_back(KindTotals{kind});
    KindTotals& t = out[it->second];
    ++t.count;
    t.flops += static_cast<double>(op.flops);
    if (op.is_comm()) {
      t.comm_bytes += static_cast<double>(op.bytes);
    } else {
      t.bytes += static_cast<double>(op.bytes_read + op.bytes_written);
    }
  }
  return out;
}

}  // namespace

StatusOr<PlanReport> BuildPlanReport(const Experiment& e) {
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, pl));
  PlanReport r{e, pl, CountParameters(e.model), PlanMemory(e, pl), {}};
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    ASSIGN_OR_RETURN(PhaseProgram prog, builder.Build(phase, 0));
    PhaseSummary s;
    s.label = phase == Phase::kPrefill ? "prefill" : "decode step 0";
    for (const RankProgram& rp : prog.ranks) s.per_rank.push_back(Totals(rp));
    s.rank0_by_kind = ByKind(prog.ranks[0]);
    r.phases.push_back(std::move(s));
  }
  return r;
}

std::string PlanReportText(const PlanReport& r) {
  const Experiment& e = r.experiment;
  const Placement& pl = r.placement;
  std::string out = Header(e);
  out += fmt::format("  params   {} total, {} activated per token\n",
                     FormatSi(static_cast<double>(r.params.total)),
                     FormatSi(static_cast<double>(r.params.activated)));
  const int64_t world = pl.world_size();
  const bool all_rows = world <= kMaxRankRows;
  out += "\nplacement (rank → node/device, coordinates)\n";
  out += "  rank  node  dev   tp  sp  ep  dp  pp\n";
  for (int64_t rank = 0; rank < world; ++rank) {
    if (!all_rows && rank == 4) {
      out += fmt::format("  … {} more ranks (use --json)\n", world - 5);
      rank = world - 1;
    }
    const DeviceLocation& loc = pl.Location(rank);
    out +=
        fmt::format("  {:>4}  {:>4}  {:>3}  {:>3} {:>3} {:>3} {:>3} {:>3}\n", rank, loc.node,
                    loc.local, pl.Coord(rank, Dim::kTp), pl.Coord(rank, Dim::kSp),
                    pl.Coord(rank, Dim::kEp), pl.Coord(rank, Dim::kDp), pl.Coord(rank, Dim::kPp));
  }
  out += "\ngroups\n";
  for (int i = 0; i < kNumDims; ++i) {
    Dim d = static_cast<Dim>(i);
    if (e.parallel.Size(d) <= 1) continue;
    auto groups = pl.GroupsOf(d);
    int64_t cross = std::count_if(groups.begin(), groups.end(),
                                  [](const Group* g) { return g->spans_scale_up; });
    out += fmt::format("  {}: {} groups of {}, e.g. {}; {} of them leave the scale-up domain\n",
                       DimName(d), groups.size(), e.parallel.Size(d), RankList(groups[0]->ranks),
                       cross);
  }
  if (e.parallel.pp > 1) {
    out += "  stages:";
    for (int64_t s = 0; s < pl.num_stages(); ++s) {
      const auto& layers = pl.LayersOfStage(s);
      out += fmt::format(" {}:L{}-{}", s, layers.front(), layers.back());
      if (s >= 7 && pl.num_stages() > 9) {
        out += " …";
        break;
      }
    }
    out += "\n";
  }
  out += fmt::format("\nmemory per rank (device: {})\n", FormatBytes(r.memory.capacity));
  out += "  rank   requests  weights     kv cache    activations buffers     total       fits\n";
  for (const RankMemory& m : r.memory.ranks) {
    if (!all_rows && m.rank >= 4 && m.rank != world - 1) continue;
    out += fmt::format("  {:>4}   {:>8}  {:<10}  {:<10}  {:<10}  {:<10}  {:<10}  {}\n", m.rank,
                       m.requests, FormatBytes(m.weights), FormatBytes(m.kv_cache),
                       FormatBytes(m.activations), FormatBytes(m.comm_buffers),
                       FormatBytes(m.total()), m.total() <= r.memory.capacity ? "yes" : "NO");
  }
  for (const PhaseSummary& s : r.phases) {
    out += fmt::format("\n{} per rank\n", s.label);
    out += "  rank   compute ops  comm ops  FLOPs        bytes r+w    comm bytes by dim\n";
    for (size_t i = 0; i < s.per_rank.size(); ++i) {
      if (!all_rows && i >= 4 && i + 1 != s.per_rank.size()) continue;
      const OpTotals& t = s.per_rank[i];
      std::string dims;
      for (int d = 0; d < kNumDims; ++d) {
        if (t.comm_bytes[d] == 0) continue;
        dims += fmt::format("{}{} {}", dims.empty() ? "" : ", ", DimName(static_cast<Dim>(d)),
                            FormatBytes(static_cast<double>(t.comm_bytes[d])));
      }
      out += fmt::format("  {:>4}   {:>11}  {:>8}  {:<11}  {:<11}  {}\n", i, t.compute_ops,
                         t.comm_ops, FormatFlops(static_cast<double>(t.flops)),
                         FormatBytes(static_cast<double>(t.bytes_read + t.bytes_written)),
                         dims.empty() ? "-" : dims);
    }
    out += "  rank 0 by op kind: count, FLOPs, bytes r+w (compute) or message bytes (comm)\n";
    for (const KindTotals& k : s.rank0_by_kind) {
      out += fmt::format("    {:<22} {:>6}  {:<11}  {}\n", k.kind, k.count, FormatFlops(k.flops),
                         FormatBytes(k.comm_bytes > 0 ? k.comm_bytes : k.bytes));
    }
  }
  return out;
}

json PlanReportJson(const PlanReport& r) {
  const Placement& pl = r.placement;
  json ranks = json::array();
  for (int64_t rank = 0; rank < pl.world_size(); ++rank) {
    json coords = json::object();
    for (int i = 0; i < kNumDims; ++i)
      coords[std::string(DimName(static_cast<Dim>(i)))] = pl.Coord(rank, static_cast<Dim>(i));
    ranks.push_back({{"rank", rank},
                     {"node", pl.Location(rank).node},
                     {"device", pl.Location(rank).local},
                     {"coords", coords}});
  }
  json groups = json::array();
  for (const Group& g : pl.groups()) {
    if (g.ranks.size() <= 1) continue;
    groups.push_back({{"id", g.id},
                      {"dim", DimName(g.dim)},
                      {"ranks", g.ranks},
                      {"spans_nodes", g.spans_nodes},
                      {"spans_scale_up", g.spans_scale_up}});
  }
  json stages = json::array();
  for (int64_t s = 0; s < pl.num_stages(); ++s) stages.push_back(pl.LayersOfStage(s));
  json memory = json::array();
  for (const RankMemory& m : r.memory.ranks) memory.push_back(MemoryJson(m));
  json phases = json::array();
  for (const PhaseSummary& s : r.phases) {
    json per_rank = json::array();
    for (size_t i = 0; i < s.per_rank.size(); ++i) {
      const OpTotals& t = s.per_rank[i];
      json comm = json::object();
      for (int d = 0; d < kNumDims; ++d)
        comm[std::string(DimName(static_cast<Dim>(d)))] = t.comm_bytes[d];
      per_rank.push_back({{"rank", i},
                          {"compute_ops", t.compute_ops},
                          {"comm_ops", t.comm_ops},
                          {"flops", t.flops},
                          {"bytes_read", t.bytes_read},
                          {"bytes_written", t.bytes_written},
                          {"comm_bytes", comm}});
    }
    json kinds = json::array();
    for (const KindTotals& k : s.rank0_by_kind) {
      kinds.push_back({{"kind", k.kind},
                       {"count", k.count},
                       {"flops", k.flops},
                       {"bytes", k.bytes},
                       {"comm_bytes", k.comm_bytes}});
    }
    phases.push_back({{"phase", s.label}, {"ranks", per_rank}, {"rank0_by_kind", kinds}});
  }
  const ParamCounts& p = r.params;
  return {
      {"experiment", ExperimentToJson(r.experiment)},
      {"params",
       {{"total", p.total},
        {"activated", p.activated},
        {"activated_matrix", p.activated_matrix},
        {"embedding", p.embedding},
        {"lm_head", p.lm_head},
        {"attention", p.attention},
        {"dense_ffn", p.dense_ffn},
        {"routed_experts", p.routed_experts},
        {"shared_experts", p.shared_experts}}},
      {"placement", ranks},
      {"groups", groups},
      {"stages", stages},
      {"memory", {{"capacity", r.memory.capacity}, {"fits", r.memory.Fits()}, {"ranks", memory}}},
      {"phases", phases}};
}

bool CheckReport::all_possible() const {
  return std::all_of(claims.begin(), claims.end(), [](const ClaimCheck& c) { return c.possible; });
}

StatusOr<CheckReport> BuildCheckReport(const Experiment& e) {
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  CheckReport r{e, PlanMemory(e, pl), {}, {}};
  ASSIGN_OR_RETURN(r.bounds, ComputeBounds(e, pl));
  r.claims = CheckClaims(e, r.bounds, r.memory);
  return r;
}

std::string CheckReportText(const CheckReport& r) {
  const Experiment& e = r.experiment;
  const Bounds& b = r.bounds;
  std::string out = Header(e);
  const RankMemory& peak = r.memory.Peak();
  out += fmt::format(
      "\nmemory   {}: peak rank {} needs {} of {} (weights {}, KV cache {}, activations {}, "
      "buffers {})\n",
      r.memory.Fits() ? "fits" : "DOES NOT FIT", peak.rank, FormatBytes(peak.total()),
      FormatBytes(r.memory.capacity), FormatBytes(peak.weights), FormatBytes(peak.kv_cache),
      FormatBytes(peak.activations), FormatBytes(peak.comm_buffers));
  out += fmt::format(
      "cache    weights per rank up to {} vs {} last-level cache: {}\n",
      FormatBytes(b.max_rank_weights), FormatBytes(b.cache_bytes),
      b.max_rank_weights <= b.cache_bytes ? "can stay resident" : "cannot stay resident");
  auto line = [](const char* name, const PhaseBound& p) {
    return fmt::format("  {:<6} ≥ {:<10} {:<17} (compute {}, memory {}, network {}; rank {})\n",
                       name, FormatSeconds(p.seconds()), BoundKindName(p.dominant()),
                       FormatSeconds(p.compute), FormatSeconds(p.memory), FormatSeconds(p.network),
                       p.critical_rank);
  };
  out += "bounds (lower bounds on time; the largest term dominates)\n";
  out += line("TTFT", b.ttft);
  out += line("TPOT", b.tpot);
  out += fmt::format("  run    ≥ {} ({} bound)\n", FormatSeconds(b.total),
                     BoundKindName(b.total_dominant));
  out += fmt::format(
      "  throughput ≤ {} prompt tokens/s, ≤ {} generated tokens/s, TPS (batch·prompt/run) ≤ {}\n",
      FormatSi(b.prefill_tokens_per_s), FormatSi(b.decode_tokens_per_s), FormatSi(b.tps));
  if (!r.claims.empty()) {
    out += "claims\n";
    for (const ClaimCheck& c : r.claims) {
      out += fmt::format("  {:<18} claimed {:<10} limit {:<10} {:<10} ({:.3g}× the limit): {}\n",
                         c.key, FormatSi(c.claimed), FormatSi(c.bound),
                         c.possible ? "possible" : "IMPOSSIBLE", c.claimed / c.bound, c.reason);
    }
  }
  return out;
}

json CheckReportJson(const CheckReport& r) {
  const Bounds& b = r.bounds;
  json claims = json::array();
  for (const ClaimCheck& c : r.claims) {
    claims.push_back({{"claim", c.key},
                      {"claimed", c.claimed},
                      {"limit", c.bound},
                      {"possible", c.possible},
                      {"margin", c.margin},
                      {"reason", c.reason}});
  }
  json memory = json::array();
  for (const RankMemory& m : r.memory.ranks) memory.push_back(MemoryJson(m));
  return {{"experiment", r.experiment.name},
          {"memory",
           {{"fits", r.memory.Fits()},
            {"capacity", r.memory.capacity},
            {"peak", MemoryJson(r.memory.Peak())},
            {"ranks", memory}}},
          {"cache",
           {{"max_rank_weights", b.max_rank_weights},
            {"cache_bytes", b.cache_bytes},
            {"weights_fit_in_cache", b.max_rank_weights <= b.cache_bytes}}},
          {"bounds",
           {{"ttft", PhaseBoundJson(b.ttft)},
            {"tpot", PhaseBoundJson(b.tpot)},
            {"run_seconds", b.total},
            {"run_dominant", BoundKindName(b.total_dominant)},
            {"prefill_tokens_per_s", b.prefill_tokens_per_s},
            {"decode_tokens_per_s", b.decode_tokens_per_s},
            {"tps", b.tps}}},
          {"claims", claims}};
}

}  // namespace shardscope
