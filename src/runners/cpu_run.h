// Running an experiment on the CPU backend: RunCpuExperiment launches the
// plan's ranks through mpirun on `shardscope worker` (or, when this process was
// itself started by mpirun, runs this rank in process); RunCpuWorker is what
// each rank runs — warm-up and measured generations, then rank 0 gathers the
// last measured generation's events (clock offsets removed) and writes the
// trace with backend cpu. A failing rank aborts the whole job with a message
// naming the rank and the op; the trace is written only after every rank
// succeeded, so a failed or interrupted run leaves nothing in the store.
// docs/runtime.md, "Faults" and "Launch".
#ifndef SHARDSCOPE_RUNNERS_CPU_RUN_H_
#define SHARDSCOPE_RUNNERS_CPU_RUN_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "runtime/fault_injection.h"

namespace shardscope::runtime {

struct CpuRunOptions {
  // The experiments YAML the worker reloads the experiment from (by its name);
  // empty: Experiment::source_file.
  std::string config_path;
  std::string trace_root = "traces";  // the TraceStore root
  std::string trace_file;             // non-empty: write the trace here instead (no store)
  bool write_trace = true;
  // Override the workload's warm-up / measured generations (the seeds use 10 + 100).
  std::optional<int64_t> warmup_iterations, measured_iterations;
  // Launch (ignored under mpirun).
  // The shardscope executable the ranks run; empty: $SHARDSCOPE_BINARY, else this
  // executable when it is shardscope, else shardscope on $PATH.
  std::string shardscope_binary;
  std::string mpirun = "mpirun";
  std::string hostfile;                  // several nodes: mpirun's --hostfile
  std::vector<std::string> mpirun_args;  // more mpirun options, before the program
  // The launcher ends the job as hung when some rank is blocked on a comm op and
  // no rank has entered an op for this many seconds (0: wait forever).
  double hang_timeout_seconds = 300;
  // Fault injection (tests): one rank fails at one op.
  FaultSpec fault;
  // Worker side, set by RunCpuExperiment: where rank 0 writes its result JSON
  // and where each rank keeps its RankStatus record.
  std::string result_file;
  std::string status_dir;
};

struct CpuRunResult {
  // False on ranks other than 0 when run in process under mpirun: print nothing there.
  bool root = true;
  int64_t ranks = 0;
  std::string trace_path, metadata_path;
  // Rank 0's wall time of each measured generation, and of its prefill (TTFT)
  // and mean decode step (TPOT), seconds.
  std::vector<double> generation_seconds;
  double ttft_seconds = 0.0, tpot_seconds = 0.0;
  // Generated tokens of each request of the last generation (where rank 0 saw them).
  std::vector<std::vector<int32_t>> tokens;
};

// Outside mpirun: starts mpirun (in its own process group, stdin from
// /dev/null, ended by SIGTERM if this process dies) and waits. SIGINT, SIGTERM
// or SIGHUP meanwhile is forwarded once to mpirun, which ends every rank; the
// result is then kCancelled. A failed job's error names each rank that failed,
// crashed, exited or died, and the op it was in.
StatusOr<CpuRunResult> RunCpuExperiment(const Experiment& experiment, const CpuRunOptions& options);

// One rank's part; needs MPI (initialises it if needed). Returns the result on
// rank 0 (and writes options.result_file when set); other ranks get ranks only.
StatusOr<CpuRunResult> RunCpuWorker(const Experiment& experiment, const CpuRunOptions& options);

// Ok when this build has the CPU backend (MPI and OpenBLAS); otherwise a
// kUnimplemented error naming `experiment` and how to get it.
Status CpuRunnerBuilt(const Experiment& experiment);

// A digest of the experiment as the ranks must reload it (FNV-1a of its JSON, hex).
std::string ExperimentDigest(const Experiment& experiment);

nlohmann::json CpuRunResultToJson(const CpuRunResult& result);
StatusOr<CpuRunResult> CpuRunResultFromJson(const nlohmann::json& j);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNNERS_CPU_RUN_H_
