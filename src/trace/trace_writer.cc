#include "trace/trace_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "trace/trace.h"

namespace shardscope::trace {
namespace {

// A full block is handed to the background writer.
constexpr size_t kBlockBytes = size_t{4} << 20;
// Room per event beyond its strings and arrays (keys, punctuation, numbers).
constexpr size_t kEventBytes = 2048;
constexpr size_t kIntBytes = 21;  // "-9223372036854775808" and a comma

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Renames without replacing an existing file: link + unlink (atomic: link fails on EEXIST).
int RenameNoReplace(const char* from, const char* to) {
  if (link(from, to) != 0) return -1;
  unlink(from);
  return 0;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The formatting primitives: each writes at `p` (the caller has reserved room)
// and returns the end.
template <size_t N>
[[gnu::always_inline]] inline char* Lit(char* p, const char (&s)[N]) {
  std::memcpy(p, s, N - 1);
  return p + N - 1;
}

[[gnu::always_inline]] inline char* Put(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

[[gnu::always_inline]] inline char* Int(char* p, int64_t v) {
  return std::to_chars(p, p + kIntBytes, v).ptr;
}

// ns as microseconds with exactly three decimals: 1500 -> "1.500".
[[gnu::always_inline]] inline char* Micros(char* p, int64_t ns) {
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) *p++ = '-';
  p = std::to_chars(p, p + kIntBytes, mag / 1000).ptr;
  unsigned frac = static_cast<unsigned>(mag % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  return p + 4;
}

// Room JsonString may need for `s`: quotes and a 6-byte escape per byte.
inline size_t JsonBytes(std::string_view s) { return 2 + 6 * s.size(); }

inline bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

char* JsonString(char* p, std::string_view s) {
  *p++ = '"';
  size_t i = 0;
  while (i < s.size()) {
    // The plain run, copied at once.
    size_t j = i;
    while (j < s.size() && !NeedsEscape(static_cast<unsigned char>(s[j]))) ++j;
    p = Put(p, s.substr(i, j - i));
    if (j == s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[j]);
    *p++ = '\\';
    switch (c) {
      case '"':
        *p++ = '"';
        break;
      case '\\':
        *p++ = '\\';
        break;
      case '\n':
        *p++ = 'n';
        break;
      case '\t':
        *p++ = 't';
        break;
      case '\r':
        *p++ = 'r';
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        p = Lit(p, "u00");
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 15];
      }
    }
    i = j + 1;
  }
  *p++ = '"';
  return p;
}

// An "X" event up to its name: {"ph":"X","pid":…,"tid":…,"ts":…,"dur":…,"name":"…"
char* CompleteEventHead(char* p, int32_t rank, int32_t tid, int64_t ts, int64_t dur,
                        std::string_view name) {
  p = Lit(p, "{\"ph\":\"X\",\"pid\":");
  p = Int(p, rank);
  p = Lit(p, ",\"tid\":");
  p = Int(p, tid);
  p = Lit(p, ",\"ts\":");
  p = Micros(p, ts);
  p = Lit(p, ",\"dur\":");
  p = Micros(p, dur);
  p = Lit(p, ",\"name\":");
  return JsonString(p, name);
}

template <typename T>
char* IntArray(char* p, const std::vector<T>& v) {
  *p++ = '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) *p++ = ',';
    p = Int(p, v[i]);
  }
  *p++ = ']';
  return p;
}

// A served request's args: ,"request":{…} (`r.id` ≥ 0).
char* RequestJson(char* p, const RequestArgs& r) {
  p = Lit(p, ",\"request\":{\"id\":");
  p = Int(p, r.id);
  p = Lit(p, ",\"prompt_tokens\":");
  p = Int(p, r.prompt_tokens);
  p = Lit(p, ",\"output_tokens\":");
  p = Int(p, r.output_tokens);
  for (const auto& [key, ns] : {std::pair{std::string_view(",\"scheduled_us\":"), r.scheduled_ns},
                                {",\"first_token_us\":", r.first_token_ns},
                                {",\"kv_arrival_us\":", r.kv_arrival_ns},
                                {",\"last_token_us\":", r.last_token_ns}}) {
    if (ns < 0) continue;
    p = Put(p, key);
    p = Micros(p, ns);
  }
  p = Lit(p, ",\"preemptions\":");
  p = Int(p, r.preemptions);
  if (r.warmup) p = Lit(p, ",\"warmup\":true");
  if (r.decode_only) p = Lit(p, ",\"decode_only\":true");
  *p++ = '}';
  return p;
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  size_t at = out->size();
  out->resize(at + JsonBytes(s));
  char* end = JsonString(out->data() + at, s);
  out->resize(static_cast<size_t>(end - out->data()));
}

void AppendMicros(int64_t ns, std::string* out) {
  char buf[32];
  out->append(buf, Micros(buf, ns));
}

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path,
                                                         const nlohmann::json& metadata,
                                                         const TraceWriterOptions& options) {
  if (!metadata.is_object() && !metadata.is_null()) {
    return InvalidArgument("trace {}: metadata must be a JSON object", path);
  }
  std::string meta;
  try {
    meta = metadata.is_null()
               ? "{}"
               : metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return InvalidArgument("trace {}: metadata cannot be serialised: {}", path, e.what());
  }
  static std::atomic<int64_t> counter{0};
  std::string temp =
      fmt::format("{}/.{}.tmp-{}-{}", DirName(path),
                  path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1),
                  getpid(), counter++);
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return IoError("trace {}: cannot create temporary file {}: {}", path, temp,
                   std::strerror(errno));
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(path, temp, fd, options));
  constexpr std::string_view kHead = "{\"displayTimeUnit\":\"ns\",\"otherData\":";
  constexpr std::string_view kEvents = ",\"traceEvents\":[";
  char* p = w->Reserve(kHead.size() + meta.size() + kEvents.size());
  p = Put(p, kHead);
  p = Put(p, meta);
  p = Put(p, kEvents);
  w->End(p);
  return w;
}

