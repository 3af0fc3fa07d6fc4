// SimulateServing: a served workload end to end in the simulator. Requests
// arrive (serve/request_source.h, or a closed loop that sends the next request
// when one finishes), a router spreads them over the dp replicas (round robin,
// or the replica with the fewest outstanding requests), each replica's
// scheduler (serve/replica_scheduler.h) forms iterations, and each iteration
// takes the time the simulator gives its batch (serve/iteration_cost.h). A
// request that could never fit in a replica's KV cache is rejected and counted.
// Writes a trace with one process per replica (its iterations, its requests on
// lanes, and counters of batch, queue and KV blocks) when asked.
// Deterministic: the same experiment and options give the same results.
#ifndef SHARDSCOPE_SERVE_SERVING_SIMULATOR_H_
#define SHARDSCOPE_SERVE_SERVING_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "serve/kv_budget.h"
#include "serve/served_request.h"
#include "serve/serving_metrics.h"
#include "sim/simulator.h"

namespace shardscope::serve {

struct ServeOptions {
  // Calibration, all-reduce algorithm, trace destination and progress, as for
  // a fixed batch (max_decode_steps does not apply).
  sim::SimOptions sim;
  bool keep_requests = false;  // return every request's record (its row in `run --json`)
};

struct ServingResult {
  ServingMetrics metrics;
  KvBudget kv;               // per replica (disaggregated: per decode instance)
  KvBudget prefill_kv;       // disaggregated: per prefill instance
  int64_t kv_transfers = 0;  // disaggregated: KV caches sent prefill → decode
  double kv_transfer_bytes = 0;
  int64_t replicas = 0;
  int64_t devices = 0;
  int64_t programs_simulated = 0;  // distinct iteration shapes run on the engine
  int64_t ops_simulated = 0;
  double end = 0;  // when the last request finished, seconds
  std::string calibration_source;
  std::vector<std::string> terms;  // fidelity terms on (sim::ActiveTerms); empty: none
  std::string trace_path, metadata_path;
  std::vector<ServedRequest> requests;            // with keep_requests
  std::vector<double> iteration_seconds;          // with keep_requests: each iteration's time
  std::vector<int64_t> iteration_prefill_tokens;  // with keep_requests
};

// Fails when `experiment.serving` is unset, on an invalid plan, a plan with no
// room for the KV cache, a bad calibration file or an I/O error.
StatusOr<ServingResult> SimulateServing(const Experiment& experiment, const ServeOptions& options);

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_SERVING_SIMULATOR_H_
