// RunRecorder: the one place a run is written into the trace store (or a
// single trace file): the run's metadata — the experiment as recorded, the
// backend, the plan, the cluster and the backend's own section — then the
// events the backend adds through writer(), published by Close(). A recorder
// destroyed without a successful Close() leaves nothing behind: the writer
// removes its temporary file, the recorder the metadata file. Not thread-safe.
#ifndef SHARDSCOPE_RUN_RUN_RECORDER_H_
#define SHARDSCOPE_RUN_RUN_RECORDER_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "config/experiment.h"
#include "core/status.h"
#include "plan/placement.h"
#include "trace/trace_store.h"
#include "trace/trace_writer.h"

namespace shardscope::run {

// The plan as a trace's metadata records it: world size, each rank's device,
// the groups of more than one rank and each pipeline stage's layers.
nlohmann::json PlanJson(const Placement& placement);

// Where a run goes in the trace store: its model and strategy, and batch ×
// sequence of a fixed batch. A served run's strategy names its plan (sizes, or
// the disaggregated instances: "tensor_tp4", "disagg_prefill_tp2x1_decode_tp4x2")
// and its workload is named for its arrivals and requests plus a hash of the
// whole served workload ("served_poisson-40rps_n120_3fa2b1c9"), so served runs
// of one model with different plans or workloads never share a folder.
trace::RunKey StoreKeyOf(const Experiment& experiment);

// A run's metadata: {"experiment", "backend", "plan", "cluster", <backend>: section}.
nlohmann::json RunMetadata(const Experiment& recorded, const Placement& placement,
                           std::string_view backend, nlohmann::json section);

class RunRecorder {
 public:
  // Opens `trace_file` when non-empty (no metadata file), else a new trace in
  // the store under `trace_root`, keyed by StoreKeyOf(experiment); compressed as the experiment's
  // trace_compression says (a trace_file ending in ".gz" is gzipped too). Fails on an I/O error.
  static StatusOr<std::unique_ptr<RunRecorder>> Open(const Experiment& experiment,
                                                     const nlohmann::json& metadata,
                                                     const std::string& trace_root,
                                                     const std::string& trace_file);
  // Without a successful Close(): removes the metadata file (the writer its temporary).
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // Where the backend writes its events; owned by the recorder.
  trace::TraceWriter* writer() { return writer_.get(); }
  const std::string& trace_path() const { return trace_path_; }
  const std::string& metadata_path() const { return metadata_path_; }  // empty for a file

  // Publishes the trace. On failure removes the metadata file too, so a failed
  // run leaves nothing in the store.
  Status Close();

 private:
  RunRecorder(std::unique_ptr<trace::TraceWriter> writer, std::string trace_path,
              std::string metadata_path);

  std::unique_ptr<trace::TraceWriter> writer_;
  const std::string trace_path_, metadata_path_;
  bool closed_ = false;
};

}  // namespace shardscope::run

#endif  // SHARDSCOPE_RUN_RUN_RECORDER_H_