TraceWriter::TraceWriter(std::string path, std::string temp_path, int fd,
                         const TraceWriterOptions& options)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), options_(options) {
  BlockWriterOptions o;
  o.gzip = options.gzip.value_or(EndsWith(path_, ".gz"));
  o.gzip_level = options.gzip_level;
  o.threads = options.gzip_threads;
  // Room past the hand-off size, so most events fit without a second block.
  o.block_bytes = kBlockBytes + kEventBytes * 64;
  out_ = std::make_unique<BlockWriter>(fd_, temp_path_, o);
  block_ = out_->NewBlock();
}

TraceWriter::~TraceWriter() {
  out_.reset();  // stops its threads before the file goes
  if (fd_ >= 0) close(fd_);
  if (!closed_ || !status_.ok()) unlink(temp_path_.c_str());
}

void TraceWriter::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

char* TraceWriter::Reserve(size_t n) {
  if (block_.size + n > block_.capacity) {
    if (block_.size > 0) {
      Fail(out_->Write(std::move(block_)));
      block_ = out_->NewBlock();
    }
    block_.Reserve(n);  // one event larger than a block
  }
  return block_.data.get() + block_.size;
}

void TraceWriter::End(char* end) {
  block_.size = static_cast<size_t>(end - block_.data.get());
  if (block_.size >= kBlockBytes) {
    Fail(out_->Write(std::move(block_)));
    block_ = out_->NewBlock();
  }
}

char* TraceWriter::BeginEvent(char* p) {
  p = events_ == 0 ? Lit(p, "\n") : Lit(p, ",\n");
  ++events_;
  return p;
}

void TraceWriter::NameProcess(int32_t rank, std::string_view name) {
  NameEvent(rank, 0, "process_name", name);
}

void TraceWriter::NameThread(int32_t rank, int32_t stream, std::string_view name) {
  NameEvent(rank, stream, "thread_name", name);
}

void TraceWriter::NameEvent(int32_t rank, int32_t tid, std::string_view what,
                            std::string_view name) {
  if (!status_.ok()) return;
  char* p = BeginEvent(Reserve(kEventBytes + JsonBytes(name)));
  p = Lit(p, "{\"ph\":\"M\",\"pid\":");
  p = Int(p, rank);
  p = Lit(p, ",\"tid\":");
  p = Int(p, tid);
  p = Lit(p, ",\"name\":\"");
  p = Put(p, what);
  p = Lit(p, "\",\"args\":{\"name\":");
  p = JsonString(p, name);
  p = Lit(p, "}}");
  End(p);
}

