// What `shardscope plan` and `shardscope check` report for one experiment, as
// structured data with text and JSON renderings. The command line only loads
// the experiments and prints these.
#ifndef SHARDSCOPE_REPORT_PLAN_REPORT_H_
#define SHARDSCOPE_REPORT_PLAN_REPORT_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "estimate/bounds.h"
#include "model/params.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/program.h"

namespace shardscope {

// One kind of op on one rank: "attention", "expert_gemm", "allreduce.tp", …
struct KindTotals {
  std::string kind;
  int64_t count = 0;
  double flops = 0;
  double bytes = 0;       // read + written (compute ops)
  double comm_bytes = 0;  // message bytes (comm ops)
};

struct PhaseSummary {
  std::string label;  // "prefill", "decode step 0"
  std::vector<OpTotals> per_rank;
  std::vector<KindTotals> rank0_by_kind;  // where rank 0's work goes, by op kind
};

struct PlanReport {
  Experiment experiment;
  Placement placement;
  ParamCounts params;
  MemoryPlan memory;
  std::vector<PhaseSummary> phases;  // prefill and the first decode step
};

StatusOr<PlanReport> BuildPlanReport(const Experiment& experiment);
std::string PlanReportText(const PlanReport& report);
nlohmann::json PlanReportJson(const PlanReport& report);

struct CheckReport {
  Experiment experiment;
  MemoryPlan memory;
  Bounds bounds;
  std::vector<ClaimCheck> claims;
  bool all_possible() const;
};

StatusOr<CheckReport> BuildCheckReport(const Experiment& experiment);
std::string CheckReportText(const CheckReport& report);
nlohmann::json CheckReportJson(const CheckReport& report);

}  // namespace shardscope

#endif  // SHARDSCOPE_REPORT_PLAN_REPORT_H_
