#include "importers/importer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "importers/kineto_importer.h"
#include "importers/nccl_profiler_importer.h"
#include "importers/xla_json_importer.h"
#include "importers/xspace_importer.h"
#include "trace/event_scanner.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {
namespace {

constexpr size_t kProbeBytes = 64 << 10;

// Forwards every event and notes the ranks it carries.
class RankRecordingSink : public trace::TraceSink {
 public:
  explicit RankRecordingSink(trace::TraceSink* sink) : sink_(sink) {}
  void OnMetadata(const nlohmann::json& metadata) override { sink_->OnMetadata(metadata); }
  void OnProcessName(int32_t rank, std::string_view name) override {
    sink_->OnProcessName(rank, name);
  }
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override {
    sink_->OnThreadName(rank, stream, name);
  }
  void OnOp(const trace::OpEvent& op) override {
    See(op.rank);
    sink_->OnOp(op);
  }
  void OnSpan(const trace::SpanEvent& span) override {
    See(span.rank);
    sink_->OnSpan(span);
  }
  void OnCounter(const trace::CounterEvent& counter) override { sink_->OnCounter(counter); }

  std::vector<int32_t> ranks() const { return {ranks_.begin(), ranks_.end()}; }

 private:
  void See(int32_t rank) {
    if (rank == last_) return;
    last_ = rank;
    ranks_.insert(rank);
  }

  trace::TraceSink* const sink_;
  int32_t last_ = -1;
  std::set<int32_t> ranks_;
};

}  // namespace

StatusOr<ImportResult> ImportTrace(const std::string& path, std::optional<TraceFormat> forced,
                                   trace::TraceSink* sink) {
  ImportResult result;
  if (forced) {
    result.format = *forced;
  } else {
    ASSIGN_OR_RETURN(result.format, DetectFormat(path));
  }
  RankRecordingSink recorder(sink);
  switch (result.format) {
    case TraceFormat::kShardScope: {
      ASSIGN_OR_RETURN(result.stats, trace::ReadTrace(path, &recorder));
      result.clock = "as recorded";
      break;
    }
    case TraceFormat::kKineto: {
      KinetoInfo info;
      ASSIGN_OR_RETURN(result.stats, ImportKineto(path, &recorder, &info));
      result.file_rank = info.rank;
      result.world_size = info.world_size;
      result.base_time_ns = info.base_time_ns;
      result.clock = info.base_time_ns
                         ? "relative to baseTimeNanoseconds, made absolute (ns since the epoch)"
                         : "absolute as recorded";
      break;
    }
    case TraceFormat::kXlaJson: {
      ASSIGN_OR_RETURN(result.stats, ImportXlaJson(path, &recorder));
      result.clock = "as recorded (one host clock for all devices of the file)";
      break;
    }
    case TraceFormat::kXspace: {
      ASSIGN_OR_RETURN(result.stats, ImportXspace(path, &recorder));
      result.clock = "as recorded (one host clock for all devices of the file)";
      break;
    }
    case TraceFormat::kNcclProfiler: {
      ASSIGN_OR_RETURN(result.stats, ImportNcclProfiler(path, &recorder));
      result.clock = "as recorded by the plugin";
      break;
    }
    case TraceFormat::kNcclProfilerJsonl: {
      ASSIGN_OR_RETURN(result.stats, ImportNcclProfilerJsonl(path, &recorder));
      result.clock = "as recorded by the plugin";
      break;
    }
  }
  result.ranks = recorder.ranks();
  return result;
}

StatusOr<TraceProbe> ProbeTrace(const std::string& path, std::optional<TraceFormat> forced) {
  TraceProbe probe;
  ASSIGN_OR_RETURN(std::string head, ReadHead(path, kProbeBytes));
  if (forced) {
    probe.format = *forced;
  } else {
    ASSIGN_OR_RETURN(probe.format, DetectFormatOfHead(head, path));
  }
  if (probe.format != TraceFormat::kKineto) return probe;
  // The top-level keys before "traceEvents"; the head may end anywhere after that.
  auto source = trace::MemoryByteSource(head, path);
  trace::EventScanner scanner(source.get(), path);
  scanner.set_kept_keys({"distributedInfo"});
  std::string_view event;
  int64_t offset = 0;
  size_t capacity = 0;
  (void)scanner.Next(&event, &offset, &capacity);  // a truncated head is fine here
  auto it = scanner.top_level().find("distributedInfo");
  if (it == scanner.top_level().end()) return probe;
  nlohmann::json dist = nlohmann::json::parse(it->second, nullptr, false);
  if (!dist.is_object()) return probe;
  auto int_field = [&](const char* key) -> std::optional<int32_t> {
    if (!dist.contains(key) || !dist[key].is_number_integer()) return std::nullopt;
    int64_t v = dist[key].get<int64_t>();
    if (v < 0 || v > (1 << 30)) return std::nullopt;
    return static_cast<int32_t>(v);
  };
  probe.rank = int_field("rank");
  probe.world_size = int_field("world_size");
  if (probe.world_size && *probe.world_size == 0) probe.world_size.reset();
  return probe;
}

}  // namespace shardscope::importers