void TraceWriter::AddOp(const OpEvent& op) {
  if (!status_.ok()) return;
  if (op.dur_ns < 0 || op.rank < 0) {
    Fail(InvalidArgument("trace {}: op '{}' on rank {} has a negative duration or rank", path_,
                         op.name, op.rank));
    return;
  }
  if (!op.bytes_per_peer.empty() && op.bytes_per_peer.size() != op.group.size()) {
    Fail(
        InvalidArgument("trace {}: op '{}' on rank {}: bytes_per_peer has {} entries for a "
                        "group of {}",
                        path_, op.name, op.rank, op.bytes_per_peer.size(), op.group.size()));
    return;
  }
  if (op.experts.size() != op.expert_tokens.size()) {
    Fail(InvalidArgument("trace {}: op '{}' on rank {}: {} experts but {} expert_tokens", path_,
                         op.name, op.rank, op.experts.size(), op.expert_tokens.size()));
    return;
  }
  constexpr size_t kRequestBytes = 160 + 7 * kIntBytes;  // keys and 7 numbers
  const size_t room = kEventBytes + JsonBytes(op.name) + JsonBytes(op.kind) + JsonBytes(op.dtype) +
                      JsonBytes(op.algorithm) + JsonBytes(op.protocol) + JsonBytes(op.all_to_all) +
                      kIntBytes * (op.group.size() + op.bytes_per_peer.size() + op.experts.size() +
                                   op.expert_tokens.size()) +
                      (op.request.id >= 0 ? kRequestBytes : 0);
  char* p = BeginEvent(Reserve(room));
  p = CompleteEventHead(p, op.rank, op.stream, op.ts_ns, op.dur_ns, op.name);
  p = Lit(p, ",\"cat\":\"");
  p = Put(p, CategoryName(op.category));
  p = Lit(p, "\",\"args\":");
  // Every arg is written with a leading comma; the first one's becomes the "{".
  char* const open = p;
#define SHARDSCOPE_INT_ARG(field, key, unset) \
  if (op.field != (unset)) {                  \
    p = Lit(p, ",\"" key "\":");              \
    p = Int(p, op.field);                     \
  }
  if (!op.kind.empty()) {
    p = Lit(p, ",\"kind\":");
    p = JsonString(p, op.kind);
  }
  if (op.phase != Phase::kNone) {
    p = Lit(p, ",\"phase\":");
    p = JsonString(p, PhaseName(op.phase));
  }
  SHARDSCOPE_INT_ARG(step, "step", -1)
  SHARDSCOPE_INT_ARG(layer, "layer", -1)
  SHARDSCOPE_INT_ARG(micro_batch, "micro_batch", -1)
  SHARDSCOPE_INT_ARG(sp_step, "sp_step", -1)
  SHARDSCOPE_INT_ARG(flops, "flops", 0)
  SHARDSCOPE_INT_ARG(bytes_read, "bytes_read", 0)
  SHARDSCOPE_INT_ARG(bytes_written, "bytes_written", 0)
  if (op.collective != Collective::kNone) {
    p = Lit(p, ",\"collective\":");
    p = JsonString(p, CollectiveName(op.collective));
  }
  if (op.dim != Dim::kNone) {
    p = Lit(p, ",\"dim\":");
    p = JsonString(p, DimName(op.dim));
  }
  if (!op.group.empty()) {
    p = Lit(p, ",\"group\":");
    p = IntArray(p, op.group);
  }
  SHARDSCOPE_INT_ARG(peer, "peer", -1)
  SHARDSCOPE_INT_ARG(root, "root", -1)
  SHARDSCOPE_INT_ARG(seq, "seq", -1)
  SHARDSCOPE_INT_ARG(bytes, "bytes", 0)
#undef SHARDSCOPE_INT_ARG
  if (!op.bytes_per_peer.empty()) {
    p = Lit(p, ",\"bytes_per_peer\":");
    p = IntArray(p, op.bytes_per_peer);
  }
  if (!op.algorithm.empty()) {
    p = Lit(p, ",\"algorithm\":");
    p = JsonString(p, op.algorithm);
  }
  if (!op.protocol.empty()) {
    p = Lit(p, ",\"protocol\":");
    p = JsonString(p, op.protocol);
  }
  if (!op.all_to_all.empty()) {
    p = Lit(p, ",\"all_to_all\":");
    p = JsonString(p, op.all_to_all);
  }
  if (!op.dtype.empty()) {
    p = Lit(p, ",\"dtype\":");
    p = JsonString(p, op.dtype);
  }
  if (!op.expert_tokens.empty()) {
    p = Lit(p, ",\"experts\":");
    p = IntArray(p, op.experts);
    p = Lit(p, ",\"expert_tokens\":");
    p = IntArray(p, op.expert_tokens);
  }
  if (op.request.id >= 0) p = RequestJson(p, op.request);
  if (p == open) {
    *p++ = '{';
  } else {
    *open = '{';
  }
  p = Lit(p, "}}");
  End(p);
}

