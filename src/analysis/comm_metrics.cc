// Communication: op counts and summed durations, traffic volume (by collective and
// dimension), the rank × rank traffic matrix, bandwidth (algbw, busbw, utilisation) per
// group, per collective and for the run, traffic intervals and synchronisation wait per group.
// AddCommMetrics, AddTrafficIntervalMetrics and AddSyncMetrics emit them in that order
// (ComputeMetrics may run the three at once), one helper per part.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/metric_families.h"
#include "analysis/stats.h"

namespace shardscope::analysis {
namespace {

void AddSummary(const std::string& name, const std::string& scope, std::vector<double>* values,
                MetricSet* out, const std::string& aggregation) {
  if (values->empty()) {
    out->AddUnavailable(name + ".mean", scope, "s", "fewer than two communication ops");
    return;
  }
  Summary s = Summarize(values);
  out->Add(name + ".mean", scope, s.mean, "s", aggregation);
  out->Add(name + ".min", scope, s.min, "s", aggregation);
  out->Add(name + ".p50", scope, s.p50, "s", aggregation);
  out->Add(name + ".p99", scope, s.p99, "s", aggregation);
  out->Add(name + ".max", scope, s.max, "s", aggregation);
}

// Peak one-direction bandwidth per device of the links a group spans, if known.
std::optional<double> LinkPeak(const RunInfo& info, const GroupInfo& group, std::string* reason) {
  if (!info.scale_up_domain) {
    *reason = info.WhyNot({"cluster.scale_up.domain_size", "cluster.devices_per_node"},
                          "metadata lacks cluster.scale_up.domain_size and "
                          "cluster.devices_per_node");
    return std::nullopt;
  }
  int64_t domain = group.ranks.front() / *info.scale_up_domain;
  bool inside = std::all_of(group.ranks.begin(), group.ranks.end(),
                            [&](int32_t r) { return r / *info.scale_up_domain == domain; });
  if (inside && *info.scale_up_domain > 1) {
    if (!info.scale_up_bandwidth) {
      *reason = info.WhyNot({"cluster.scale_up.bandwidth_per_device"},
                            "metadata lacks cluster.scale_up.bandwidth_per_device");
    }
    return info.scale_up_bandwidth;
  }
  if (!info.scale_out_bandwidth) {
    *reason = info.WhyNot({"cluster.scale_out.nic_bandwidth_per_device"},
                          "metadata lacks cluster.scale_out.nic_bandwidth_per_device");
  }
  return info.scale_out_bandwidth;
}

// Foreign traces may not say what a comm op moved or between whom: then no partial
// traffic sums are reported, and this says why.
struct Sizing {
  bool unsized = false;
  std::string reason;
};

// Where the format keeps a comm op's message size, for "not available" reasons.
std::string SizeSource(const RunData& data) {
  if (data.format.starts_with("kineto")) {
    return "\"In msg nelems\" and \"dtype\" of the NCCL kernel or its host call, or the host "
           "call's \"Input Dims\" (a profile recorded with shapes)";
  }
  if (data.format.starts_with("xla") || data.format.starts_with("xspace")) {
    return "the collective's HLO shape";
  }
  if (data.format.starts_with("nccl")) return "the event's count and datatype";
  return "args.bytes";
}

// Where the format keeps a collective's group, for "not available" reasons.
std::string GroupSource(const RunData& data) {
  if (data.format.starts_with("kineto")) {
    return "Kineto keeps it in \"Process Group Ranks\", \"Group size\" or distributedInfo's "
           "pg_config; a set of every rank's file without them is taken as the whole world "
           "when all ranks ran the same calls";
  }
  if (data.format.starts_with("xla") || data.format.starts_with("xspace")) {
    return "the collective's HLO replica_groups";
  }
  if (data.format.starts_with("nccl")) return "the communicator's ranks";
  return "args.group";
}

Sizing SizingOf(const RunData& data) {
  Sizing s;
  s.unsized = data.comm_ops_without_bytes > 0 || data.comm_ops_without_group > 0;
  std::vector<std::string> parts;
  if (data.comm_ops_without_bytes > 0) {
    parts.push_back(
        fmt::format("{} comm op(s) without a message size", data.comm_ops_without_bytes));
  }
  // Wire bytes follow from the payload through the algorithm, which needs the
  // collective and the group size (or the peer).
  const int64_t no_group = data.comm_ops_without_group - data.comm_ops_unknown_collective;
  if (no_group > 0) {
    parts.push_back(fmt::format(
        "{} comm op(s) without a group: the wire bytes of a collective depend on its group "
        "size ({})",
        no_group, GroupSource(data)));
  }
  if (data.comm_ops_unknown_collective > 0) {
    parts.push_back(fmt::format(
        "{} comm op(s) whose collective is unknown: the algorithm that moved them is not known",
        data.comm_ops_unknown_collective));
  }
  s.reason = fmt::format("{} (the trace does not say)", fmt::join(parts, "; "));
  return s;
}

// Comm op counts and summed op durations: per rank and in total, per collective and per
// dimension. Returns the number of comm ops over all ranks.
int64_t AddOpCounts(const RunData& data, MetricSet* out) {
  int64_t comm_ops = 0;
  std::array<int64_t, trace::kNumCollectives> ops_by_collective{};
  std::array<double, trace::kNumCollectives> time_by_collective{};  // Σ op durations (s)
  std::array<double, trace::kNumDimPositions> time_by_dim{};        // by trace::DimPosition
  double op_time = 0;
  for (const auto& [rank, rd] : data.ranks) {
    int64_t n = 0;
    for (const OpRec& op : rd.ops) {
      if (op.cat != Category::kComm) continue;
      ++n;
      const double seconds = Seconds(op.end - op.ts);
      op_time += seconds;
      ++ops_by_collective[static_cast<int>(op.coll)];
      time_by_collective[static_cast<int>(op.coll)] += seconds;
      time_by_dim[trace::DimPosition(op.dim)] += seconds;
    }
    out->Add("comm_ops", RankScope(rank), static_cast<double>(n), "count");
    comm_ops += n;
  }
  out->Add("comm_ops", "", static_cast<double>(comm_ops), "count", "sum over ranks");
  out->Add("comm_op_time", "", op_time, "s", "sum over ranks and comm ops of their durations");
  if (comm_ops > 0) {
    out->Add("comm_op_duration.mean", "", op_time / static_cast<double>(comm_ops), "s",
             "mean over all ranks' comm ops");
  } else {
    out->AddUnavailable("comm_op_duration.mean", "", "s", "the trace has no comm ops");
  }
  for (int c = 0; c < trace::kNumCollectives; ++c) {
    if (ops_by_collective[c] == 0) continue;
    std::string_view name = trace::CollectiveName(Collective(c));
    std::string scope = fmt::format("collective {}", name.empty() ? "none" : name);
    out->Add("comm_ops", scope, static_cast<double>(ops_by_collective[c]), "count",
             "sum over ranks");
    out->Add("comm_op_time", scope, time_by_collective[c], "s", "sum over ranks");
  }
  for (int d = 0; d < trace::kNumDimPositions; ++d) {
    if (time_by_dim[d] <= 0) continue;
    std::string_view name = DimName(trace::kDimListOrder[d]);
    out->Add("comm_op_time", fmt::format("dim {}", name.empty() ? "none" : name), time_by_dim[d],
             "s", "sum over ranks");
  }
  return comm_ops;
}

// Wire traffic and payload bytes: in total, per collective and per dimension.
void AddTrafficVolume(const RunData& data, int64_t comm_ops, const Sizing& sizing, MetricSet* out) {
  double total = 0;
  for (double b : data.traffic_by_collective) total += b;
  if (sizing.unsized) {
    out->AddUnavailable("traffic_bytes", "", "B", sizing.reason);
  } else {
    out->Add("traffic_bytes", "", total, "B", "sum over ranks of bytes sent on the wire");
  }
  double payload = 0;
  for (double b : data.payload_by_collective) payload += b;
  if (comm_ops > 0 && payload <= 0) {
    out->AddUnavailable("payload_bytes", "", "B",
                        "no comm op of the trace has a message size (" + SizeSource(data) + ")");
  } else if (data.comm_ops_without_bytes > 0) {
    // The payload needs sizes only (groups matter for traffic, not for it).
    out->AddUnavailable("payload_bytes", "", "B",
                        fmt::format("{} comm op(s) without a message size ({})",
                                    data.comm_ops_without_bytes, SizeSource(data)));
  } else {
    out->Add("payload_bytes", "", payload, "B", "sum over ranks and comm ops of the message sizes");
  }
  // Payload needs sizes only: per collective and dimension even where the groups, and so
  // the wire bytes, are unknown.
  const bool payload_known = data.comm_ops_without_bytes == 0;
  for (int c = 1; c < trace::kNumCollectives; ++c) {
    std::string scope = fmt::format("collective {}", trace::CollectiveName(Collective(c)));
    if (data.payload_by_collective[c] <= 0 && data.traffic_by_collective[c] <= 0) continue;
    if (!sizing.unsized) {
      out->Add("traffic_bytes", scope, data.traffic_by_collective[c], "B", "sum over ranks");
    } else if (payload_known) {
      out->AddUnavailable("traffic_bytes", scope, "B", sizing.reason);
    }
    if (payload_known) {
      out->Add("payload_bytes", scope, data.payload_by_collective[c], "B", "sum over ranks");
    }
  }
  for (int d = 0; d < trace::kNumDimPositions; ++d) {
    std::string_view name = DimName(trace::kDimListOrder[d]);
    std::string scope = fmt::format("dim {}", name.empty() ? "none" : name);
    if (data.payload_by_dim[d] <= 0 && data.traffic_by_dim[d] <= 0) continue;
    if (!sizing.unsized) {
      out->Add("traffic_bytes", scope, data.traffic_by_dim[d], "B", "sum over ranks");
    }
    if (payload_known) {
      out->Add("payload_bytes", scope, data.payload_by_dim[d], "B", "sum over ranks");
    }
  }
  if (data.comm_ops_outside_group > 0) {
    out->Add("comm_ops_outside_group", "", static_cast<double>(data.comm_ops_outside_group),
             "count", "collectives whose rank is not in args.group: no traffic counted");
  }
}

// The rank × rank traffic matrix and its row sums (bytes sent per rank).
void AddTrafficMatrix(const RunData& data, const Sizing& sizing, MetricSet* out) {
  std::map<std::pair<uint32_t, uint32_t>, double> matrix;
  for (const auto& [key, bytes] : data.traffic) matrix[{key >> 32, key & 0xffffffffu}] = bytes;
  if (sizing.unsized) {
    out->AddUnavailable("traffic_matrix", "", "B", sizing.reason);
    matrix.clear();
  }
  for (const auto& [ij, bytes] : matrix) {
    out->Add("traffic_matrix", fmt::format("rank {} -> rank {}", ij.first, ij.second), bytes, "B");
  }
  for (const auto& [rank, rd] : data.ranks) {
    if (rd.comm_ops_without_bytes > 0 || rd.comm_ops_without_group > 0) {
      out->AddUnavailable("bytes_sent", RankScope(rank), "B", sizing.reason);
    } else {
      out->Add("bytes_sent", RankScope(rank), rd.bytes_sent, "B");
    }
  }
}

// Bus bytes and link-peak-seconds summed over groups: utilisation over several groups is
// Σ bus bytes / Σ (duration × peak of the links each group spans).
struct UtilSums {
  double bus_bytes = 0, peak_seconds = 0;
  std::string missing;  // why some group has no peak
};

// What the per-group pass sums for the per-collective and run-wide figures.
struct BandwidthRollup {
  std::map<Collective, BandwidthSums> by_collective;
  std::map<Collective, UtilSums> util_by_collective;
  UtilSums util_all;
};

// Bandwidth of one (group, collective): ops, algbw, busbw and its spread over ops,
// utilisation of the links spanned; adds its sums to `rollup`.
void AddGroupBandwidth(const Context& ctx, const GroupInfo& group, Collective coll,
                       const BandwidthSums& bw, BandwidthRollup* rollup, MetricSet* out) {
  std::string scope = fmt::format("{} {}", GroupScope(group), trace::CollectiveName(coll));
  out->Add("comm_ops", scope, static_cast<double>(bw.ops), "count");
  BandwidthSums& c = rollup->by_collective[coll];
  c.ops += bw.ops;
  c.bytes += bw.bytes;
  c.bus_bytes += bw.bus_bytes;
  c.seconds += bw.seconds;
  if (bw.seconds <= 0 || bw.bytes <= 0) {
    out->AddUnavailable("busbw", scope, "B/s", "zero bytes or zero duration");
    return;
  }
  double busbw = bw.bus_bytes / bw.seconds;
  out->Add("algbw", scope, bw.bytes / bw.seconds, "B/s", "Σ bytes / Σ duration over its ops");
  out->Add("busbw", scope, busbw, "B/s", "Σ bytes × bus factor / Σ duration over its ops");
  std::vector<double> per_op(bw.busbw.begin(), bw.busbw.end());
  Summary s = Summarize(&per_op);
  if (s.count > 0) {
    out->Add("busbw.min", scope, s.min, "B/s", "over its ops");
    out->Add("busbw.p50", scope, s.p50, "B/s", "over its ops");
    out->Add("busbw.max", scope, s.max, "B/s", "over its ops");
  }
  std::string reason;
  UtilSums& u = rollup->util_by_collective[coll];
  if (auto peak = LinkPeak(ctx.info, group, &reason)) {
    out->Add("busbw_util", scope, busbw / *peak, "ratio", "busbw / peak of the links spanned");
    for (UtilSums* x : {&u, &rollup->util_all}) {
      x->bus_bytes += bw.bus_bytes;
      x->peak_seconds += bw.seconds * *peak;
    }
  } else {
    out->AddUnavailable("busbw_util", scope, "ratio", reason);
    u.missing = reason;
    rollup->util_all.missing = reason;
  }
}

// Bandwidth per collective over all its groups; returns the sums over all collectives.
BandwidthSums AddCollectiveBandwidth(const BandwidthRollup& rollup, MetricSet* out) {
  BandwidthSums all;
  for (const auto& [coll, bw] : rollup.by_collective) {
    std::string scope = fmt::format("collective {}", trace::CollectiveName(coll));
    if (bw.seconds > 0 && bw.bytes > 0) {
      out->Add("algbw", scope, bw.bytes / bw.seconds, "B/s", "Σ bytes / Σ duration, all groups");
      out->Add("busbw", scope, bw.bus_bytes / bw.seconds, "B/s",
               "Σ bytes × bus factor / Σ duration, all groups");
      all.bytes += bw.bytes;
      all.bus_bytes += bw.bus_bytes;
      all.seconds += bw.seconds;
    }
    auto it = rollup.util_by_collective.find(coll);
    if (it == rollup.util_by_collective.end()) continue;  // only zero-byte or zero-time groups
    if (!it->second.missing.empty()) {
      out->AddUnavailable("busbw_util", scope, "ratio", it->second.missing);
    } else if (it->second.peak_seconds > 0) {
      out->Add("busbw_util", scope, it->second.bus_bytes / it->second.peak_seconds, "ratio",
               "Σ bytes × bus factor / Σ (duration × link peak), all groups");
    }
  }
  return all;
}

// Bandwidth of the run: over all collectives and groups.
// `no_group`: comm ops without a group (the bus factor needs the group size), for the reason.
void AddRunBandwidth(const BandwidthSums& all, const UtilSums& util_all, int64_t no_group,
                     MetricSet* out) {
  std::string no_bandwidth = "no comm op with bytes and a duration in a group";
  if (no_group > 0) {
    no_bandwidth += fmt::format(
        " ({} comm op(s) without a group: the bus factor depends on the group size)", no_group);
  }
  if (all.seconds > 0 && all.bytes > 0) {
    out->Add("algbw", "", all.bytes / all.seconds, "B/s", "Σ bytes / Σ duration, all collectives");
    out->Add("busbw", "", all.bus_bytes / all.seconds, "B/s",
             "Σ bytes × bus factor / Σ duration, all collectives");
  } else {
    out->AddUnavailable("algbw", "", "B/s", no_bandwidth);
    out->AddUnavailable("busbw", "", "B/s", no_bandwidth);
  }
  if (!util_all.missing.empty()) {
    out->AddUnavailable("busbw_util", "", "ratio", util_all.missing);
  } else if (util_all.peak_seconds > 0) {
    out->Add("busbw_util", "", util_all.bus_bytes / util_all.peak_seconds, "ratio",
             "Σ bytes × bus factor / Σ (duration × link peak), all collectives");
  } else {
    out->AddUnavailable("busbw_util", "", "ratio", no_bandwidth);
  }
}

// Bandwidth per (group, collective), per collective over all groups, and for the run.
void AddBandwidth(const Context& ctx, MetricSet* out) {
  const RunData& data = *ctx.data;
  BandwidthRollup rollup;
  for (const auto& [key, bw] : data.bandwidth) {
    AddGroupBandwidth(ctx, data.groups[key.first], key.second, bw, &rollup, out);
  }
  BandwidthSums all = AddCollectiveBandwidth(rollup, out);
  AddRunBandwidth(all, rollup.util_all,
                  data.comm_ops_without_group - data.comm_ops_unknown_collective, out);
}

// Traffic intervals (gap since the previous comm op ended, time since it started): per
// rank over all its comm ops, pooled over ranks; per group over each member's calls; per
// parallel dimension over each rank's consecutive calls of that dimension ("within"); and
// per ordered pair of dimensions over a rank's consecutive calls that switch from one to
// the other ("across", e.g. a tp all-reduce followed by a pp send). Pooled over ranks.
void AddTrafficIntervals(const RunData& data, MetricSet* out) {
  using Samples = std::pair<std::vector<double>, std::vector<double>>;  // gaps, arrivals
  std::vector<double> all_gaps, all_arrivals;
  // Indexed by group id, dimension and pair of dimensions (a lookup per op, not a map
  // search); an entry with samples is reported, in index order as a map would list it.
  std::vector<Samples> by_group(data.groups.size());
  std::array<Samples, trace::kNumDimPositions> within;  // by trace::DimPosition
  std::array<Samples, trace::kNumDimPositions * trace::kNumDimPositions> across;
  auto add = [](Samples* s, const OpRec& a, const OpRec& b) {
    s->first.push_back(Seconds(b.ts - a.end));
    s->second.push_back(Seconds(b.ts - a.ts));
  };
  auto dim_of = [&](const OpRec& op) {
    return op.group >= 0 ? data.groups[op.group].dim : Dim::kNone;
  };
  std::vector<const OpRec*> prev_in_group(data.groups.size());
  for (const auto& [rank, rd] : data.ranks) {
    std::vector<double> gaps, arrivals;
    std::fill(prev_in_group.begin(), prev_in_group.end(), nullptr);
    std::array<const OpRec*, trace::kNumDimPositions> prev_in_dim{};
    const OpRec* prev = nullptr;
    for (const OpRec& op : rd.ops) {
      if (op.cat != Category::kComm) continue;
      const Dim dim = dim_of(op);
      if (prev) {
        gaps.push_back(Seconds(op.ts - prev->end));
        arrivals.push_back(Seconds(op.ts - prev->ts));
        const Dim prev_dim = dim_of(*prev);
        if (dim != Dim::kNone && prev_dim != Dim::kNone && dim != prev_dim) {
          add(&across[trace::DimPosition(prev_dim) * trace::kNumDimPositions +
                      trace::DimPosition(dim)],
              *prev, op);
        }
      }
      prev = &op;
      if (op.group >= 0) {
        const OpRec*& last = prev_in_group[static_cast<size_t>(op.group)];
        if (last != nullptr) add(&by_group[static_cast<size_t>(op.group)], *last, op);
        last = &op;
      }
      if (dim != Dim::kNone) {
        const OpRec*& last = prev_in_dim[trace::DimPosition(dim)];
        if (last != nullptr) add(&within[trace::DimPosition(dim)], *last, op);
        last = &op;
      }
    }
    all_gaps.insert(all_gaps.end(), gaps.begin(), gaps.end());
    all_arrivals.insert(all_arrivals.end(), arrivals.begin(), arrivals.end());
    std::string scope = RankScope(rank);
    AddSummary("comm_gap", scope, &gaps, out, "over the rank's consecutive comm ops");
    AddSummary("comm_interarrival", scope, &arrivals, out, "over the rank's consecutive comm ops");
  }
  AddSummary("comm_gap", "", &all_gaps, out, "pooled over all ranks");
  AddSummary("comm_interarrival", "", &all_arrivals, out, "pooled over all ranks");
  for (size_t g = 0; g < by_group.size(); ++g) {
    Samples& v = by_group[g];
    if (v.first.empty()) continue;
    std::string scope = GroupScope(data.groups[g]);
    AddSummary("comm_gap", scope, &v.first, out, "pooled over the members' calls on the group");
    AddSummary("comm_interarrival", scope, &v.second, out,
               "pooled over the members' calls on the group");
  }
  for (size_t d = 0; d < within.size(); ++d) {
    Samples& v = within[d];
    if (v.first.empty()) continue;
    const std::string scope = fmt::format("dim {}", DimName(trace::kDimListOrder[d]));
    const char* how = "each rank's consecutive calls of the dimension, pooled over ranks";
    AddSummary("comm_gap", scope, &v.first, out, how);
    AddSummary("comm_interarrival", scope, &v.second, out, how);
  }
  for (size_t i = 0; i < across.size(); ++i) {
    Samples& v = across[i];
    if (v.first.empty()) continue;
    const Dim first = trace::kDimListOrder[i / trace::kNumDimPositions];
    const Dim second = trace::kDimListOrder[i % trace::kNumDimPositions];
    const std::string scope = fmt::format("dims {} -> {}", DimName(first), DimName(second));
    const char* how = "a rank's call of the first dimension followed by one of the second";
    AddSummary("comm_gap", scope, &v.first, out, how);
    AddSummary("comm_interarrival", scope, &v.second, out, how);
  }
}

// Synchronisation wait per group, and how many collectives and send/recv pairs matched.
void AddSyncWaits(const RunData& data, const SyncResult& sync, MetricSet* out) {
  for (const auto& [g, wait] : sync.group_wait_ns) {
    out->Add("sync_wait", GroupScope(data.groups[g]), Seconds(wait), "s", "sum over members");
  }
  out->Add("matched_collectives", "", static_cast<double>(sync.matched), "count");
  if (data.comm_ops_without_group > 0) {
    out->Add("comm_ops_without_group", "", static_cast<double>(data.comm_ops_without_group),
             "count", "comm ops whose group or collective is unknown: never matched");
  }
  out->Add("unmatched_collectives", "", static_cast<double>(sync.unmatched), "count",
           "calls that no call of every other member matches");
  out->Add("matched_p2p", "", static_cast<double>(sync.p2p_matched), "count");
  out->Add("unmatched_p2p", "", static_cast<double>(sync.p2p_unmatched), "count");
}

}  // namespace

void AddCommMetrics(const Context& ctx, MetricSet* out) {
  const RunData& data = *ctx.data;
  const int64_t comm_ops = AddOpCounts(data, out);
  const Sizing sizing = SizingOf(data);
  AddTrafficVolume(data, comm_ops, sizing, out);
  AddTrafficMatrix(data, sizing, out);
  AddBandwidth(ctx, out);
}

void AddTrafficIntervalMetrics(const Context& ctx, MetricSet* out) {
  AddTrafficIntervals(*ctx.data, out);
}

void AddSyncMetrics(const Context& ctx, const SyncResult& sync, MetricSet* out) {
  AddSyncWaits(*ctx.data, sync, out);
}

}  // namespace shardscope::analysis
