// The import dispatcher: reads a trace file of any supported format into a
// TraceSink — our own traces through the trace reader, foreign ones through
// their importer — choosing the format from the file's content unless one is
// forced. Not thread-safe (one call, one sink).
#ifndef SHARDSCOPE_IMPORTERS_IMPORTER_H_
#define SHARDSCOPE_IMPORTERS_IMPORTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "importers/format_detect.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

struct ImportResult {
  TraceFormat format = TraceFormat::kShardScope;
  trace::ReadStats stats;
  std::vector<int32_t> ranks;           // ranks that received ops or spans, ascending
  std::optional<int32_t> file_rank;     // the global rank the file declares (Kineto)
  std::optional<int32_t> world_size;    // when the file says (Kineto distributedInfo)
  std::optional<int64_t> base_time_ns;  // added to every timestamp (Kineto baseTimeNanoseconds)
  std::string clock;                    // how timestamps were read, for people
};

// Imports `path` into `sink`. `forced`: the format to use; nullopt detects it
// (DetectFormat). Errors: the detector's and the reader's or importer's (each
// names the file); Unimplemented for a format whose importer is not built.
StatusOr<ImportResult> ImportTrace(const std::string& path, std::optional<TraceFormat> forced,
                                   trace::TraceSink* sink);

// What the head of a file says without importing it: its format and, for
// Kineto, the rank and world size of distributedInfo when it precedes the
// events (it does in every Kineto version seen so far).
struct TraceProbe {
  TraceFormat format = TraceFormat::kShardScope;
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
};
StatusOr<TraceProbe> ProbeTrace(const std::string& path, std::optional<TraceFormat> forced);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_IMPORTER_H_
