// Candidate: one point of the search space — a parallel plan (sizes, mesh order,
// ring variant, pipeline micro-batches), the requests each replica serves and
// how many replicas serve the whole batch — and the enumeration of every
// candidate a SearchSpec allows, in one deterministic order.
#ifndef SHARDSCOPE_SEARCH_CANDIDATE_H_
#define SHARDSCOPE_SEARCH_CANDIDATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "search/search_spec.h"

namespace shardscope::search {

struct Candidate {
  int64_t index = 0;  // position in enumeration order
  ParallelSpec parallel;
  int64_t batch = 1;     // requests per replica
  int64_t replicas = 1;  // ceil(total requests / batch)
  int64_t world() const { return parallel.world_size(); }
  int64_t devices() const { return replicas * world(); }
};

// "tp8·pp2 mb4", "sp16 ring", "ep8·tp2 [ep,tp]" (mesh order shown when it is not
// the default one), then " b32" (requests per replica).
std::string PlanLabel(const Candidate& c);

// The experiment one replica of `c` runs: `base` with the candidate's plan and
// batch; the name says which candidate it is.
Experiment CandidateExperiment(const Experiment& base, const Candidate& c);

// The device budget: spec.max_devices, else the cluster's devices.
int64_t DeviceBudget(const Experiment& base, const SearchSpec& spec);

// Calls `visit` for every candidate in enumeration order (sizes ascending: tp,
// pp, sp, ep, dp; then ring variant, mesh order, batch, micro-batches) whose
// world size is within the device budget. Mesh orders: see SearchSpec::orders;
// a plan inside one NVSwitch domain gets the default order only. Stops early when `visit` returns
// false. Returns how many were visited.
int64_t EnumerateCandidates(const Experiment& base, const SearchSpec& spec,
                            const std::function<bool(const Candidate&)>& visit);

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_CANDIDATE_H_
