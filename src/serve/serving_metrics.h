// ServingMetrics: the per-request figures of a served run (docs/metrics.md,
// "Serving"): queueing delay, TTFT, TPOT, inter-token latency and end-to-end
// latency as mean and percentiles over the measured requests (warm-up ones
// left out), throughput, goodput under the SLOs, and what the replicas'
// queues, batches and KV caches held over time. Pure functions of the records.
#ifndef SHARDSCOPE_SERVE_SERVING_METRICS_H_
#define SHARDSCOPE_SERVE_SERVING_METRICS_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "analysis/stats.h"
#include "config/serving.h"
#include "serve/served_request.h"

namespace shardscope::serve {

// Time integrals the simulator accumulates as it runs (seconds × count).
struct Occupancy {
  double span = 0;       // seconds from the first arrival to the last finish
  double in_system = 0;  // ∫ requests arrived and not finished (rejections excluded)
  double batch = 0;      // ∫ requests in the running iteration, over busy time
  double busy = 0;       // Σ replicas' busy seconds
  double kv_blocks = 0;  // ∫ KV blocks held, summed over replicas
  int64_t max_batch = 0;
  double max_kv_occupancy = 0;  // the highest share of one replica's blocks in use
  double kv_blocks_total = 0;   // over all replicas
  int64_t replicas = 0;
  int64_t iterations = 0;
};

struct ServingMetrics {
  int64_t requests = 0;  // served and rejected, warm-up included
  int64_t measured = 0;  // served requests the statistics cover
  int64_t warmup = 0;
  int64_t rejected = 0;  // could never fit in a replica's KV cache
  int64_t preemptions = 0;
  analysis::Summary queueing, ttft, tpot, itl, e2e;  // seconds
  double duration = 0;  // first measured arrival → last measured finish
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  double prompt_tokens_per_s = 0;
  double output_tokens_per_s_per_device = 0;
  // Goodput: measured requests within both SLOs per second; attainment: their share.
  double goodput_requests_per_s = 0;
  double slo_attainment = 0;
  bool slo_met = true;  // the p99 TTFT and TPOT are within the SLOs
  // Little's law: time-averaged requests in the system vs arrival rate × mean time in it.
  double mean_in_system = 0;
  double arrival_rate = 0;  // all served requests / span
  double mean_time_in_system = 0;
  double mean_batch = 0;  // requests per iteration, time-weighted
  int64_t max_batch = 0;
  double mean_kv_occupancy = 0;  // share of each replica's KV blocks in use, time-averaged
  double max_kv_occupancy = 0;
  double busy_fraction = 0;  // replica busy time / (replicas × span)
  int64_t iterations = 0;
};

// One served request's figures (docs/metrics.md, "Serving"), the one
// definition the statistics and the per-request rows share: queueing = first
// scheduled − arrival, TTFT = first token − arrival (none for a decode-only
// request: it had no prefill), TPOT = (last token −
// first token) / (output − 1) for output > 1 (none otherwise: a request with
// one output token, or none — EOS first — has no gap), E2E = finish (the
// response, after the response overhead) − arrival. Not for rejected requests.
struct RequestFigures {
  double queueing = 0, e2e = 0;
  std::optional<double> ttft, tpot;
};
RequestFigures FiguresOf(const ServedRequest& r);

// One row per request (warm-up and rejected ones too), in id order: its
// lengths, replica, flags, milestones and figures, in seconds; null where a
// figure does not exist (a rejected request's times, TTFT of a decode-only
// request, TPOT of output ≤ 1, the KV arrival of a request that was not sent
// prefill → decode).
nlohmann::json RequestRowsJson(const std::vector<ServedRequest>& requests);

// `itl` (the measured requests' inter-token gaps) is reordered. `devices`:
// devices of the whole deployment (for tokens/s per device).
ServingMetrics ComputeServingMetrics(const std::vector<ServedRequest>& requests,
                                     std::vector<double> itl, const Occupancy& occupancy,
                                     const SloSpec& slo, int64_t devices);

nlohmann::json ServingMetricsJson(const ServingMetrics& m);

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_SERVING_METRICS_H_
