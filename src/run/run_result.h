// What a run is asked to do (RunOptions) and what every backend returns
// (RunResult): the same latency figures (run/latency.h), the trace it wrote,
// and the backend's own detail for its report. Plain values.
#ifndef SHARDSCOPE_RUN_RUN_RESULT_H_
#define SHARDSCOPE_RUN_RUN_RESULT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run/latency.h"

namespace shardscope::run {

struct RunOptions {
  bool write_trace = true;
  std::string trace_root = "traces";  // the TraceStore root
  // Non-empty: write the trace to this file (no metadata file) instead of the store.
  std::string trace_file;
  // The experiments YAML the experiment came from (the CPU ranks reload it);
  // empty: Experiment::source_file.
  std::string config_path;
  // sim: efficiency table replacing the defaults, collective algorithm (auto,
  // ring, tree, hierarchical, nvls, nvls_tree), NCCL protocol (auto, ll, ll128,
  // simple) and MoE all-to-all kind of both phases (auto, nccl, hierarchical,
  // low_latency) — auto: the experiment's `communication:` choice — and the
  // decode steps to simulate (−1: all, up to runners::kDefaultMaxDecodeSteps;
  // the rest interpolated, docs/sim.md).
  std::string calibration_file;
  std::string allreduce = "auto";
  std::string protocol = "auto";
  std::string all_to_all = "auto";
  int64_t max_decode_steps = -1;
  // cpu: mpirun's host file and more mpirun options, and the shardscope
  // executable the ranks run (empty: see runtime::CpuRunOptions).
  std::string hostfile;
  std::string worker_binary;
  std::vector<std::string> mpirun_args;
  // cpu: end the job as hung when a rank is blocked on its peers and no rank
  // entered an op for this long (0: never).
  double hang_timeout_seconds = 300;
  // Called with a short status line as the run goes (progress display).
  std::function<void(const std::string&)> progress;
  // Asked between phases; true stops the run with kCancelled and nothing left in
  // the store (Ctrl-C in the command line, KeyboardInterrupt in Python).
  std::function<bool()> cancelled;
};

// A backend's own figures beside the common ones, for its report (e.g. the
// simulator's bounds and claims); runners/ defines the kinds.
class RunDetail {
 public:
  virtual ~RunDetail() = default;
};

struct RunResult {
  std::string experiment;
  std::string backend;  // "sim", "cpu"
  // False on a CPU rank other than 0 started by mpirun: it reports nothing.
  bool report = true;
  int64_t ranks = 0;
  Latency latency;
  Throughput throughput;
  // The trace and its metadata file; empty without a trace (or metadata file).
  std::string trace_path, metadata_path;
  std::shared_ptr<const RunDetail> detail;
};

}  // namespace shardscope::run

#endif  // SHARDSCOPE_RUN_RUN_RESULT_H_
