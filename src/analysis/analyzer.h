// The analyzer: reads a trace once (streaming) into compact per-rank arrays and
// computes every metric of docs/metrics.md from them — latency, time breakdown,
// communication, utilisation — per rank, per group, per phase and for the run.
#ifndef SHARDSCOPE_ANALYSIS_ANALYZER_H_
#define SHARDSCOPE_ANALYSIS_ANALYZER_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/metric_set.h"
#include "analysis/run_data.h"
#include "core/status.h"
#include "importers/format_detect.h"
#include "importers/trace_set.h"
#include "trace/read_stats.h"
#include "trace/run_identity.h"

namespace shardscope::analysis {

// Bus bandwidth of the ops of one collective and dimension in one message-size bucket
// [2^k, 2^(k+1)) bytes: Σ bytes × bus factor / Σ duration (nccl-tests' busbw).
struct SizeBandwidth {
  Collective collective = Collective::kNone;
  Dim dim = Dim::kNone;
  double bucket_bytes = 0;  // 2^k
  double mean_bytes = 0;    // mean message size of its ops
  int64_t ops = 0;
  double busbw = 0;  // B/s
};

// How the ops of one collective, dimension and message-size bucket ran, as a
// simulated trace records it (docs/trace_format.md, args algorithm / protocol /
// all_to_all): "ring/ll", "nvls_tree/simple", "hierarchical", …
struct CommChoice {
  Collective collective = Collective::kNone;
  Dim dim = Dim::kNone;
  double bucket_bytes = 0;  // 2^k
  std::string choice;
  int64_t ops = 0;
};

struct AnalysisResult {
  std::string trace_path;     // the file; for a multi-file set, "<dir> (N files)"
  std::string metadata_path;  // the sidecar metadata file used, if any
  nlohmann::json metadata = nlohmann::json::object();  // that file as parsed; {} without one
  std::vector<std::string> trace_paths;                // every file of the run
  std::string format;                                  // importers::TraceFormatName of the files
  std::vector<std::string> warnings;  // e.g. ranks missing from a set, skewed clocks
  // Experiment, hardware, dtype, backend, nodes, ranks of a run ShardScope recorded (its
  // metadata has "experiment" or "run"); empty for foreign traces.
  trace::RunIdentity identity;
  trace::ReadStats stats;
  MetricSet metrics;
  // Routed-expert tokens by MoE layer and global expert id, summed over phases, steps,
  // ranks and micro-batches (the report's layer × expert heatmap; too many cells for
  // metrics). Empty when the trace has no expert counts.
  std::map<int32_t, std::map<int32_t, int64_t>> expert_tokens;
  // Bus bandwidth against message size (the report's chart), buckets with ops only, by
  // collective, dimension and size.
  std::vector<SizeBandwidth> bandwidth_by_size;
  // A served run's request spans in trace order (the Python package's per-request rows);
  // empty for a run without them.
  std::vector<RequestRec> requests;
  // How those ops ran, where the trace says (simulated runs); by collective,
  // dimension, size and choice. Empty for traces without the args.
  std::vector<CommChoice> comm_choices;
};

// The bandwidth_by_size rows of a run's data.
std::vector<SizeBandwidth> BandwidthBySize(const RunData& data);

// The comm_choices rows of a run's data.
std::vector<CommChoice> CommChoices(const RunData& data);

// The expert_tokens matrix of a run's data.
std::map<int32_t, std::map<int32_t, int64_t>> ExpertTokensByLayer(const RunData& data);

// How to analyse a trace; the defaults take it as it is.
struct AnalyzeOptions {
  // Metadata the trace may lack, e.g. a CCL-Bench workload card (workload_card.h). It only
  // fills gaps (MergeMissingMetadata): the trace's own metadata wins.
  nlohmann::json extra_metadata = nlohmann::json::object();
  // The trace format of every file; nullopt detects each file's from its content.
  std::optional<importers::TraceFormat> format;
  // How the clocks of the ranks of a multi-file set are aligned (importers/trace_set.h).
  importers::ClockAlignment alignment = importers::ClockAlignment::kAsRecorded;
  // A sink that also sees a run's events as they are read or imported (the report's
  // timeline), so the trace is read once; called with the run's trace_path (a file, or
  // a set's label); null (or no function): none.
  std::function<trace::TraceSink*(const std::string& path)> also_read_by;
};

// Computes every metric; sorts each rank's ops by start time in place. The metric
// families run on up to trace::ReadThreads() threads (SHARDSCOPE_THREADS=1, or a run
// of fewer than 65536 ops: one), each into its own set, merged in a fixed order: the
// output is the same with any number.
MetricSet ComputeMetrics(RunData* data);

// Reads `path` and, when it is a store trace ("trace_{ts}.trace"), the
// "metadata_{ts}.json" beside it (which wins over the trace's otherData). A
// foreign trace (Kineto, …) goes through its importer, as a set of one file.
// Errors are the detector's and the reader's (missing, empty, not JSON,
// unknown format, truncated), and a run identity field of the wrong type.
StatusOr<AnalysisResult> AnalyzeTraceFile(const std::string& path,
                                          const AnalyzeOptions& options = {});

// Analyses several files as the ranks of one run (importers::ImportTraceSet):
// metrics over the ranks present; a rank the world size implies but no file
// holds gets a warning, a "missing_ranks" metric and "not available" rank
// metrics. Errors: any file's, a rank in two files, disagreeing world sizes.
StatusOr<AnalysisResult> AnalyzeTraceSet(const std::vector<std::string>& paths,
                                         const AnalyzeOptions& options = {});

// What `shardscope analyze PATH…` analyses: the files under `paths`
// (FindTraceFiles) grouped into runs (importers::GroupTraceFiles: a store trace
// is a run of its own, foreign files of one world form one set), each analysed.
StatusOr<std::vector<AnalysisResult>> AnalyzePaths(const std::vector<std::string>& paths,
                                                   const AnalyzeOptions& options = {});

// Whether a directory listing picks up the file `name`: every format the
// importers read — *.trace, *.trace.gz, *.json, *.json.gz, *.jsonl(.gz), *.xplane.pb.
bool IsTraceFileName(std::string_view name);

// Expands PATH arguments: a file stays itself; a directory yields every trace
// under it (IsTraceFileName, except metadata_*.json and hidden files), sorted.
StatusOr<std::vector<std::string>> FindTraceFiles(const std::vector<std::string>& paths);

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_ANALYZER_H_
