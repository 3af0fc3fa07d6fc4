#include "run/run_recorder.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/experiment_json.h"
#include "trace/trace_store.h"

namespace shardscope::run {

using nlohmann::json;

namespace {

// The plan's sizes above 1 in mesh order ("tp4_pp2"); "single" when none.
std::string Sizes(int64_t tp, int64_t sp, int64_t ep, int64_t pp, int64_t dp) {
  std::string out;
  for (const auto& [name, size] :
       {std::pair{"tp", tp}, {"sp", sp}, {"ep", ep}, {"pp", pp}, {"dp", dp}}) {
    if (size > 1) out += fmt::format("{}{}{}", out.empty() ? "" : "_", name, size);
  }
  return out.empty() ? "single" : out;
}

std::string ServedPlanName(const Experiment& e) {
  if (e.serving->disaggregation) {
    const DisaggregationSpec& d = *e.serving->disaggregation;
    auto instance = [](const InstanceSpec& i) {
      return fmt::format("{}x{}", Sizes(i.tp, i.sp, i.ep, i.pp, 1), i.instances);
    };
    return fmt::format("disagg_prefill_{}_decode_{}", instance(d.prefill), instance(d.decode));
  }
  const ParallelSpec& p = e.parallel;
  const std::string sizes = Sizes(p.tp, p.sp, p.ep, p.pp, p.dp);
  return p.strategy.empty() || p.strategy == sizes ? sizes
                                                   : fmt::format("{}_{}", p.strategy, sizes);
}

// 32-bit FNV-1a: a short, stable name for everything else of the workload.
uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string ServedWorkloadName(const Experiment& e) {
  const ServingSpec& s = *e.serving;
  const ArrivalSpec& a = s.arrivals;
  std::string arrivals;
  switch (a.process) {
    case ArrivalProcess::kPoisson:
      arrivals = fmt::format("poisson-{}rps", a.rate);
      break;
    case ArrivalProcess::kGamma:
      arrivals = fmt::format("gamma-{}rps-cv{}", a.rate, a.cv);
      break;
    case ArrivalProcess::kClosedLoop:
      arrivals = fmt::format("closed-{}", a.concurrency);
      break;
    case ArrivalProcess::kFile:
      arrivals = fmt::format("file-{}", std::filesystem::path(a.path).stem().string());
      break;
  }
  const std::string count = s.requests > 0   ? fmt::format("n{}", s.requests)
                            : s.duration > 0 ? fmt::format("t{}s", s.duration)
                                             : std::string("all");
  // The seed draws the requests: part of the workload too.
  const std::string whole = ServingToJson(s).dump() + fmt::format("seed{}", e.workload.seed);
  return fmt::format("served_{}_{}_{:08x}", arrivals, count, Fnv1a(whole));
}

}  // namespace

trace::RunKey StoreKeyOf(const Experiment& e) {
  trace::RunKey key{e.model.name, e.parallel.strategy, e.workload.batch_size,
                    e.workload.sequence_length, ""};
  if (e.serving) {
    key.strategy = ServedPlanName(e);
    key.workload = ServedWorkloadName(e);
  }
  return key;
}

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
  const trace::RunKey key = StoreKeyOf(e);
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
