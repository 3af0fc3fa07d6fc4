// Per-request serving metrics from a served run's request spans
// (trace_format.md, "Request spans"; docs/metrics.md, "Serving"): queueing
// delay, TTFT, TPOT, inter-token latency and end-to-end latency over the
// measured (non-warm-up) requests, throughput, and goodput under the SLO the
// metadata states (experiment.serving.slo). The definitions are the
// serving simulator's (serve/serving_metrics.cc), so a simulated served run
// analysed from its trace gives its own figures back.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "analysis/metric_families.h"
#include "analysis/stats.h"
#include "trace/json_path.h"

namespace shardscope::analysis {
namespace {

void EmitSummary(const std::string& name, std::vector<double>* values, const char* what,
                 MetricSet* out, const char* items = "requests") {
  const Summary s = Summarize(values);
  if (s.count == 0) return;
  for (const auto& [stat, value] :
       {std::pair{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}}) {
    out->Add(fmt::format("{}.{}", name, stat), "", value, "s",
             fmt::format("{} over {} {} ({})", stat, s.count, items, what));
  }
}

// e_i: the request's last token (`last_token_us`), or its span's end when the
// trace does not say (a span that ends with the last token).
int64_t LastTokenNs(const RequestRec& r) {
  return r.args.last_token_ns >= 0 ? r.args.last_token_ns : r.finish_ns;
}

// Inter-token gaps of request `r`: its tokens after the first come at the ends
// of its replica's iterations that decode (`iterations` holds only those) and
// start once it is there (after its first token; on a decode instance, after
// its KV cache arrived) and end by its last token — it runs in each of them
// unless it was preempted.
void AddGaps(const RequestRec& r, const std::vector<std::pair<int64_t, int64_t>>& iterations,
             std::vector<double>* gaps) {
  const int64_t from = std::max(r.args.first_token_ns, r.args.kv_arrival_ns);
  auto it =
      std::lower_bound(iterations.begin(), iterations.end(), std::make_pair(from, int64_t{0}));
  int64_t last = r.args.first_token_ns;
  for (; it != iterations.end() && it->second <= LastTokenNs(r); ++it) {
    gaps->push_back(Seconds(it->second - last));
    last = it->second;
  }
}

}  // namespace

void AddRequestMetrics(const Context& ctx, MetricSet* out) {
  const RunData& data = *ctx.data;
  if (data.requests.empty()) return;  // not a served run
  std::vector<double> queueing, ttft, tpot, e2e, itl;
  // The objectives (seconds; 0: not set, always met) of the run's metadata.
  const nlohmann::json* slo = trace::JsonAt(data.metadata, {"experiment", "serving", "slo"});
  const double slo_ttft = slo != nullptr ? slo->value("ttft_s", 0.0) : 0;
  const double slo_tpot = slo != nullptr ? slo->value("tpot_s", 0.0) : 0;
  int64_t good = 0;
  int64_t measured = 0, warmup = 0, preemptions = 0, preempted = 0, timeless = 0;
  double output_tokens = 0, prompt_tokens = 0;
  int64_t first_arrival = std::numeric_limits<int64_t>::max(), last_finish = 0;
  // Iterations that decode, by start, per replica (a trace may list them out of
  // order): without the "serving" counter's decode series, every iteration.
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> iterations;
  for (const auto& [replica, its] : data.iterations) {
    auto& kept = iterations[replica];
    for (const auto& it : its) {
      auto d = data.iteration_decodes.find({replica, it.first});
      if (d == data.iteration_decodes.end() || d->second > 0) kept.push_back(it);
    }
    std::sort(kept.begin(), kept.end());
  }
  for (const RequestRec& r : data.requests) {
    preemptions += r.args.preemptions;
    if (r.args.warmup) {
      ++warmup;
      continue;
    }
    if (r.args.scheduled_ns < 0 || r.args.first_token_ns < 0) {
      ++timeless;
      continue;
    }
    ++measured;
    first_arrival = std::min(first_arrival, r.arrival_ns);
    last_finish = std::max(last_finish, r.finish_ns);
    output_tokens += static_cast<double>(r.args.output_tokens);
    // A decode-only request's context was never prefilled: no prompt throughput.
    if (!r.args.decode_only) prompt_tokens += static_cast<double>(r.args.prompt_tokens);
    queueing.push_back(Seconds(r.args.scheduled_ns - r.arrival_ns));
    e2e.push_back(Seconds(r.finish_ns - r.arrival_ns));
    bool met = true;
    if (!r.args.decode_only) {  // a decode-only request has no TTFT
      ttft.push_back(Seconds(r.args.first_token_ns - r.arrival_ns));
      met = slo_ttft <= 0 || ttft.back() <= slo_ttft;
    }
    if (r.args.output_tokens > 1) {
      tpot.push_back(Seconds(LastTokenNs(r) - r.args.first_token_ns) /
                     static_cast<double>(r.args.output_tokens - 1));
      met = met && (slo_tpot <= 0 || tpot.back() <= slo_tpot);
    }
    good += met ? 1 : 0;
    if (r.args.preemptions > 0) {
      ++preempted;
    } else if (r.args.output_tokens > 1) {
      auto it = iterations.find(r.replica);
      if (it != iterations.end()) AddGaps(r, it->second, &itl);
    }
  }
  const double n = static_cast<double>(data.requests.size());
  out->Add("requests", "", n, "count", "request spans in the trace");
  out->Add("requests.measured", "", static_cast<double>(measured), "count",
           "requests the statistics cover (warm-up ones left out)");
  out->Add("requests.warmup", "", static_cast<double>(warmup), "count", "");
  out->Add("requests.preemptions", "", static_cast<double>(preemptions), "count",
           "times a request's KV cache was dropped and recomputed");
  if (timeless > 0) {
    out->AddUnavailable("requests.timed", "", "count",
                        fmt::format("{} request spans lack scheduled_us or first_token_us "
                                    "and are left out",
                                    timeless));
  }
  EmitSummary("request.queueing_delay", &queueing, "arrival to first scheduled", out);
  EmitSummary("request.ttft", &ttft, "arrival to first token", out);
  EmitSummary("request.tpot", &tpot, "(last token − first token) / (output tokens − 1)", out);
  EmitSummary("request.e2e_latency", &e2e, "arrival to response (span end)", out);
  if (preempted > 0) {
    out->AddUnavailable("request.itl", "", "s",
                        fmt::format("{} measured requests were preempted: their token times "
                                    "are not in the trace",
                                    preempted));
  } else if (data.iterations.empty()) {
    out->AddUnavailable("request.itl", "", "s", "no iteration spans to time tokens by");
  } else {
    out->Add("request.itl.count", "", static_cast<double>(itl.size()), "count",
             "gaps between consecutive tokens of the measured requests");
    EmitSummary("request.itl", &itl, "gaps between consecutive tokens", out, "gaps");
  }
  if (measured > 0 && last_finish > first_arrival) {
    const double duration = Seconds(last_finish - first_arrival);
    out->Add("serving.requests_per_s", "", static_cast<double>(measured) / duration, "1/s",
             "measured requests / (last finish − first arrival)");
    out->Add("serving.output_tokens_per_s", "", output_tokens / duration, "tokens/s",
             "measured requests' output tokens / the same window");
    out->Add("serving.prompt_tokens_per_s", "", prompt_tokens / duration, "tokens/s",
             "measured requests' prompt tokens / the same window");
    if (slo == nullptr) {
      out->AddUnavailable("serving.goodput_requests_per_s", "", "1/s",
                          "the metadata states no SLO (experiment.serving.slo)");
    } else {
      const std::string objectives =
          fmt::format("TTFT ≤ {}, TPOT ≤ {}", slo_ttft > 0 ? fmt::format("{} s", slo_ttft) : "-",
                      slo_tpot > 0 ? fmt::format("{} s", slo_tpot) : "-");
      out->Add("serving.goodput_requests_per_s", "", static_cast<double>(good) / duration, "1/s",
               fmt::format("measured requests within {} / the same window", objectives));
      out->Add("serving.slo_attainment", "",
               static_cast<double>(good) / static_cast<double>(measured), "ratio",
               fmt::format("measured requests within {} / measured requests", objectives));
    }
  }
}

}  // namespace shardscope::analysis
