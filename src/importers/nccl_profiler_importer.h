// The NCCL profiler-plugin importers, for the two outputs seen in the wild:
//  * NVIDIA's example plugin (ext-profiler/example): a Chrome-style array of "b"/"e"
//    events (GROUP_API, COLL, P2P, GPU KernelCh, PROXY, NET, …) that older plugin
//    versions print as invalid JSON (bare 0x… pointers and ncclFloat32 enum names); a
//    small pre-pass quotes such values before parsing.
//  * The "minimal" plugin's JSONL: one record per line (ProfilerLifecycle, ncclProfileColl,
//    ncclProfileP2p, ncclProfileKernelCh, KernelChStop states, CUPTI KERNEL activities, …),
//    usually several ranks of one process in one file.
// Each COLL/P2P becomes a comm op of its rank with collective, bytes (nccl-tests size),
// group or peer, so that the traffic matrix gets per-peer bytes. docs/trace_format.md
// ("Foreign traces: NCCL profiler") lists every rule. The file is read whole; nothing is
// delivered when it cannot be parsed. Not thread-safe.
#ifndef SHARDSCOPE_IMPORTERS_NCCL_PROFILER_IMPORTER_H_
#define SHARDSCOPE_IMPORTERS_NCCL_PROFILER_IMPORTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

// The example plugin's output. Errors: NotFound, IoError, InvalidArgument (not a JSON
// array of events, empty), DataLoss (truncated, naming the event).
StatusOr<trace::ReadStats> ImportNcclProfiler(const std::string& path, trace::TraceSink* sink);

// The minimal plugin's JSONL. A line that is not valid JSON (a truncated last line) is
// skipped and counted, not an error. Errors: NotFound, IoError, InvalidArgument (empty,
// no NCCL record at all).
StatusOr<trace::ReadStats> ImportNcclProfilerJsonl(const std::string& path, trace::TraceSink* sink);

// The pieces, exposed for tests.

// Quotes bare tokens in value position that are not JSON ("Stream": 0x4142e90 →
// "Stream": "0x4142e90"; ncclFloat32, (nil)); leaves strings, numbers, true, false,
// null, objects and arrays as they are.
std::string QuoteBareJsonValues(std::string_view text);

// Bytes per element of an NCCL datatype name ("ncclFloat32", "ncclBfloat16", …); nullopt
// when unknown.
std::optional<int64_t> NcclDatatypeSize(std::string_view name);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_NCCL_PROFILER_IMPORTER_H_
