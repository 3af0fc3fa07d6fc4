// Where each rank's time goes: compute, communication, their overlap, idle
// time, pipeline bubble and synchronisation wait; per rank, per phase and
// aggregated over ranks.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metric_families.h"
#include "analysis/stats.h"

namespace shardscope::analysis {
namespace {

constexpr const char* kNoReceives =
    "no receive ops in the trace (no pipeline stage waits for input)";

struct Breakdown {
  int64_t busy = 0, compute = 0, comm = 0, overlap = 0;
};

// Sums over ranks, in ns as doubles: a run's per-rank times each fit int64,
// their sum over many ranks need not (a trace whose window spans ~2^62 ns
// overflowed it, a fuzzer found). Exact while the sum stays below 2^53 ns.
struct BreakdownSum {
  double busy = 0, compute = 0, comm = 0, overlap = 0;
  void Add(const Breakdown& b) {
    busy += static_cast<double>(b.busy);
    compute += static_cast<double>(b.compute);
    comm += static_cast<double>(b.comm);
    overlap += static_cast<double>(b.overlap);
  }
};
double NsToSeconds(double ns) { return ns * 1e-9; }

// Merged unions of one rank's op intervals (all ops, compute, comm).
struct Unions {
  std::vector<Interval> any, compute, comm;

