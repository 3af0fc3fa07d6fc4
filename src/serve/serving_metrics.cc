#include "serve/serving_metrics.h"

#include <algorithm>
#include <limits>

namespace shardscope::serve {
namespace {

nlohmann::json SummaryJson(const analysis::Summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90},
          {"p99", s.p99},     {"min", s.min},   {"max", s.max}};
}

}  // namespace

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
    prompt_tokens += static_cast<double>(r.prompt);
    queueing.push_back(r.first_scheduled - r.arrival);
    const double t_first = r.first_token - r.arrival;
    ttft.push_back(t_first);
    e2e.push_back(r.finish - r.arrival);
    double t_out = 0;
    if (r.output > 1) {
      // Last token, not finish: the response overhead (calibration) is not a token's.
      t_out = (r.last_token - r.first_token) / static_cast<double>(r.output - 1);
      tpot.push_back(t_out);
    }
    if ((slo.ttft <= 0 || t_first <= slo.ttft) && (slo.tpot <= 0 || t_out <= slo.tpot)) ++good;
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
    m.slo_met = (slo.ttft <= 0 || m.ttft.p99 <= slo.ttft) &&
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
