// The analyzer: reads a trace once (streaming) into compact per-rank arrays and
// computes every metric of docs/metrics.md from them — latency, time breakdown,
// communication, utilisation — per rank, per group, per phase and for the run.
#ifndef SHARDSCOPE_ANALYSIS_ANALYZER_H_
#define SHARDSCOPE_ANALYSIS_ANALYZER_H_

#include <string>
#include <vector>

#include "analysis/metric_set.h"
#include "analysis/run_data.h"
#include "core/status.h"
#include "trace/read_stats.h"

namespace shardscope::analysis {

struct AnalysisResult {
  std::string trace_path;
  std::string metadata_path;  // the sidecar metadata file used, if any
  trace::ReadStats stats;
  MetricSet metrics;
};

// Computes every metric; sorts each rank's ops by start time in place.
MetricSet ComputeMetrics(RunData* data);

// Reads `path` and, when it is a store trace ("trace_{ts}.trace"), the
// "metadata_{ts}.json" beside it (which wins over the trace's otherData).
// Errors are the reader's (missing, empty, not JSON, truncated).
StatusOr<AnalysisResult> AnalyzeTraceFile(const std::string& path);

// Expands PATH arguments: a file stays itself; a directory yields every trace
// under it (*.trace, *.json, *.json.gz except metadata_*.json), sorted.
StatusOr<std::vector<std::string>> FindTraceFiles(const std::vector<std::string>& paths);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_ANALYZER_H_
