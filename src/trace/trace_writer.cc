#include "trace/trace_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace shardscope::trace {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void AppendInt(int64_t v, std::string* out) { fmt::format_to(std::back_inserter(*out), "{}", v); }

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

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (c < 0x20) {
          fmt::format_to(std::back_inserter(*out), "\\u{:04x}", c);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void AppendMicros(int64_t ns, std::string* out) {
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out->push_back('-');
  fmt::format_to(std::back_inserter(*out), "{}.{:03}", mag / 1000, mag % 1000);
}

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path,
                                                         const nlohmann::json& metadata,
                                                         const TraceWriterOptions& options) {
  if (!metadata.is_object() && !metadata.is_null()) {
    return InvalidArgument("trace {}: metadata must be a JSON object", path);
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
  std::string meta;
  try {
    meta = metadata.is_null()
               ? "{}"
               : metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return InvalidArgument("trace {}: metadata cannot be serialised: {}", path, e.what());
  }
  w->buffer_.append("{\"displayTimeUnit\":\"ns\",\"otherData\":");
  w->buffer_.append(meta);
  w->buffer_.append(",\"traceEvents\":[");
  return w;
}

TraceWriter::TraceWriter(std::string path, std::string temp_path, int fd,
                         const TraceWriterOptions& options)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), options_(options) {
  gzip_ = options.gzip.value_or(EndsWith(path_, ".gz"));
  buffer_.reserve(kFlushBytes + 4096);
  if (gzip_) {
    zs_ = std::make_unique<z_stream>();
    std::memset(zs_.get(), 0, sizeof(z_stream));
    // windowBits 15 + 16: gzip header and trailer.
    if (deflateInit2(zs_.get(), options.gzip_level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      zs_.reset();
      Fail(InternalError("trace {}: zlib deflateInit2 failed", path_));
    }
    zbuffer_.resize(1 << 18);
  }
}

TraceWriter::~TraceWriter() {
  if (zs_) deflateEnd(zs_.get());
  if (fd_ >= 0) close(fd_);
  if (!closed_ || !status_.ok()) unlink(temp_path_.c_str());
}

void TraceWriter::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

void TraceWriter::BeginEvent() {
  buffer_.append(events_ == 0 ? "\n" : ",\n");
  ++events_;
}

void TraceWriter::MaybeFlush() {
  if (buffer_.size() >= kFlushBytes) Fail(Flush(false));
}

Status TraceWriter::WriteFd(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("trace {}: write failed: {}", temp_path_, std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status TraceWriter::Flush(bool finish) {
  if (!status_.ok()) return status_;
  uncompressed_bytes_ += static_cast<int64_t>(buffer_.size());
  if (!gzip_) {
    RETURN_IF_ERROR(WriteFd(buffer_.data(), buffer_.size()));
    buffer_.clear();
    return Status::Ok();
  }
  zs_->next_in = reinterpret_cast<Bytef*>(buffer_.data());
  zs_->avail_in = static_cast<uInt>(buffer_.size());
  int flush = finish ? Z_FINISH : Z_NO_FLUSH;
  while (true) {
    zs_->next_out = reinterpret_cast<Bytef*>(zbuffer_.data());
    zs_->avail_out = static_cast<uInt>(zbuffer_.size());
    int rc = deflate(zs_.get(), flush);
    if (rc == Z_STREAM_ERROR) return InternalError("trace {}: zlib deflate failed", path_);
    RETURN_IF_ERROR(WriteFd(zbuffer_.data(), zbuffer_.size() - zs_->avail_out));
    if (finish ? rc == Z_STREAM_END : zs_->avail_out != 0) break;
  }
  buffer_.clear();
  return Status::Ok();
}

void TraceWriter::NameProcess(int32_t rank, std::string_view name) {
  if (!status_.ok()) return;
  BeginEvent();
  buffer_.append("{\"ph\":\"M\",\"pid\":");
  AppendInt(rank, &buffer_);
  buffer_.append(",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
  AppendJsonString(name, &buffer_);
  buffer_.append("}}");
  MaybeFlush();
}

void TraceWriter::NameThread(int32_t rank, int32_t stream, std::string_view name) {
  if (!status_.ok()) return;
  BeginEvent();
  buffer_.append("{\"ph\":\"M\",\"pid\":");
  AppendInt(rank, &buffer_);
  buffer_.append(",\"tid\":");
  AppendInt(stream, &buffer_);
  buffer_.append(",\"name\":\"thread_name\",\"args\":{\"name\":");
  AppendJsonString(name, &buffer_);
  buffer_.append("}}");
  MaybeFlush();
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
  std::string& b = buffer_;
  BeginEvent();
  b.append("{\"ph\":\"X\",\"pid\":");
  AppendInt(op.rank, &b);
  b.append(",\"tid\":");
  AppendInt(op.stream, &b);
  b.append(",\"ts\":");
  AppendMicros(op.ts_ns, &b);
  b.append(",\"dur\":");
  AppendMicros(op.dur_ns, &b);
  b.append(",\"name\":");
  AppendJsonString(op.name, &b);
  b.append(",\"cat\":\"");
  b.append(CategoryName(op.category));
  b.append("\",\"args\":{");
  bool first = true;
  auto key = [&](std::string_view k) {
    if (!first) b.push_back(',');
    first = false;
    b.push_back('"');
    b.append(k);
    b.append("\":");
  };
  auto int_field = [&](std::string_view k, int64_t v, int64_t unset) {
    if (v == unset) return;
    key(k);
    AppendInt(v, &b);
  };
  if (!op.kind.empty()) {
    key("kind");
    AppendJsonString(op.kind, &b);
  }
  if (op.phase != Phase::kNone) {
    key("phase");
    AppendJsonString(PhaseName(op.phase), &b);
  }
  int_field("step", op.step, -1);
  int_field("layer", op.layer, -1);
  int_field("micro_batch", op.micro_batch, -1);
  int_field("sp_step", op.sp_step, -1);
  int_field("flops", op.flops, 0);
  int_field("bytes_read", op.bytes_read, 0);
  int_field("bytes_written", op.bytes_written, 0);
  if (op.collective != Collective::kNone) {
    key("collective");
    AppendJsonString(CollectiveName(op.collective), &b);
  }
  if (op.dim != GroupDim::kNone) {
    key("dim");
    AppendJsonString(GroupDimName(op.dim), &b);
  }
  if (!op.group.empty()) {
    key("group");
    b.push_back('[');
    for (size_t i = 0; i < op.group.size(); ++i) {
      if (i) b.push_back(',');
      AppendInt(op.group[i], &b);
    }
    b.push_back(']');
  }
  int_field("peer", op.peer, -1);
  int_field("root", op.root, -1);
  int_field("seq", op.seq, -1);
  int_field("bytes", op.bytes, 0);
  if (!op.bytes_per_peer.empty()) {
    key("bytes_per_peer");
    b.push_back('[');
    for (size_t i = 0; i < op.bytes_per_peer.size(); ++i) {
      if (i) b.push_back(',');
      AppendInt(op.bytes_per_peer[i], &b);
    }
    b.push_back(']');
  }
  if (!op.dtype.empty()) {
    key("dtype");
    AppendJsonString(op.dtype, &b);
  }
  if (!op.expert_tokens.empty()) {
    key("experts");
    b.push_back('[');
    for (size_t i = 0; i < op.experts.size(); ++i) {
      if (i) b.push_back(',');
      AppendInt(op.experts[i], &b);
    }
    b.push_back(']');
    key("expert_tokens");
    b.push_back('[');
    for (size_t i = 0; i < op.expert_tokens.size(); ++i) {
      if (i) b.push_back(',');
      AppendInt(op.expert_tokens[i], &b);
    }
    b.push_back(']');
  }
  b.append("}}");
  MaybeFlush();
}

void TraceWriter::AddSpan(const SpanEvent& span) {
  if (!status_.ok()) return;
  if (span.dur_ns < 0 || span.rank < 0) {
    Fail(InvalidArgument("trace {}: span '{}' on rank {} has a negative duration or rank", path_,
                         span.name, span.rank));
    return;
  }
  std::string& b = buffer_;
  BeginEvent();
  b.append("{\"ph\":\"X\",\"pid\":");
  AppendInt(span.rank, &b);
  b.append(",\"tid\":");
  AppendInt(kSpanStream, &b);
  b.append(",\"ts\":");
  AppendMicros(span.ts_ns, &b);
  b.append(",\"dur\":");
  AppendMicros(span.dur_ns, &b);
  b.append(",\"name\":");
  AppendJsonString(span.name, &b);
  b.append(span.kind == SpanKind::kPhase ? ",\"cat\":\"phase\",\"args\":{"
                                         : ",\"cat\":\"step\",\"args\":{");
  bool first = true;
  if (span.phase != Phase::kNone) {
    b.append("\"phase\":");
    AppendJsonString(PhaseName(span.phase), &b);
    first = false;
  }
  if (span.step != -1) {
    if (!first) b.push_back(',');
    b.append("\"step\":");
    AppendInt(span.step, &b);
  }
  b.append("}}");
  MaybeFlush();
}

void TraceWriter::AddCounter(const CounterEvent& counter) {
  if (!status_.ok()) return;
  for (const auto& [series, value] : counter.values) {
    if (!std::isfinite(value)) {
      Fail(InvalidArgument("trace {}: counter '{}' series '{}' on rank {} is not finite", path_,
                           counter.name, series, counter.rank));
      return;
    }
  }
  std::string& b = buffer_;
  BeginEvent();
  b.append("{\"ph\":\"C\",\"pid\":");
  AppendInt(counter.rank, &b);
  b.append(",\"tid\":0,\"ts\":");
  AppendMicros(counter.ts_ns, &b);
  b.append(",\"name\":");
  AppendJsonString(counter.name, &b);
  b.append(",\"args\":{");
  for (size_t i = 0; i < counter.values.size(); ++i) {
    if (i) b.push_back(',');
    AppendJsonString(counter.values[i].first, &b);
    b.push_back(':');
    // Shortest text that reads back to the same double.
    fmt::format_to(std::back_inserter(b), "{}", counter.values[i].second);
  }
  b.append("}}");
  MaybeFlush();
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
  buffer_.append("\n]}\n");
  Status s = Flush(true);
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
