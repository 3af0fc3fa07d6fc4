// The metric families the analyzer computes, one file each, over a RunData
// whose per-rank ops are sorted by start time. Internal to analysis/;
// docs/metrics.md defines every metric they emit.
#ifndef SHARDSCOPE_ANALYSIS_METRIC_FAMILIES_H_
#define SHARDSCOPE_ANALYSIS_METRIC_FAMILIES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/metric_set.h"
#include "analysis/run_data.h"
#include "analysis/run_info.h"

namespace shardscope::analysis {

// What every family needs: the data, the metadata figures and the run window.
struct Context {
  const RunData* data = nullptr;
  RunInfo info;
  int64_t window_begin = 0;  // earliest op or span start over all ranks (ns)
  int64_t window_end = 0;    // latest op or span end over all ranks (ns)

  double window_seconds() const { return static_cast<double>(window_end - window_begin) * 1e-9; }
  int64_t num_ranks() const { return static_cast<int64_t>(data->ranks.size()); }
};

std::string RankScope(int32_t rank);
// "group tp 0-3", "group pp 0,8": dimension and members in group order.
std::string GroupScope(const GroupInfo& group);
inline double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

// Waits found by matching collectives (per group, in order) and send/recv pairs.
struct SyncResult {
  std::map<int32_t, int64_t> wait_ns;         // per rank: collectives + p2p
  std::map<int32_t, int64_t> recv_wait_ns;    // per rank: receives before the send began
  std::map<int32_t, int64_t> group_wait_ns;   // per group id
  std::map<int32_t, int64_t> last_arrivals;   // per rank: times it arrived last at a collective
  std::map<int32_t, int64_t> last_margin_ns;  // per rank: Σ (last − second-last arrival)
  int64_t matched = 0;                        // collective instances matched across all members
  int64_t unmatched = 0;                      // collective calls beyond the shortest member's count
  int64_t p2p_matched = 0;
  int64_t p2p_unmatched = 0;
};
SyncResult MatchCollectives(const Context& ctx);

void AddLatencyMetrics(const Context& ctx, MetricSet* out);
void AddTimeMetrics(const Context& ctx, const SyncResult& sync, MetricSet* out);
// Communication, in three parts that ComputeMetrics emits in this order: op counts,
// traffic volume and matrix, bandwidth; traffic intervals; synchronisation wait.
void AddCommMetrics(const Context& ctx, MetricSet* out);
void AddTrafficIntervalMetrics(const Context& ctx, MetricSet* out);
void AddSyncMetrics(const Context& ctx, const SyncResult& sync, MetricSet* out);
void AddUtilizationMetrics(const Context& ctx, MetricSet* out);
void AddExpertLoadMetrics(const Context& ctx, MetricSet* out);
// Per-request serving figures, only for traces with request spans.
void AddRequestMetrics(const Context& ctx, MetricSet* out);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_METRIC_FAMILIES_H_
