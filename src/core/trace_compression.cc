#include "core/trace_compression.h"

namespace shardscope {

std::string_view TraceCompressionName(TraceCompression c) {
  switch (c) {
    case TraceCompression::kNone:
      return "none";
    case TraceCompression::kGzip:
      return "gzip";
  }
  return "none";
}

StatusOr<TraceCompression> ParseTraceCompression(std::string_view name) {
  if (name == "none") return TraceCompression::kNone;
  if (name == "gzip") return TraceCompression::kGzip;
  return InvalidArgument("unknown trace compression '{}' (expected none or gzip)", name);
}

}  // namespace shardscope
