#include "core/trace_compression.h"

#include "core/enum_names.h"

namespace shardscope {
namespace {

constexpr auto kTraceCompressionNames = MakeEnumNames<TraceCompression>(
    {{TraceCompression::kNone, "none"}, {TraceCompression::kGzip, "gzip"}});

}  // namespace

std::string_view TraceCompressionName(TraceCompression c) {
  return kTraceCompressionNames.Name(c, "none");
}

StatusOr<TraceCompression> ParseTraceCompression(std::string_view name) {
  return kTraceCompressionNames.ParseOrError(name, "trace compression");
}

}  // namespace shardscope
