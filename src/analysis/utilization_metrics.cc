// FLOPs, MFU, memory-bandwidth utilisation and peak memory.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "analysis/metric_families.h"

namespace shardscope::analysis {
namespace {

using Window = std::optional<std::pair<int64_t, int64_t>>;

// The wall-clock window of one phase over all ranks: its spans, else its ops.
Window PhaseWindow(const RunData& data, Phase phase) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& [rank, rd] : data.ranks) {
    for (const SpanRec& s : rd.spans) {
      if (s.kind == trace::SpanKind::kPhase && s.phase == phase) {
        lo = std::min(lo, s.ts);
        hi = std::max(hi, s.end);
      }
    }
  }
  if (lo >= hi) {
    for (const auto& [rank, rd] : data.ranks) {
      for (const OpRec& op : rd.ops) {
        if (op.phase == phase) {
          lo = std::min(lo, op.ts);
          hi = std::max(hi, op.end);
        }
      }
    }
  }
  if (lo >= hi) return std::nullopt;
  return std::make_pair(lo, hi);
}

// One utilisation family (mfu from flops, mbu from bytes).
void AddUtilization(const Context& ctx, const char* name, const char* amount_name,
                    const std::array<double, trace::kNumPhases> RankData::*amount,
                    std::optional<double> peak, const std::string& missing_peak,
                    const std::string& missing_amount,
                    const std::array<Window, trace::kNumPhases>& phase_windows, MetricSet* out) {
  const RunData& data = *ctx.data;
  double total = 0;
  for (const auto& [rank, rd] : data.ranks) {
    for (double a : rd.*amount) total += a;
  }
  const char* unit = name[1] == 'f' ? "FLOP/s" : "B/s";
  if (total <= 0) {
    out->AddUnavailable(fmt::format("{}.mean", amount_name), "", unit, missing_amount);
    out->AddUnavailable(fmt::format("{}.mean", name), "", "ratio", missing_amount);
    for (const auto& [rank, rd] : data.ranks) {
      out->AddUnavailable(name, RankScope(rank), "ratio", missing_amount);
    }
    return;
  }
  // The achieved rate needs no peak; the utilisation does.
  double window = ctx.window_seconds();
  double sum = 0, max = 0, achieved_sum = 0;
  for (const auto& [rank, rd] : data.ranks) {
    double amt = 0;
    for (double a : rd.*amount) amt += a;
    double achieved = amt / window;
    out->Add(amount_name, RankScope(rank), achieved, unit, "over the wall time");
    achieved_sum += achieved;
    if (!peak) {
      out->AddUnavailable(name, RankScope(rank), "ratio", missing_peak);
      continue;
    }
    double u = achieved / *peak;
    out->Add(name, RankScope(rank), u, "ratio");
    sum += u;
    max = std::max(max, u);
  }
  double ranks = static_cast<double>(ctx.num_ranks());
  out->Add(fmt::format("{}.mean", amount_name), "", achieved_sum / ranks, unit, "mean over ranks");
  if (!peak) {
    out->AddUnavailable(fmt::format("{}.mean", name), "", "ratio", missing_peak);
    return;
  }
  out->Add(fmt::format("{}.mean", name), "", sum / ranks, "ratio", "mean over ranks");
  out->Add(fmt::format("{}.max", name), "", max, "ratio", "max over ranks");
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    std::string scope = fmt::format("phase {}", trace::PhaseName(phase));
    const Window& w = phase_windows[static_cast<int>(phase)];
    if (!w) {
      out->AddUnavailable(fmt::format("{}.mean", name), scope, "ratio",
                          "no such phase in the trace");
      continue;
    }
    double amt = 0;
    for (const auto& [rank, rd] : data.ranks) amt += (rd.*amount)[static_cast<int>(phase)];
    double seconds = Seconds(w->second - w->first);
    out->Add(fmt::format("{}.mean", name), scope, amt / (ranks * seconds) / *peak, "ratio",
             "Σ over ranks / (ranks × phase wall time × peak)");
  }
}

}  // namespace

void AddUtilizationMetrics(const Context& ctx, MetricSet* out) {
  const RunInfo& info = ctx.info;
  std::array<Window, trace::kNumPhases> windows;
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    windows[static_cast<int>(phase)] = PhaseWindow(*ctx.data, phase);
  }
  double flops = 0;
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (double f : rd.flops) flops += f;
  }
  if (flops > 0) {
    out->Add("total_flops", "", flops, "FLOP", "sum over ranks and ops of args.flops");
  } else {
    out->AddUnavailable("total_flops", "", "FLOP", "the trace's ops carry no args.flops");
  }
  AddUtilization(
      ctx, "mfu", "achieved_flops", &RankData::flops, info.peak_flops,
      info.WhyNot({"cluster.device.peak_flops"},
                  info.dtype.empty()
                      ? std::string("metadata lacks workload.dtype and "
                                    "cluster.device.peak_flops")
                      : fmt::format("metadata lacks cluster.device.peak_flops for {}", info.dtype)),
      "the trace's ops carry no args.flops", windows, out);
  AddUtilization(ctx, "mbu", "achieved_memory_bandwidth", &RankData::mem_bytes,
                 info.memory_bandwidth,
                 info.WhyNot({"cluster.device.memory_bandwidth"},
                             "metadata lacks cluster.device.memory_bandwidth"),
                 "the trace's ops carry no args.bytes_read / bytes_written", windows, out);
  bool any = false;
  double peak_max = 0;
  for (const auto& [rank, rd] : ctx.data->ranks) {
    if (!rd.has_memory) continue;
    any = true;
    out->Add("peak_memory", RankScope(rank), rd.peak_memory, "B",
             "max over samples of the sum of the series");
    for (const auto& [series, peak] : rd.peak_by_series) {
      out->Add(fmt::format("peak_memory.{}", series), RankScope(rank), peak, "B");
    }
    peak_max = std::max(peak_max, rd.peak_memory);
  }
  if (any) {
    out->Add("peak_memory.max", "", peak_max, "B", "max over ranks");
  } else {
    out->AddUnavailable("peak_memory.max", "", "B", "the trace has no \"memory\" counter events");
  }
}

}  // namespace shardscope::analysis
