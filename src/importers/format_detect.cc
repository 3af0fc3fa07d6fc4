#include "importers/format_detect.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "trace/byte_source.h"

namespace shardscope::importers {
namespace {

constexpr size_t kHeadBytes = 64 << 10;

constexpr auto kNames = MakeEnumNames<TraceFormat>({
    {TraceFormat::kShardScope, "shardscope"},
    {TraceFormat::kKineto, "kineto"},
    {TraceFormat::kXlaJson, "xla"},
    {TraceFormat::kXspace, "xspace"},
    {TraceFormat::kNcclProfiler, "nccl-profiler"},
    {TraceFormat::kNcclProfilerJsonl, "nccl-profiler-jsonl"},
});
static_assert(kNames.InEnumOrder() &&
              kNames.entries().back().value == TraceFormat::kNcclProfilerJsonl);

constexpr std::string_view kTried =
    "tried: ShardScope / Chrome trace JSON (\"traceEvents\"), PyTorch profiler (Kineto) JSON, "
    "JAX/XLA trace-viewer JSON, XSpace protobuf, NCCL profiler plugin JSON and JSONL";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool Contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The string values of every `"cat"` key in `head` (a JSON-ish text), up to `max`.
std::vector<std::string_view> CatValues(std::string_view head, size_t max) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (out.size() < max && (pos = head.find("\"cat\"", pos)) != std::string_view::npos) {
    pos += 5;
    size_t i = pos;
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i >= head.size() || head[i] != ':') continue;
    ++i;
    while (i < head.size() && IsSpace(head[i])) ++i;
    if (i >= head.size() || head[i] != '"') continue;
    size_t end = head.find('"', i + 1);
    if (end == std::string_view::npos) break;
    out.push_back(head.substr(i + 1, end - i - 1));
    pos = end;
  }
  return out;
}

bool IsKinetoCat(std::string_view cat) {
  static constexpr std::array<std::string_view, 12> kCats = {
      "cpu_op",     "kernel",           "cuda_runtime", "cuda_driver",         "gpu_memcpy",
      "gpu_memset", "user_annotation",  "ac2g",         "gpu_user_annotation", "python_function",
      "fwdbwd",     "cpu_instant_event"};
  for (std::string_view c : kCats) {
    if (cat == c) return true;
  }
  return false;
}

bool IsNcclProfilerCat(std::string_view cat) {
  static constexpr std::array<std::string_view, 9> kCats = {
      "GROUP_API", "COLL_API", "P2P_API", "KERNEL_LAUNCH", "COLL", "P2P", "PROXY", "NET", "GROUP"};
  for (std::string_view c : kCats) {
    if (cat == c) return true;
  }
  return false;
}

// True when `s` (from its first byte) holds one complete JSON object on its
// first line: braces balance outside strings before the first newline.
bool FirstLineIsObject(std::string_view s, size_t* line_end) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '\n') return false;
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        *line_end = i + 1;
        return true;
      }
    }
  }
  return false;
}

bool LooksBinary(std::string_view s) {
  size_t n = std::min<size_t>(s.size(), 512);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20)) return true;
  }
  return false;
}

}  // namespace

std::string_view TraceFormatName(TraceFormat format) { return kNames.Name(format, "unknown"); }

std::string TraceFormatNames() { return kNames.List(", "); }

StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (std::optional<TraceFormat> f = kNames.Parse(name)) return *f;
  return InvalidArgument("unknown trace format '{}' (one of: {})", name, TraceFormatNames());
}

StatusOr<TraceFormat> DetectFormatOfHead(std::string_view head, const std::string& name) {
  std::string_view s = head;
  // XSpace: a protobuf whose first field (1, planes; tag byte 0x0a) starts with a plane name.
  if (!s.empty() && s[0] == '\x0a' && LooksBinary(s) &&
      (Contains(s.substr(0, 4096), "/device:") || Contains(s.substr(0, 4096), "/host:"))) {
    return TraceFormat::kXspace;
  }
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);  // UTF-8 byte order mark
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  if (i == s.size()) {
    return InvalidArgument("{}: empty file{}", name, s.empty() ? "" : " (only whitespace)");
  }
  s.remove_prefix(i);
  const char first = s[0];
  if (first != '{' && first != '[') {
    return InvalidArgument("{}: unknown trace format: neither JSON nor an XSpace protobuf ({})",
                           name, kTried);
  }
  std::vector<std::string_view> cats = CatValues(s, 64);
  auto any_cat = [&](bool (*pred)(std::string_view)) {
    for (std::string_view c : cats) {
      if (pred(c)) return true;
    }
    return false;
  };
  const bool xla = Contains(s, "/device:TPU:") || Contains(s, "/device:GPU:") ||
                   Contains(s, "\"/host:CPU\"") || Contains(s, "\"XLA Ops\"") ||
                   Contains(s, "\"XLA Modules\"");
  const bool kineto = Contains(s, "\"schemaVersion\"") || Contains(s, "\"distributedInfo\"") ||
                      Contains(s, "\"deviceProperties\"") ||
                      Contains(s, "\"baseTimeNanoseconds\"") || any_cat(IsKinetoCat);
  if (first == '[') {
    if (any_cat(IsNcclProfilerCat)) return TraceFormat::kNcclProfiler;
    if (kineto) return TraceFormat::kKineto;
    if (xla) return TraceFormat::kXlaJson;
    if (Contains(s, "\"ph\"")) return TraceFormat::kShardScope;  // a plain Chrome trace array
    return InvalidArgument("{}: unknown trace format: a JSON array without trace events ({})", name,
                           kTried);
  }
  // An object: one trace, or the first of several JSON lines.
  size_t line_end = 0;
  if (FirstLineIsObject(s, &line_end)) {
    std::string_view rest = s.substr(line_end);
    size_t j = 0;
    while (j < rest.size() && IsSpace(rest[j])) ++j;
    bool more_lines = j < rest.size() && rest[j] == '{';
    std::string_view line = s.substr(0, line_end);
    if ((more_lines || EndsWith(name, ".jsonl")) && !Contains(line, "\"traceEvents\"")) {
      if (Contains(line, "\"type\"") &&
          (Contains(s, "ncclProfile") || Contains(s, "ProfilerLifecycle"))) {
        return TraceFormat::kNcclProfilerJsonl;
      }
      return InvalidArgument(
          "{}: unknown trace format: JSON lines, but not the NCCL profiler plugin's (no "
          "\"type\": \"ncclProfile…\" records) ({})",
          name, kTried);
    }
  }
  if (Contains(s, "\"shardscope\"")) return TraceFormat::kShardScope;
  if (kineto) return TraceFormat::kKineto;
  if (xla) return TraceFormat::kXlaJson;
  if (Contains(s, "\"traceEvents\"")) return TraceFormat::kShardScope;  // a plain Chrome trace
  return InvalidArgument("{}: unknown trace format: a JSON object without \"traceEvents\" ({})",
                         name, kTried);
}

StatusOr<std::string> ReadHead(const std::string& path, size_t max_bytes) {
  ASSIGN_OR_RETURN(auto source, trace::OpenByteSource(path));
  std::string head(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ASSIGN_OR_RETURN(size_t n, source->Read(head.data() + got, max_bytes - got));
    if (n == 0) break;
    got += n;
  }
  head.resize(got);
  return head;
}

StatusOr<TraceFormat> DetectFormat(const std::string& path) {
  ASSIGN_OR_RETURN(std::string head, ReadHead(path, kHeadBytes));
  return DetectFormatOfHead(head, path);
}

}  // namespace shardscope::importers
