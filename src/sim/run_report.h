// What `shardscope run` reports for one simulated experiment: the simulator's
// figures beside the plan's memory and physical bounds, and each claim as
// claimed vs simulated vs bound. Text (one table) and JSON renderings.
#ifndef SHARDSCOPE_SIM_RUN_REPORT_H_
#define SHARDSCOPE_SIM_RUN_REPORT_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "estimate/bounds.h"
#include "plan/memory.h"
#include "sim/simulator.h"

namespace shardscope::sim {

struct ClaimRow {
  ClaimCheck check;      // claimed and bound (plan/bounds.h)
  double simulated = 0;  // the simulator's figure in the claim's unit; NaN: none
};

struct RunReport {
  Experiment experiment;
  SimResult sim;
  Bounds bounds;
  MemoryPlan memory;
  std::vector<ClaimRow> claims;
};

// Simulates `experiment` and computes its bounds, memory and claim rows.
StatusOr<RunReport> BuildRunReport(const Experiment& experiment, const SimOptions& options);

// One summary table over all reports, then the claim rows and trace paths.
std::string RunReportText(const std::vector<RunReport>& reports);
nlohmann::json RunReportJson(const RunReport& report);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_RUN_REPORT_H_
