// TTFT, TPOT (with the per-step distribution), step time and throughput.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "analysis/metric_families.h"
#include "analysis/stats.h"

namespace shardscope::analysis {
namespace {

// step_time: per step id, the window from its earliest start to its latest end over all
// ranks' step spans (any phase), and the distribution of those windows.
void AddStepTime(const Context& ctx, MetricSet* out) {
  std::map<int32_t, std::pair<int64_t, int64_t>> windows;
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const SpanRec& s : rd.spans) {
      if (s.kind != trace::SpanKind::kStep) continue;
      auto [it, inserted] = windows.emplace(s.step, std::make_pair(s.ts, s.end));
      if (!inserted) {
        it->second.first = std::min(it->second.first, s.ts);
        it->second.second = std::max(it->second.second, s.end);
      }
    }
  }
  if (windows.empty()) {
    for (const char* name : {"step_time.mean", "step_time.p50", "step_time.p90", "step_time.p99"}) {
      out->AddUnavailable(name, "", "s", "no step annotations");
    }
    out->AddUnavailable("step_time.count", "", "count", "no step annotations");
    return;
  }
  std::vector<double> times;
  for (const auto& [step, w] : windows) times.push_back(Seconds(w.second - w.first));
  Summary s = Summarize(&times);
  const std::string over = "over steps; a step spans its earliest start to latest end over ranks";
  out->Add("step_time.mean", "", s.mean, "s", over);
  out->Add("step_time.p50", "", s.p50, "s", over);
  out->Add("step_time.p90", "", s.p90, "s", over);
  out->Add("step_time.p99", "", s.p99, "s", over);
  out->Add("step_time.count", "", static_cast<double>(s.count), "count", "distinct step ids");
}

}  // namespace

void AddLatencyMetrics(const Context& ctx, MetricSet* out) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // Prefill window and decode-step ends, from spans when the trace has them, else from ops.
  // Only decode step spans are decode steps: foreign traces' step annotations (phase none)
  // feed step_time alone.
  int64_t pf_begin = kMax, pf_end = kMin, dec_end = kMin;
  std::map<int32_t, int64_t> step_end;
  bool prefill_spans = false, step_spans = false;
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const SpanRec& s : rd.spans) {
      if (s.kind == trace::SpanKind::kPhase && s.phase == Phase::kPrefill) {
        prefill_spans = true;
        pf_begin = std::min(pf_begin, s.ts);
        pf_end = std::max(pf_end, s.end);
      } else if (s.kind == trace::SpanKind::kPhase && s.phase == Phase::kDecode) {
        dec_end = std::max(dec_end, s.end);
      } else if (s.kind == trace::SpanKind::kStep && s.phase == Phase::kDecode) {
        step_spans = true;
        auto [it, inserted] = step_end.emplace(s.step, s.end);
        if (!inserted) it->second = std::max(it->second, s.end);
      }
    }
  }
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const OpRec& op : rd.ops) {
      if (op.phase == Phase::kPrefill && !prefill_spans) {
        pf_begin = std::min(pf_begin, op.ts);
        pf_end = std::max(pf_end, op.end);
      } else if (op.phase == Phase::kDecode) {
        dec_end = std::max(dec_end, op.end);
        if (!step_spans && op.step >= 0) {
          auto [it, inserted] = step_end.emplace(op.step, op.end);
          if (!inserted) it->second = std::max(it->second, op.end);
        }
      }
    }
  }
  for (const auto& [step, end] : step_end) dec_end = std::max(dec_end, end);
  const RunInfo& info = ctx.info;
  const std::string no_prefill =
      "no prefill span and no op with args.phase = \"prefill\" in the trace";
  bool has_prefill = pf_begin <= pf_end;
  if (has_prefill) {
    out->Add("ttft", "", Seconds(pf_end - pf_begin), "s",
             "first prefill start to last prefill end over all ranks");
  } else {
    out->AddUnavailable("ttft", "", "s", no_prefill);
  }
  int64_t steps = static_cast<int64_t>(step_end.size());
  bool has_decode = dec_end != kMin;
  std::optional<double> tpot;
  if (!has_prefill) {
    out->AddUnavailable("tpot", "", "s", no_prefill + " (TPOT starts where TTFT ends)");
  } else if (steps > 0) {
    double decode_time = Seconds(dec_end - pf_end);
    tpot = decode_time / static_cast<double>(steps);
    out->Add("tpot", "", *tpot, "s", "(last decode step end − TTFT end) / decode steps");
    out->Add("decode_steps", "", static_cast<double>(steps), "count");
    out->Add("generated_tokens", "", static_cast<double>(steps + 1), "tokens",
             "per request: the prefill's token + one per decode step");
    out->Add("decode_time", "", decode_time, "s");
    std::vector<double> per_step;
    int64_t prev = pf_end;
    for (const auto& [step, end] : step_end) {
      per_step.push_back(Seconds(end - prev));
      prev = end;
    }
    Summary s = Summarize(&per_step);
    out->Add("tpot_step.mean", "", s.mean, "s");
    out->Add("tpot_step.min", "", s.min, "s");
    out->Add("tpot_step.p50", "", s.p50, "s");
    out->Add("tpot_step.p90", "", s.p90, "s");
    out->Add("tpot_step.p99", "", s.p99, "s");
    out->Add("tpot_step.max", "", s.max, "s");
    if (info.batch_size) {
      out->Add("decode_throughput", "", static_cast<double>(*info.batch_size * steps) / decode_time,
               "tokens/s", "batch × decode steps / decode time");
    } else {
      out->AddUnavailable("decode_throughput", "", "tokens/s",
                          "metadata lacks workload.batch_size");
    }
  } else if (has_decode && info.tokens_to_generate && *info.tokens_to_generate > 1) {
    double decode_time = Seconds(dec_end - pf_end);
    tpot = decode_time / static_cast<double>(*info.tokens_to_generate - 1);
    out->Add("tpot", "", *tpot, "s", "(decode end − TTFT end) / (workload.tokens_to_generate − 1)");
    out->AddUnavailable("tpot_step.p50", "", "s",
                        "decode ops carry no args.step and the trace has no step spans");
  } else {
    out->AddUnavailable("tpot", "", "s",
                        has_decode ? "no decode steps (args.step or step spans) and metadata "
                                     "lacks workload.tokens_to_generate"
                                   : "no decode phase in the trace");
  }
  if (has_prefill) {
    if (info.batch_size && info.sequence_length && pf_end > pf_begin) {
      out->Add("prefill_throughput", "",
               static_cast<double>(*info.batch_size * *info.sequence_length) /
                   Seconds(pf_end - pf_begin),
               "tokens/s", "batch × sequence length / TTFT");
    } else {
      out->AddUnavailable("prefill_throughput", "", "tokens/s",
                          "metadata lacks workload.batch_size or workload.sequence_length");
    }
  } else {
    out->AddUnavailable("prefill_throughput", "", "tokens/s", no_prefill);
  }
  if (info.batch_size && info.sequence_length && ctx.window_end > ctx.window_begin) {
    out->Add("tps", "",
             static_cast<double>(*info.batch_size * *info.sequence_length) / ctx.window_seconds(),
             "tokens/s", "the seeds' TPS: batch × sequence length / wall time");
  } else {
    out->AddUnavailable("tps", "", "tokens/s",
                        "metadata lacks workload.batch_size or workload.sequence_length");
  }
  AddStepTime(ctx, out);
}

}  // namespace shardscope::analysis