void TraceWriter::AddSpan(const SpanEvent& span) {
  if (!status_.ok()) return;
  if (span.dur_ns < 0 || span.rank < 0) {
    Fail(InvalidArgument("trace {}: span '{}' on rank {} has a negative duration or rank", path_,
                         span.name, span.rank));
    return;
  }
  char* p = BeginEvent(Reserve(kEventBytes + JsonBytes(span.name)));
  p = CompleteEventHead(p, span.rank, kSpanStream, span.ts_ns, span.dur_ns, span.name);
  p = span.kind == SpanKind::kPhase ? Lit(p, ",\"cat\":\"phase\",\"args\":{")
                                    : Lit(p, ",\"cat\":\"step\",\"args\":{");
  bool first = true;
  if (span.phase != Phase::kNone) {
    p = Lit(p, "\"phase\":");
    p = JsonString(p, PhaseName(span.phase));
    first = false;
  }
  if (span.step != -1) {
    if (!first) *p++ = ',';
    p = Lit(p, "\"step\":");
    p = Int(p, span.step);
  }
  p = Lit(p, "}}");
  End(p);
}

void TraceWriter::AddCounter(const CounterEvent& counter) {
  if (!status_.ok()) return;
  size_t room = kEventBytes + JsonBytes(counter.name);
  for (const auto& [series, value] : counter.values) {
    if (!std::isfinite(value)) {
      Fail(InvalidArgument("trace {}: counter '{}' series '{}' on rank {} is not finite", path_,
                           counter.name, series, counter.rank));
      return;
    }
    room += JsonBytes(series) + 48;
  }
  char* p = BeginEvent(Reserve(room));
  p = Lit(p, "{\"ph\":\"C\",\"pid\":");
  p = Int(p, counter.rank);
  p = Lit(p, ",\"tid\":0,\"ts\":");
  p = Micros(p, counter.ts_ns);
  p = Lit(p, ",\"name\":");
  p = JsonString(p, counter.name);
  p = Lit(p, ",\"args\":{");
  for (size_t i = 0; i < counter.values.size(); ++i) {
    if (i) *p++ = ',';
    p = JsonString(p, counter.values[i].first);
    *p++ = ':';
    // Shortest text that reads back to the same double.
    p = fmt::format_to(p, "{}", counter.values[i].second);
  }
  p = Lit(p, "}}");
  End(p);
}

void TraceWriter::AddAll(const Trace& trace) {
  for (const auto& [rank, name] : trace.process_names) NameProcess(rank, name);
  for (const auto& [key, name] : trace.thread_names) NameThread(key.first, key.second, name);
  for (const auto& op : trace.ops) AddOp(op);
  for (const auto& span : trace.spans) AddSpan(span);
  for (const auto& counter : trace.counters) AddCounter(counter);
}

Status TraceWriter::Close() {
  if (closed_) {
    return status_.ok() ? Status(StatusCode::kFailedPrecondition,
                                 fmt::format("trace {}: closed twice", path_))
                        : status_;
  }
  closed_ = true;
  RETURN_IF_ERROR(status_);
  char* p = Reserve(8);
  block_.size = static_cast<size_t>(Lit(p, "\n]}\n") - block_.data.get());
  Status s = out_->Finish(std::move(block_));
  block_ = TextBlock();
  if (s.ok() && fsync(fd_) != 0) {
    s = IoError("trace {}: fsync failed: {}", temp_path_, std::strerror(errno));
  }
  if (close(fd_) != 0 && s.ok()) {
    s = IoError("trace {}: close failed: {}", temp_path_, std::strerror(errno));
  }
  fd_ = -1;
  if (s.ok()) {
    int rc = options_.overwrite ? rename(temp_path_.c_str(), path_.c_str())
                                : RenameNoReplace(temp_path_.c_str(), path_.c_str());
    if (rc != 0) {
      s = errno == EEXIST ? Status(StatusCode::kFailedPrecondition,
                                   fmt::format("trace {}: already exists; not overwritten", path_))
                          : IoError("trace {}: rename from {} failed: {}", path_, temp_path_,
                                    std::strerror(errno));
    } else {
      // Make the rename itself durable.
      int dir = open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir >= 0) {
        fsync(dir);
        close(dir);
      }
    }
  }
  Fail(s);
  return status_;
}

Status WriteTrace(const Trace& trace, const std::string& path, const TraceWriterOptions& options) {
  ASSIGN_OR_RETURN(auto writer, TraceWriter::Open(path, trace.metadata, options));
  writer->AddAll(trace);
  return writer->Close();
}

}  // namespace shardscope::trace
