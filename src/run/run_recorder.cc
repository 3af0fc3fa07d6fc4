#include "run/run_recorder.h"

#include <cstdio>

#include "config/experiment_json.h"
#include "trace/trace_store.h"

namespace shardscope::run {

using nlohmann::json;

json PlanJson(const Placement& pl) {
  json groups = json::array();
  for (const Group& g : pl.groups()) {
    if (g.ranks.size() <= 1) continue;
    groups.push_back({{"id", g.id}, {"dim", DimName(g.dim)}, {"ranks", g.ranks}});
  }
  json devices = json::array();
  for (int64_t r = 0; r < pl.world_size(); ++r) devices.push_back(pl.Location(r).device);
  json stages = json::array();
  for (int64_t s = 0; s < pl.num_stages(); ++s) stages.push_back(pl.LayersOfStage(s));
  return {{"world_size", pl.world_size()},
          {"rank_to_device", devices},
          {"groups", groups},
          {"stages", stages}};
}

json RunMetadata(const Experiment& recorded, const Placement& placement, std::string_view backend,
                 json section) {
  return {{"experiment", ExperimentToJson(recorded)},
          {"backend", backend},
          {"plan", PlanJson(placement)},
          {"cluster", ClusterToJson(recorded.cluster)},
          {std::string(backend), std::move(section)}};
}

RunRecorder::RunRecorder(std::unique_ptr<trace::TraceWriter> writer, std::string trace_path,
                         std::string metadata_path)
    : writer_(std::move(writer)),
      trace_path_(std::move(trace_path)),
      metadata_path_(std::move(metadata_path)) {}

StatusOr<std::unique_ptr<RunRecorder>> RunRecorder::Open(const Experiment& e, const json& metadata,
                                                         const std::string& trace_root,
                                                         const std::string& trace_file) {
  std::unique_ptr<trace::TraceWriter> writer;
  const bool gzip = e.trace_compression == TraceCompression::kGzip;
  if (!trace_file.empty()) {
    // Gzip when asked or when the name ends in ".gz"; the name is the user's.
    trace::TraceWriterOptions options;
    if (gzip) options.gzip = true;
    ASSIGN_OR_RETURN(writer, trace::TraceWriter::Open(trace_file, metadata, options));
    return std::unique_ptr<RunRecorder>(new RunRecorder(std::move(writer), trace_file, ""));
  }
  trace::TraceStore store(trace_root);
  trace::StoredTrace stored;
  const trace::RunKey key{e.model.name, e.parallel.strategy, e.workload.batch_size,
                          e.workload.sequence_length};
  ASSIGN_OR_RETURN(writer, store.Create(key, metadata, &stored, e.trace_compression));
  return std::unique_ptr<RunRecorder>(
      new RunRecorder(std::move(writer), stored.trace_path, stored.metadata_path));
}

RunRecorder::~RunRecorder() {
  // Not published (an error or an interruption): the writer removes its
  // temporary file, and the metadata file goes with it.
  if (!closed_ && !metadata_path_.empty()) std::remove(metadata_path_.c_str());
}

Status RunRecorder::Close() {
  Status closed = writer_->Close();
  if (!closed.ok() && !metadata_path_.empty()) std::remove(metadata_path_.c_str());
  closed_ = closed.ok();
  return closed;
}

}  // namespace shardscope::run
