// Trace formats ShardScope reads, and detection of a file's format from its
// first bytes (after gunzip): our own Chrome traces, PyTorch profiler (Kineto)
// traces, JAX/XLA trace-viewer JSON, XSpace protobuf and the NCCL profiler
// plugin's JSON and JSONL. Pure functions apart from reading the file.
#ifndef SHARDSCOPE_IMPORTERS_FORMAT_DETECT_H_
#define SHARDSCOPE_IMPORTERS_FORMAT_DETECT_H_

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope::importers {

enum class TraceFormat {
  kShardScope,  // our format (docs/trace_format.md); also any plain Chrome trace
  kKineto,
  kXlaJson,
  kXspace,
  kNcclProfiler,       // the example plugin's Chrome-like array (not valid JSON)
  kNcclProfilerJsonl,  // one JSON object per line
};

// "shardscope", "kineto", "xla", "xspace", "nccl-profiler", "nccl-profiler-jsonl".
std::string_view TraceFormatName(TraceFormat format);
// The names above; InvalidArgument listing them otherwise.
StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);
// The names above, comma-separated (for flag help and messages).
std::string TraceFormatNames();

// The format of the first `head` bytes of a file (decompressed). `name` is the
// file name: it is used in messages, and a ".jsonl" extension allows JSONL of
// a single line. Unknown: InvalidArgument naming the file and the formats tried.
StatusOr<TraceFormat> DetectFormatOfHead(std::string_view head, const std::string& name);

// Reads up to the first 64 KiB of `path` (gunzipped when compressed) and
// detects its format. Errors: the file's (NotFound, IoError, DataLoss), an
// empty file, or an unknown format (InvalidArgument).
StatusOr<TraceFormat> DetectFormat(const std::string& path);

// Up to `max_bytes` from the start of `path`, gunzipped when compressed.
StatusOr<std::string> ReadHead(const std::string& path, size_t max_bytes);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_FORMAT_DETECT_H_
