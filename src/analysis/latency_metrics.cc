// TTFT, TPOT (with the per-step distribution), step time and throughput.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "analysis/metric_families.h"
#include "analysis/stats.h"
#include "run/latency.h"

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

// Prefill windows and decode-step ends, from spans when the trace has them, else from ops;
// the figures themselves are run/latency.h's, as every backend reports them.
// Only decode step spans are decode steps: foreign traces' step annotations (phase none)
// feed step_time alone.
run::LatencyWindows<int64_t> LatencyWindowsOf(const Context& ctx) {
  run::LatencyWindows<int64_t> windows;
  bool prefill_spans = false, step_spans = false;
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const SpanRec& s : rd.spans) {
      if (s.kind == trace::SpanKind::kPhase && s.phase == Phase::kPrefill) {
        prefill_spans = true;
        windows.AddPrefill(s.ts, s.end);
      } else if (s.kind == trace::SpanKind::kPhase && s.phase == Phase::kDecode) {
        windows.AddDecodeEnd(s.end);
      } else if (s.kind == trace::SpanKind::kStep && s.phase == Phase::kDecode) {
        step_spans = true;
        windows.AddDecodeStep(s.step, s.end);
      }
    }
  }
  for (const auto& [rank, rd] : ctx.data->ranks) {
    for (const OpRec& op : rd.ops) {
      if (op.phase == Phase::kPrefill && !prefill_spans) {
        windows.AddPrefill(op.ts, op.end);
      } else if (op.phase == Phase::kDecode) {
        if (!step_spans && op.step >= 0) {
          windows.AddDecodeStep(op.step, op.end);
        } else {
          windows.AddDecodeEnd(op.end);
        }
      }
    }
  }
  return windows;
}

// TPOT over numbered decode steps, with the per-step distribution and the decode throughput.
void AddStepTpot(const Context& ctx, const run::LatencyWindows<int64_t>& windows,
                 const run::Latency& latency, const run::Throughput& throughput,
                 const std::string& lacks_batch, MetricSet* out) {
  const int64_t steps = static_cast<int64_t>(windows.step_ends().size());
  const double decode_time = latency.decode_seconds;
  out->Add("tpot", "", latency.tpot, "s", "(last decode step end − TTFT end) / decode steps");
  out->Add("decode_steps", "", static_cast<double>(steps), "count");
  out->Add("generated_tokens", "", static_cast<double>(steps + 1), "tokens",
           "per request: the prefill's token + one per decode step");
  out->Add("decode_time", "", decode_time, "s");
  std::vector<double> per_step;
  int64_t prev = windows.prefill_end();
  for (const auto& [step, end] : windows.step_ends()) {
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
  if (ctx.info.batch_size) {
    out->Add("decode_throughput", "", throughput.decode_tokens_per_s, "tokens/s",
             "batch / TPOT (= batch × decode steps / decode time)");
  } else {
    out->AddUnavailable("decode_throughput", "", "tokens/s", lacks_batch);
  }
}

}  // namespace

void AddLatencyMetrics(const Context& ctx, MetricSet* out) {
  const run::LatencyWindows<int64_t> windows = LatencyWindowsOf(ctx);
  const RunInfo& info = ctx.info;
  const int64_t unnumbered_steps =
      info.tokens_to_generate ? std::max<int64_t>(*info.tokens_to_generate - 1, 0) : 0;
  const run::Latency latency = windows.Compute(unnumbered_steps);
  const run::Throughput throughput =
      run::ComputeThroughput(latency, info.batch_size.value_or(0), info.sequence_length.value_or(0),
                             ctx.window_end > ctx.window_begin ? ctx.window_seconds() : 0);
  const std::string no_prefill =
      "no prefill span and no op with args.phase = \"prefill\" in the trace";
  // Zero-length windows (every prefill op of zero duration, decode steps ending at or
  // before the prefill's end) would give TTFT or TPOT ≤ 0 and infinite throughputs.
  const std::string no_ttft = fmt::format(
      "the prefill window is {:.3g} s long (its spans and ops have zero duration)", latency.ttft);
  const std::string no_tpot = fmt::format(
      "the decode time (last decode step end − prefill end) is {:.3g} s, not positive: zero or "
      "out-of-order durations in the trace",
      latency.decode_seconds);
  const bool has_prefill = latency.has_prefill;
  if (has_prefill && latency.ttft > 0) {
    out->Add("ttft", "", latency.ttft, "s",
             "first prefill start to last prefill end over all ranks");
  } else {
    out->AddUnavailable("ttft", "", "s", has_prefill ? no_ttft : no_prefill);
  }
  const std::string lacks_batch =
      info.WhyNot({"workload.batch_size", "run.batch_size"}, "metadata lacks workload.batch_size");
  const std::string lacks_batch_or_seq = info.WhyNot(
      {"workload.batch_size", "run.batch_size", "workload.sequence_length", "run.sequence_length"},
      "metadata lacks workload.batch_size or workload.sequence_length");
  const int64_t steps = static_cast<int64_t>(windows.step_ends().size());
  const bool has_decode = windows.has_decode();
  if (!has_prefill) {
    out->AddUnavailable("tpot", "", "s", no_prefill + " (TPOT starts where TTFT ends)");
  } else if ((steps > 0 || latency.has_decode) && !(latency.tpot > 0)) {
    out->AddUnavailable("tpot", "", "s", no_tpot);
    out->AddUnavailable("decode_throughput", "", "tokens/s", no_tpot);
  } else if (steps > 0) {
    AddStepTpot(ctx, windows, latency, throughput, lacks_batch, out);
  } else if (latency.has_decode) {
    out->Add("tpot", "", latency.tpot, "s",
             "(decode end − TTFT end) / (workload.tokens_to_generate − 1)");
    out->AddUnavailable("tpot_step.p50", "", "s",
                        "decode ops carry no args.step and the trace has no step spans");
  } else {
    out->AddUnavailable("tpot", "", "s",
                        has_decode ? info.WhyNot({"workload.tokens_to_generate"},
                                                 "no decode steps (args.step or step spans) and "
                                                 "metadata lacks workload.tokens_to_generate")
                                   : "no decode phase in the trace");
  }
  if (has_prefill) {
    if (!(latency.ttft > 0)) {
      out->AddUnavailable("prefill_throughput", "", "tokens/s", no_ttft);
    } else if (info.batch_size && info.sequence_length) {
      out->Add("prefill_throughput", "", throughput.prefill_tokens_per_s, "tokens/s",
               "batch × sequence length / TTFT");
    } else {
      out->AddUnavailable("prefill_throughput", "", "tokens/s", lacks_batch_or_seq);
    }
  } else {
    out->AddUnavailable("prefill_throughput", "", "tokens/s", no_prefill);
  }
  if (info.batch_size && info.sequence_length && ctx.window_end > ctx.window_begin) {
    out->Add("tps", "", throughput.tps, "tokens/s",
             "the seeds' TPS: batch × sequence length / wall time");
  } else {
    out->AddUnavailable(
        "tps", "", "tokens/s",
        info.batch_size && info.sequence_length ? "the trace spans no time" : lacks_batch_or_seq);
  }
  AddStepTime(ctx, out);
}

}  // namespace shardscope::analysis