  void Clear() {
    any.clear();
    compute.clear();
    comm.clear();
  }
  Breakdown Measure() const {
    Breakdown b;
    b.busy = TotalLength(any);
    b.compute = TotalLength(compute);
    b.comm = TotalLength(comm);
    b.overlap = IntersectionLength(comm, compute);
    return b;
  }
};

// Adds [begin, end) to a merged list whose intervals start no later: what
// MergeIntervals does, built as the ops go by.
inline void Extend(std::vector<Interval>* merged, int64_t begin, int64_t end) {
  if (end <= begin) return;
  if (!merged->empty() && begin <= merged->back().end) {
    merged->back().end = std::max(merged->back().end, end);
  } else {
    merged->push_back({begin, end});
  }
}

// One pass over a rank's ops (sorted by start): unions over all ops (u[0]) and
// per phase (u[phase]; the kNone phase is left out).
void BuildUnions(const std::vector<OpRec>& ops, std::array<Unions, trace::kNumPhases>* u) {
  for (Unions& x : *u) x.Clear();
  for (const OpRec& op : ops) {
    int phase = static_cast<int>(op.phase);
    for (Unions* x : {&(*u)[0], phase != 0 ? &(*u)[phase] : nullptr}) {
      if (x == nullptr) continue;
      Extend(&x->any, op.ts, op.end);
      if (op.cat == Category::kCompute) Extend(&x->compute, op.ts, op.end);
      if (op.cat == Category::kComm) Extend(&x->comm, op.ts, op.end);
    }
  }
}

// Idle gaps of a rank that end where a receive begins: waiting for a stage's input.
int64_t IdleBeforeReceives(const std::vector<OpRec>& ops, const std::vector<Interval>& busy,
                           int64_t window_begin) {
  int64_t total = 0;
  int64_t prev_end = window_begin;
  size_t i = 0;  // first op starting at or after the current interval (both sorted by start)
  for (const Interval& iv : busy) {
    if (iv.begin > prev_end) {
      while (i < ops.size() && ops[i].ts < iv.begin) ++i;
      for (size_t j = i; j < ops.size() && ops[j].ts == iv.begin; ++j) {
        if (ops[j].coll == Collective::kRecv) {
          total += iv.begin - prev_end;
          break;
        }
      }
    }
    prev_end = iv.end;
  }
  return total;
}

double Ratio(double num, double den) {
  return den > 0 ? num / den : std::numeric_limits<double>::quiet_NaN();
}

// Balance of compute time across ranks: max / mean, and max / median (the slowest rank
// against the typical one, robust to a few idle ranks). Reorders `per_rank`.
void AddComputeBalance(std::vector<std::pair<double, int32_t>>* per_rank, MetricSet* out) {
  // Ascending time; on equal times the lower rank last, so back() is the lowest slowest rank.
  std::sort(per_rank->begin(), per_rank->end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  });
  std::vector<double> sorted;
  double sum = 0;
  for (const auto& [t, rank] : *per_rank) {
    sorted.push_back(t);
    sum += t;
  }
  if (sorted.empty() || sorted.back() <= 0) {
    for (const char* name : {"compute_imbalance", "straggler_slowdown"}) {
      out->AddUnavailable(name, "", "ratio", "the trace has no compute ops");
    }
    return;
  }
  const double max = sorted.back();
  out->Add("compute_imbalance", "", max / (sum / static_cast<double>(sorted.size())), "ratio",
           "compute time: max over ranks / mean over ranks");
  const double median = Percentile(sorted, 50);
  if (median > 0) {
    out->Add("straggler_slowdown", "", max / median, "ratio",
             "compute time: max over ranks / median over ranks");
    out->Add("straggler_slowdown.rank", "", per_rank->back().second, "rank",
             "the rank with the most compute time (the lowest such rank on ties)");
  } else {
    out->AddUnavailable("straggler_slowdown", "", "ratio", "the median rank has no compute time");
  }
}

// What AddTimeMetrics sums and maxes over ranks besides the breakdowns.
struct RankTotals {
  double idle_sum = 0, bubble_sum = 0, wait_sum = 0;
  int64_t idle_max = 0, bubble_max = 0, wait_max = 0;
  std::vector<double> busy_per_rank;
  std::vector<std::pair<double, int32_t>> compute_per_rank;  // (compute time, rank)
};

// Why no collective wait can be known ("" when it can): a wait needs every member's
// calls, not known when members or groups are (foreign traces).
std::string NoWaitReason(const Context& ctx) {
  return !ctx.data->missing_ranks.empty()
             ? "ranks are missing from the trace set: collectives with them cannot be matched"
         : ctx.data->comm_ops_without_group > 0
             ? "comm ops whose group or collective the trace does not give cannot be matched"
             : "";
}

// One rank's whole-run metrics (`b`: its breakdown over all ops, `busy` their union),
// added to `totals`.
void AddRankTimes(const Context& ctx, const SyncResult& sync, const std::string& no_wait,
                  bool any_recv, int32_t rank, const RankData& rd, const Breakdown& b,
                  const std::vector<Interval>& busy, RankTotals* totals, MetricSet* out) {
  const std::string scope = RankScope(rank);
  const int64_t window = ctx.window_end - ctx.window_begin;
  out->Add("busy_time", scope, Seconds(b.busy), "s");
  out->Add("compute_time", scope, Seconds(b.compute), "s");
  out->Add("comm_time", scope, Seconds(b.comm), "s");
  out->Add("overlap_time", scope, Seconds(b.overlap), "s");
  out->Add("exposed_comm_time", scope, Seconds(b.comm - b.overlap), "s");
  out->Add("comm_ratio", scope, Ratio(b.comm, b.compute), "ratio");
  out->Add("comm_fraction", scope, Ratio(b.comm, b.comm + b.compute), "ratio");
  if (b.comm > 0) {
    out->Add("overlap", scope, Ratio(b.overlap, b.comm), "ratio");
  } else {
    out->AddUnavailable("overlap", scope, "ratio", "the rank has no communication");
  }
  int64_t idle = window - b.busy;
  out->Add("idle_time", scope, Seconds(idle), "s");
  totals->idle_sum += static_cast<double>(idle);
  totals->idle_max = std::max(totals->idle_max, idle);
  totals->busy_per_rank.push_back(Seconds(b.busy));
  totals->compute_per_rank.emplace_back(Seconds(b.compute), rank);
  auto rw = sync.recv_wait_ns.find(rank);
  int64_t bubble = IdleBeforeReceives(rd.ops, busy, ctx.window_begin) +
                   (rw == sync.recv_wait_ns.end() ? 0 : rw->second);
  if (any_recv) {
    out->Add("pipeline_bubble", scope, Seconds(bubble), "s");
  } else {
    out->AddUnavailable("pipeline_bubble", scope, "s", kNoReceives);
  }
  totals->bubble_sum += static_cast<double>(bubble);
  totals->bubble_max = std::max(totals->bubble_max, bubble);
  auto w = sync.wait_ns.find(rank);
  int64_t wait = w == sync.wait_ns.end() ? 0 : w->second;
  if (!no_wait.empty()) {  // calls that cannot be matched: no wait known
    out->AddUnavailable("sync_wait", scope, "s", no_wait);
  } else {
    out->Add("sync_wait", scope, Seconds(wait), "s");
  }
  totals->wait_sum += static_cast<double>(wait);
  totals->wait_max = std::max(totals->wait_max, wait);
}

// The breakdown's aggregates over ranks of one phase filter (`f` = 0: all ops;
// `filter`: the filter's phase otherwise).
void AddBreakdownAggregates(size_t f, int filter, bool present, const BreakdownSum& s,
                            const Breakdown& m, double ranks, MetricSet* out) {
  std::string scope = f == 0 ? "" : fmt::format("phase {}", trace::PhaseName(Phase(filter)));
  if (!present) {
    for (const char* name : {"compute_time.max", "comm_time.max"}) {
      out->AddUnavailable(name, scope, "s",
                          fmt::format("no op with args.phase = \"{}\" in the trace",
                                      trace::PhaseName(Phase(filter))));
    }
    return;
  }
  if (f == 0) {
    out->Add("busy_time.max", scope, Seconds(m.busy), "s", "max over ranks");
    out->Add("busy_time.mean", scope, NsToSeconds(s.busy) / ranks, "s", "mean over ranks");
  }
  out->Add("compute_time.max", scope, Seconds(m.compute), "s", "max over ranks");
  out->Add("compute_time.mean", scope, NsToSeconds(s.compute) / ranks, "s", "mean over ranks");
  out->Add("comm_time.max", scope, Seconds(m.comm), "s", "max over ranks");
  out->Add("comm_time.mean", scope, NsToSeconds(s.comm) / ranks, "s", "mean over ranks");
  out->Add("exposed_comm_time.max", scope, Seconds(m.overlap), "s", "max over ranks");
  out->Add("exposed_comm_time.mean", scope, NsToSeconds(s.comm - s.overlap) / ranks, "s",
           "mean over ranks");
  out->Add("comm_ratio", scope, Ratio(s.comm, s.compute), "ratio", "Σ comm / Σ compute over ranks");
  out->Add("comm_fraction", scope, Ratio(s.comm, s.comm + s.compute), "ratio",
           "Σ comm / Σ (comm + compute) over ranks");
  if (s.comm > 0) {
    out->Add("overlap", scope, Ratio(s.overlap, s.comm), "ratio", "Σ overlap / Σ comm over ranks");
  } else {
    out->AddUnavailable("overlap", scope, "ratio", "no communication in the trace");
  }
}

// Idle time, pipeline bubble, sync wait, load balance and stragglers over ranks.
void AddRankAggregates(const Context& ctx, const SyncResult& sync, const std::string& no_wait,
                       bool any_recv, RankTotals* totals, MetricSet* out) {
  const int64_t window = ctx.window_end - ctx.window_begin;
  const double ranks = static_cast<double>(ctx.num_ranks());
  const RankTotals& t = *totals;
  out->Add("idle_time.max", "", Seconds(t.idle_max), "s", "max over ranks");
  out->Add("idle_time.mean", "", NsToSeconds(t.idle_sum) / ranks, "s", "mean over ranks");
  if (any_recv) {
    out->Add("pipeline_bubble.max", "", Seconds(t.bubble_max), "s", "max over ranks");
    out->Add("pipeline_bubble.mean", "", NsToSeconds(t.bubble_sum) / ranks, "s", "mean over ranks");
    out->Add("bubble_fraction", "", Ratio(NsToSeconds(t.bubble_sum), ranks * Seconds(window)),
             "ratio", "Σ bubble / (ranks × wall time)");
  } else {
    for (const char* name : {"pipeline_bubble.max", "pipeline_bubble.mean", "bubble_fraction"}) {
      out->AddUnavailable(name, "", name[0] == 'b' ? "ratio" : "s", kNoReceives);
    }
  }
  if (!no_wait.empty()) {
    for (const char* name : {"sync_wait.max", "sync_wait.mean", "sync_wait.sum"}) {
      out->AddUnavailable(name, "", "s", no_wait);
    }
  } else {
    out->Add("sync_wait.max", "", Seconds(t.wait_max), "s", "max over ranks");
    out->Add("sync_wait.mean", "", NsToSeconds(t.wait_sum) / ranks, "s", "mean over ranks");
    out->Add("sync_wait.sum", "", NsToSeconds(t.wait_sum), "s", "sum over ranks");
  }
  // Load balance and stragglers.
  double busy_max = 0, busy_mean = 0;
  for (double b : t.busy_per_rank) {
    busy_max = std::max(busy_max, b);
    busy_mean += b / ranks;
  }
  out->Add("load_imbalance", "", Ratio(busy_max, busy_mean), "ratio",
           "busy time: max over ranks / mean over ranks");
  AddComputeBalance(&totals->compute_per_rank, out);
  if (!sync.last_arrivals.empty()) {
    auto it = std::max_element(sync.last_arrivals.begin(), sync.last_arrivals.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
    out->Add("straggler_rank", "", it->first, "rank", "the rank last at collectives most often");
    out->Add("straggler_count", "", static_cast<double>(it->second), "count");
    out->Add("straggler_margin.mean", "",
             Seconds(sync.last_margin_ns.at(it->first)) / static_cast<double>(it->second), "s",
             "mean of (its arrival − the second-last arrival) where it was last");
  } else {
    out->AddUnavailable("straggler_rank", "", "rank",
                        "no collective had a single last arrival (or none could be matched)");
  }
}

}  // namespace

void AddTimeMetrics(const Context& ctx, const SyncResult& sync, MetricSet* out) {
  const std::string no_wait = NoWaitReason(ctx);
  const double ranks = static_cast<double>(ctx.num_ranks());
  // Σ over ranks and max over ranks, per phase filter (-1 = all, then prefill, decode).
  constexpr std::array<int, 3> kFilters = {-1, static_cast<int>(Phase::kPrefill),
                                           static_cast<int>(Phase::kDecode)};
  std::array<BreakdownSum, 3> sum{};
  std::array<Breakdown, 3> max{};
  RankTotals totals;
  bool any_recv = false;
  // unions[f] matches kFilters[f]: all ops, then prefill, then decode. Reused across ranks.
  std::array<Unions, trace::kNumPhases> unions;
  static_assert(kFilters.size() == trace::kNumPhases && kFilters[1] == 1 && kFilters[2] == 2);
  // Phase scopes only for phases the trace has (foreign traces have none): never a 0 for
  // a phase that is not there.
  std::array<bool, 3> present = {true, false, false};
  // And whether any rank receives: without receives no stage waits for input, and
  // pipeline_bubble is not available for any rank (never a 0 for it).
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const OpRec& op : rd.ops) {
      present[static_cast<size_t>(op.phase)] = true;
      any_recv = any_recv || op.coll == Collective::kRecv;
    }
  }
  for (const auto& [rank, rd] : ctx.data->ranks) {
    BuildUnions(rd.ops, &unions);
    for (size_t f = 0; f < kFilters.size(); ++f) {
      Breakdown b = unions[f].Measure();
      sum[f].Add(b);
      max[f].busy = std::max(max[f].busy, b.busy);
      max[f].compute = std::max(max[f].compute, b.compute);
      max[f].comm = std::max(max[f].comm, b.comm);
      max[f].overlap = std::max(max[f].overlap, b.comm - b.overlap);  // exposed
      if (f == 0) {
        AddRankTimes(ctx, sync, no_wait, any_recv, rank, rd, b, unions[f].any, &totals, out);
      } else if (present[f]) {
        std::string ps =
            fmt::format("{} phase {}", RankScope(rank), trace::PhaseName(Phase(kFilters[f])));
        out->Add("compute_time", ps, Seconds(b.compute), "s");
        out->Add("comm_time", ps, Seconds(b.comm), "s");
        out->Add("overlap_time", ps, Seconds(b.overlap), "s");
      }
    }
  }
  // Aggregates over ranks.
  for (size_t f = 0; f < kFilters.size(); ++f) {
    AddBreakdownAggregates(f, kFilters[f], present[f], sum[f], max[f], ranks, out);
  }
  AddRankAggregates(ctx, sync, no_wait, any_recv, &totals, out);
}

}  // namespace shardscope::analysis
