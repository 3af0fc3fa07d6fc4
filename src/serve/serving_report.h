// What `shardscope run` reports for a served experiment: the per-request
// latency distributions, throughput, goodput against the SLOs and the
// replicas' occupancy, as a text table and as JSON.
#ifndef SHARDSCOPE_SERVE_SERVING_REPORT_H_
#define SHARDSCOPE_SERVE_SERVING_REPORT_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "serve/serving_simulator.h"

namespace shardscope::serve {

struct ServingReport {
  Experiment experiment;
  ServingResult result;
};

std::string ServingReportText(const std::vector<ServingReport>& reports);
nlohmann::json ServingReportJson(const ServingReport& report);

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_SERVING_REPORT_H_
