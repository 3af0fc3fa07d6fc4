#include "trace/event_log.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace shardscope::trace {
namespace {

enum class Tag : uint8_t { kProcessName, kThreadName, kOp, kSpan, kCounter };

// An op's fixed-size fields; its strings and lists follow with these lengths.
struct OpFixed {
  int64_t ts_ns, dur_ns, flops, bytes_read, bytes_written, seq, bytes;
  int32_t rank, stream, step, layer, micro_batch, sp_step, peer, root;
  uint32_t name_len, kind_len, dtype_len, group_n, bytes_per_peer_n, experts_n, tokens_n;
  uint8_t algorithm_len, protocol_len, all_to_all_len;  // short names (see OnOp)
  Category category;
  Phase phase;
  Collective collective;
  Dim dim;
  bool has_request;  // RequestArgs follow the lists
};
static_assert(std::is_trivially_copyable_v<OpFixed>);
static_assert(std::is_trivially_copyable_v<RequestArgs>);

struct SpanFixed {
  int64_t ts_ns, dur_ns;
  int32_t rank, step;
  uint32_t name_len;
  SpanKind kind;
  Phase phase;
};

// Reads what the Put* calls wrote, front to back.
class Reader {
 public:
  explicit Reader(const std::vector<char>& buf) : p_(buf.data()), end_(buf.data() + buf.size()) {}
  bool done() const { return p_ >= end_; }
  template <typename T>
  T Pod() {
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string_view String(size_t n) {
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  std::string_view String() { return String(Pod<uint32_t>()); }
  template <typename T>
  void Vector(size_t n, std::vector<T>* out) {
    out->resize(n);
    if (n > 0) std::memcpy(out->data(), p_, n * sizeof(T));
    p_ += n * sizeof(T);
  }

 private:
  const char* p_;
  const char* const end_;
};

}  // namespace

template <typename T>
void EventLog::PutPod(const T& v) {
  size_t at = buf_.size();
  buf_.resize(at + sizeof(T));
  std::memcpy(buf_.data() + at, &v, sizeof(T));
}

void EventLog::PutString(std::string_view s) {
  size_t at = buf_.size();
  buf_.resize(at + s.size());
  if (!s.empty()) std::memcpy(buf_.data() + at, s.data(), s.size());
}

template <typename T>
void EventLog::PutVector(const std::vector<T>& v) {
  size_t at = buf_.size();
  buf_.resize(at + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(buf_.data() + at, v.data(), v.size() * sizeof(T));
}

void EventLog::OnProcessName(int32_t rank, std::string_view name) {
  PutPod(Tag::kProcessName);
  PutPod(rank);
  PutPod(static_cast<uint32_t>(name.size()));
  PutString(name);
}

void EventLog::OnThreadName(int32_t rank, int32_t stream, std::string_view name) {
  PutPod(Tag::kThreadName);
  PutPod(rank);
  PutPod(stream);
  PutPod(static_cast<uint32_t>(name.size()));
  PutString(name);
}

void EventLog::OnOp(const OpEvent& op) {
  OpFixed f;
  f.ts_ns = op.ts_ns;
  f.dur_ns = op.dur_ns;
  f.flops = op.flops;
  f.bytes_read = op.bytes_read;
  f.bytes_written = op.bytes_written;
  f.seq = op.seq;
  f.bytes = op.bytes;
  f.rank = op.rank;
  f.stream = op.stream;
  f.step = op.step;
  f.layer = op.layer;
  f.micro_batch = op.micro_batch;
  f.sp_step = op.sp_step;
  f.peer = op.peer;
  f.root = op.root;
  f.name_len = static_cast<uint32_t>(op.name.size());
  f.kind_len = static_cast<uint32_t>(op.kind.size());
  f.dtype_len = static_cast<uint32_t>(op.dtype.size());
  // A foreign trace may carry long values: kept up to 255 bytes.
  const std::string_view algorithm = std::string_view(op.algorithm).substr(0, 255);
  const std::string_view protocol = std::string_view(op.protocol).substr(0, 255);
  const std::string_view all_to_all = std::string_view(op.all_to_all).substr(0, 255);
  f.algorithm_len = static_cast<uint8_t>(algorithm.size());
  f.protocol_len = static_cast<uint8_t>(protocol.size());
  f.all_to_all_len = static_cast<uint8_t>(all_to_all.size());
  f.group_n = static_cast<uint32_t>(op.group.size());
  f.bytes_per_peer_n = static_cast<uint32_t>(op.bytes_per_peer.size());
  f.experts_n = static_cast<uint32_t>(op.experts.size());
  f.tokens_n = static_cast<uint32_t>(op.expert_tokens.size());
  f.category = op.category;
  f.phase = op.phase;
  f.collective = op.collective;
  f.dim = op.dim;
  f.has_request = !(op.request == RequestArgs{});
  // One resize for the whole record, then copies into place.
  const size_t bytes =
      sizeof(Tag) + sizeof(OpFixed) + op.name.size() + op.kind.size() + op.dtype.size() +
      algorithm.size() + protocol.size() + all_to_all.size() + op.group.size() * sizeof(int32_t) +
      op.bytes_per_peer.size() * sizeof(int64_t) + op.experts.size() * sizeof(int32_t) +
      op.expert_tokens.size() * sizeof(int64_t) + (f.has_request ? sizeof(RequestArgs) : 0);
  size_t at = buf_.size();
  if (buf_.capacity() < at + bytes) buf_.reserve(std::max(2 * buf_.capacity(), at + bytes));
  buf_.resize(at + bytes);
  char* p = buf_.data() + at;
  auto put = [&p](const void* src, size_t n) {
    if (n > 0) std::memcpy(p, src, n);
    p += n;
  };
  const Tag tag = Tag::kOp;
  put(&tag, sizeof(tag));
  put(&f, sizeof(f));
  put(op.name.data(), op.name.size());
  put(op.kind.data(), op.kind.size());
  put(op.dtype.data(), op.dtype.size());
  put(algorithm.data(), algorithm.size());
  put(protocol.data(), protocol.size());
  put(all_to_all.data(), all_to_all.size());
  put(op.group.data(), op.group.size() * sizeof(int32_t));
  put(op.bytes_per_peer.data(), op.bytes_per_peer.size() * sizeof(int64_t));
  put(op.experts.data(), op.experts.size() * sizeof(int32_t));
  put(op.expert_tokens.data(), op.expert_tokens.size() * sizeof(int64_t));
  if (f.has_request) put(&op.request, sizeof(RequestArgs));
}

void EventLog::OnSpan(const SpanEvent& span) {
  SpanFixed f{
      span.ts_ns, span.dur_ns, span.rank, span.step, static_cast<uint32_t>(span.name.size()),
      span.kind,  span.phase};
  PutPod(Tag::kSpan);
  PutPod(f);
  PutString(span.name);
}

void EventLog::OnCounter(const CounterEvent& counter) {
  PutPod(Tag::kCounter);
  PutPod(counter.rank);
  PutPod(counter.ts_ns);
  PutPod(static_cast<uint32_t>(counter.name.size()));
  PutString(counter.name);
  PutPod(static_cast<uint32_t>(counter.values.size()));
  for (const auto& [series, value] : counter.values) {
    PutPod(static_cast<uint32_t>(series.size()));
    PutString(series);
    PutPod(value);
  }
}

void EventLog::Replay(TraceSink* sink) const {
  Reader r(buf_);
  OpEvent op;  // reused: its strings and lists keep their capacity
  SpanEvent span;
  CounterEvent counter;
  while (!r.done()) {
    switch (r.Pod<Tag>()) {
      case Tag::kProcessName: {
        int32_t rank = r.Pod<int32_t>();
        sink->OnProcessName(rank, r.String());
        break;
      }
      case Tag::kThreadName: {
        int32_t rank = r.Pod<int32_t>();
        int32_t stream = r.Pod<int32_t>();
        sink->OnThreadName(rank, stream, r.String());
        break;
      }
      case Tag::kOp: {
        OpFixed f = r.Pod<OpFixed>();
        op.ts_ns = f.ts_ns;
        op.dur_ns = f.dur_ns;
        op.flops = f.flops;
        op.bytes_read = f.bytes_read;
        op.bytes_written = f.bytes_written;
        op.seq = f.seq;
        op.bytes = f.bytes;
        op.rank = f.rank;
        op.stream = f.stream;
        op.step = f.step;
        op.layer = f.layer;
        op.micro_batch = f.micro_batch;
        op.sp_step = f.sp_step;
        op.peer = f.peer;
        op.root = f.root;
        op.category = f.category;
        op.phase = f.phase;
        op.collective = f.collective;
        op.dim = f.dim;
        op.name.assign(r.String(f.name_len));
        op.kind.assign(r.String(f.kind_len));
        op.dtype.assign(r.String(f.dtype_len));
        op.algorithm.assign(r.String(f.algorithm_len));
        op.protocol.assign(r.String(f.protocol_len));
        op.all_to_all.assign(r.String(f.all_to_all_len));
        r.Vector(f.group_n, &op.group);
        r.Vector(f.bytes_per_peer_n, &op.bytes_per_peer);
        r.Vector(f.experts_n, &op.experts);
        r.Vector(f.tokens_n, &op.expert_tokens);
        op.request = f.has_request ? r.Pod<RequestArgs>() : RequestArgs{};
        sink->OnOp(op);
        break;
      }
      case Tag::kSpan: {
        SpanFixed f = r.Pod<SpanFixed>();
        span.ts_ns = f.ts_ns;
        span.dur_ns = f.dur_ns;
        span.rank = f.rank;
        span.step = f.step;
        span.kind = f.kind;
        span.phase = f.phase;
        span.name.assign(r.String(f.name_len));
        sink->OnSpan(span);
        break;
      }
      case Tag::kCounter: {
        counter.rank = r.Pod<int32_t>();
        counter.ts_ns = r.Pod<int64_t>();
        counter.name.assign(r.String());
        uint32_t n = r.Pod<uint32_t>();
        counter.values.resize(n);
        for (auto& [series, value] : counter.values) {
          series.assign(r.String());
          value = r.Pod<double>();
        }
        sink->OnCounter(counter);
        break;
      }
    }
  }
}

void EventLog::Clear() {
  buf_.clear();
  buf_.shrink_to_fit();
}

}  // namespace shardscope::trace
