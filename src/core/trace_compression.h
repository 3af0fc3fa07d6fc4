// How a run's trace file is compressed: an experiment's `trace_compression`
// and `shardscope run --trace-compression`. gzip writes `<name>.trace.gz`,
// which the reader, the analyzer and ui.perfetto.dev read as they are
// (docs/trace_format.md, "Compressed traces").
#ifndef SHARDSCOPE_CORE_TRACE_COMPRESSION_H_
#define SHARDSCOPE_CORE_TRACE_COMPRESSION_H_

#include <string_view>

#include "core/status.h"

namespace shardscope {

enum class TraceCompression { kNone, kGzip };

std::string_view TraceCompressionName(TraceCompression c);  // "none", "gzip"
// "none" or "gzip"; InvalidArgument naming the choices otherwise.
StatusOr<TraceCompression> ParseTraceCompression(std::string_view name);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_TRACE_COMPRESSION_H_
