#include "serve/serving_metrics.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace shardscope::serve {
namespace {

nlohmann::json SummaryJson(const analysis::Summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90},
          {"p99", s.p99},     {"min", s.min},   {"max", s.max}};
}

}  // namespace

RequestFigures FiguresOf(const ServedRequest& r) {
  RequestFigures f;
  f.queueing = r.first_scheduled - r.arrival;
  if (!r.decode_only) f.ttft = r.first_token - r.arrival;
  f.e2e = r.finish - r.arrival;
  // Last token, not finish: the response overhead (calibration) is not a token's.
  if (r.output > 1) f.tpot = (r.last_token - r.first_token) / static_cast<double>(r.output - 1);
  return f;
}

nlohmann::json RequestRowsJson(const std::vector<ServedRequest>& requests) {
  nlohmann::json rows = nlohmann::json::array();
  auto time = [](double t) { return t >= 0 ? nlohmann::json(t) : nlohmann::json(nullptr); };
  for (const ServedRequest& r : requests) {
    nlohmann::json row = {{"id", r.id},
                          {"arrival_s", r.arrival},
                          {"prompt_tokens", r.prompt},
                          {"output_tokens", r.output},
                          {"replica", r.replica},
                          {"warmup", !r.measured},
                          {"rejected", r.rejected},
                          {"preemptions", r.preemptions},
                          {"decode_only", r.decode_only},
                          {"cached_prompt_tokens", r.cached},
                          {"first_scheduled_s", time(r.first_scheduled)},
                          {"first_token_s", time(r.first_token)},
                          {"last_token_s", time(r.last_token)},
                          {"finish_s", time(r.finish)},
                          {"kv_arrival_s", time(r.kv_arrival)},
                          {"queueing_delay_s", nullptr},
                          {"ttft_s", nullptr},
                          {"tpot_s", nullptr},
                          {"e2e_latency_s", nullptr}};
    if (!r.rejected && r.finish >= 0) {
      const RequestFigures f = FiguresOf(r);
      row["queueing_delay_s"] = f.queueing;
      if (f.ttft) row["ttft_s"] = *f.ttft;
      if (f.tpot) row["tpot_s"] = *f.tpot;
      row["e2e_latency_s"] = f.e2e;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

ServingMetrics ComputeServingMetrics(const std::vector<ServedRequest>& requests,
                                     std::vector<double> itl, const Occupancy& occ,
                                     const SloSpec& slo, int64_t devices) {
  ServingMetrics m;
  m.requests = static_cast<int64_t>(requests.size());
  std::vector<double> queueing, ttft, tpot, e2e;
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  double output_tokens = 0, prompt_tokens = 0, time_in_system = 0;
  int64_t served = 0, good = 0;
  for (const ServedRequest& r : requests) {
    if (r.rejected) {
      ++m.rejected;
      continue;
    }
    ++served;
    time_in_system += r.finish - r.arrival;
    m.preemptions += r.preemptions;
    if (!r.measured) {
      ++m.warmup;
      continue;
    }
    ++m.measured;
    first_arrival = std::min(first_arrival, r.arrival);
    last_finish = std::max(last_finish, r.finish);
    output_tokens += static_cast<double>(r.output);
    // A decode-only request's context was never prefilled: no prompt throughput.
    if (!r.decode_only) prompt_tokens += static_cast<double>(r.prompt);
    const RequestFigures f = FiguresOf(r);
    queueing.push_back(f.queueing);
    if (f.ttft) ttft.push_back(*f.ttft);
    e2e.push_back(f.e2e);
    if (f.tpot) tpot.push_back(*f.tpot);
    if ((slo.ttft <= 0 || !f.ttft || *f.ttft <= slo.ttft) &&
        (slo.tpot <= 0 || !f.tpot || *f.tpot <= slo.tpot)) {
      ++good;
    }
  }
  m.queueing = analysis::Summarize(&queueing);
  m.ttft = analysis::Summarize(&ttft);
  m.tpot = analysis::Summarize(&tpot);
  m.e2e = analysis::Summarize(&e2e);
  m.itl = analysis::Summarize(&itl);
  if (m.measured > 0) {
    m.duration = last_finish - first_arrival;
    if (m.duration > 0) {
      m.requests_per_s = static_cast<double>(m.measured) / m.duration;
      m.output_tokens_per_s = output_tokens / m.duration;
      m.prompt_tokens_per_s = prompt_tokens / m.duration;
      m.output_tokens_per_s_per_device = m.output_tokens_per_s / static_cast<double>(devices);
      m.goodput_requests_per_s = static_cast<double>(good) / m.duration;
    }
    m.slo_attainment = static_cast<double>(good) / static_cast<double>(m.measured);
    m.slo_met = (slo.ttft <= 0 || m.ttft.count == 0 || m.ttft.p99 <= slo.ttft) &&
                (slo.tpot <= 0 || m.tpot.count == 0 || m.tpot.p99 <= slo.tpot);
  }
  if (occ.span > 0) {
    m.mean_in_system = occ.in_system / occ.span;
    m.arrival_rate = static_cast<double>(served) / occ.span;
    m.busy_fraction = occ.busy / (occ.span * static_cast<double>(occ.replicas));
    if (occ.kv_blocks_total > 0)
      m.mean_kv_occupancy = occ.kv_blocks / (occ.span * occ.kv_blocks_total);
  }
  if (served > 0) m.mean_time_in_system = time_in_system / static_cast<double>(served);
  if (occ.busy > 0) m.mean_batch = occ.batch / occ.busy;
  m.max_batch = occ.max_batch;
  m.max_kv_occupancy = occ.max_kv_occupancy;
  m.iterations = occ.iterations;
  return m;
}

nlohmann::json ServingMetricsJson(const ServingMetrics& m) {
  return {{"requests", m.requests},
          {"measured_requests", m.measured},
          {"warmup_requests", m.warmup},
          {"rejected_requests", m.rejected},
          {"preemptions", m.preemptions},
          {"queueing_delay_s", SummaryJson(m.queueing)},
          {"ttft_s", SummaryJson(m.ttft)},
          {"tpot_s", SummaryJson(m.tpot)},
          {"itl_s", SummaryJson(m.itl)},
          {"e2e_latency_s", SummaryJson(m.e2e)},
          {"duration_s", m.duration},
          {"requests_per_s", m.requests_per_s},
          {"output_tokens_per_s", m.output_tokens_per_s},
          {"prompt_tokens_per_s", m.prompt_tokens_per_s},
          {"output_tokens_per_s_per_device", m.output_tokens_per_s_per_device},
          {"goodput_requests_per_s", m.goodput_requests_per_s},
          {"slo_attainment", m.slo_attainment},
          {"slo_met", m.slo_met},
          {"mean_requests_in_system", m.mean_in_system},
          {"arrival_rate_per_s", m.arrival_rate},
          {"mean_time_in_system_s", m.mean_time_in_system},
          {"mean_batch", m.mean_batch},
          {"max_batch", m.max_batch},
          {"mean_kv_occupancy", m.mean_kv_occupancy},
          {"max_kv_occupancy", m.max_kv_occupancy},
          {"busy_fraction", m.busy_fraction},
          {"iterations", m.iterations}};
}

}  // namespace shardscope::serve
