#include "trace/trace_reader.h"

#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/units.h"
#include "trace/event_log.h"
#include "trace/event_parser.h"
#include "trace/event_scanner.h"
#include "trace/parallel_events.h"
#include "trace/trace.h"

namespace shardscope::trace {

bool ParseMicrosToNs(std::string_view t, int64_t* ns) {
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && t[i] == '-') {
    neg = true;
    ++i;
  }
  uint64_t whole = 0;
  size_t int_digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    whole = whole * 10 + static_cast<uint64_t>(t[i] - '0');
    ++i;
    if (++int_digits > 16) break;  // beyond ±9.2e15 us: cannot fit in int64 ns
  }
  bool simple = int_digits > 0 && int_digits <= 16;
  uint64_t frac = 0;
  size_t frac_digits = 0;
  if (simple && i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9' && frac_digits < 3) {
      frac = frac * 10 + static_cast<uint64_t>(t[i] - '0');
      ++i;
      ++frac_digits;
    }
    if (frac_digits == 0) simple = false;
  }
  if (simple && i == t.size()) {
    while (frac_digits < 3) {
      frac *= 10;
      ++frac_digits;
    }
    uint64_t v = whole * 1000 + frac;  // whole < 1e16: no overflow in uint64
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  // Exponent, more than three decimals or a huge value: through double.
  if (t.empty() || t.size() > 64) return false;
  char buf[65];
  std::memcpy(buf, t.data(), t.size());
  buf[t.size()] = '\0';
  char* end = nullptr;
  double d = std::strtod(buf, &end);
  if (end != buf + t.size() || !std::isfinite(d)) return false;
  // Must look like a JSON number, not "nan", "0x1p3" or " 5".
  char c0 = t[0];
  if (!(c0 == '-' || (c0 >= '0' && c0 <= '9'))) return false;
  if (t.find_first_not_of("0123456789+-.eE") != std::string_view::npos) return false;
  double scaled = d * 1000.0;
  if (std::fabs(scaled) >= 9.2e18) return false;
  *ns = std::llround(scaled);
  return true;
}

namespace {

constexpr ptrdiff_t kMaxBatchBytes = 128 << 10;

// True when [begin, end) is one ',' between optional whitespace.
bool OnlyComma(const char* begin, const char* end) {
  int commas = 0;
  for (const char* p = begin; p < end; ++p) {
    if (*p == ',') {
      ++commas;
    } else if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
      return false;
    }
  }
  return commas == 1;
}

}  // namespace

Status ParseEvents(EventScanner* scanner, EventParser* parser, const ReadOptions& options,
                   const std::function<void()>& before_first_event,
                   const std::function<bool(int64_t offset)>& stop_before) {
  // Plain object events that follow each other in the scanner's buffer are
  // parsed as one batch; the batch is flushed before the buffer is refilled.
  std::vector<RawEvent> batch;
  size_t batch_capacity = 0;  // readable bytes from the first batched event
  const char* batch_end = nullptr;
  auto flush = [&] {
    if (batch.empty()) return;
    parser->ParseBatch(batch, scanner->MutableAt(batch[0].json.data()), batch_capacity);
    batch.clear();
  };
  scanner->set_before_refill(flush);
  std::string_view event;
  int64_t offset = 0;
  size_t capacity = 0;
  bool first = true;
  while (true) {
    StatusOr<bool> more = scanner->Next(&event, &offset, &capacity);
    if (!more.ok()) {
      flush();
      scanner->set_before_refill(nullptr);
      return more.status();
    }
    if (!*more) break;
    if (stop_before && stop_before(offset)) break;
    if (first && before_first_event) before_first_event();
    first = false;
    if (!options.batch_events || !scanner->last_event_plain()) {
      flush();
      parser->Parse(event, capacity, offset);
      continue;
    }
    if (!batch.empty() && (!OnlyComma(batch_end, event.data()) ||
                           event.data() - batch[0].json.data() > kMaxBatchBytes)) {
      flush();
    }
    if (batch.empty()) batch_capacity = capacity;
    batch.push_back({event, offset});
    batch_end = event.data() + event.size();
  }
  flush();
  scanner->set_before_refill(nullptr);
  return Status::Ok();
}

int ReadThreads(const ReadOptions& options) {
  if (options.threads > 0) return options.threads;
  if (const char* env = std::getenv("SHARDSCOPE_THREADS"); env != nullptr && *env != '\0') {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
#if defined(__linux__)
  cpu_set_t set;  // the CPUs this process may run on (taskset, container limits)
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

// Hands the top-level "otherData" (else "metadata") to the sink once.
class MetadataSender {
 public:
  MetadataSender(TraceSink* sink, ReadStats* stats) : sink_(sink), stats_(stats) {}
  void Send(const std::map<std::string, std::string>& top_level) {
    if (sent_) return;
    for (const char* key : {"otherData", "metadata"}) {
      auto it = top_level.find(key);
      if (it == top_level.end()) continue;
      nlohmann::json meta = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      if (meta.is_discarded() || !meta.is_object()) {
        stats_->Count(Stat::kTopLevelNotObject, key);
        continue;
      }
      sink_->OnMetadata(meta);
      sent_ = true;
      return;
    }
  }

 private:
  TraceSink* const sink_;
  ReadStats* const stats_;
  bool sent_ = false;
};

// Event log buffers that keep their capacity from part to part.
class BufferPool {
 public:
  std::vector<char> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    std::vector<char> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void Put(std::vector<char> b) {
    b.clear();
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxFree) free_.push_back(std::move(b));
  }

 private:
  static constexpr size_t kMaxFree = 8;
  std::mutex mu_;
  std::vector<std::vector<char>> free_;
};

// A part's events recorded by a worker, replayed into the sink in order.
class LogOutput final : public RangeOutput {
 public:
  LogOutput(std::vector<char> events, TraceSink* sink, BufferPool* pool)
      : sink_(sink), pool_(pool) {
    log_.Swap(&events);
  }
  ~LogOutput() override {
    std::vector<char> b;
    log_.Swap(&b);
    pool_->Put(std::move(b));
  }
  void Deliver() override { log_.Replay(sink_); }

 private:
  TraceSink* const sink_;
  BufferPool* const pool_;
  EventLog log_;
};

// A worker's parser into an event log.
class LogParser final : public PartParser {
 public:
  LogParser(TraceSink* sink, BufferPool* pool)
      : sink_(sink), pool_(pool), parser_(MakeEventParser(&log_, &stats_)) {}
  EventParser* parser() override { return parser_.get(); }
  ReadStats* stats() override { return &stats_; }
  std::unique_ptr<RangeOutput> Take() override {
    std::vector<char> events = pool_->Get();
    log_.Swap(&events);
    stats_ = ReadStats();
    return std::make_unique<LogOutput>(std::move(events), sink_, pool_);
  }

 private:
  TraceSink* const sink_;
  BufferPool* const pool_;
  EventLog log_;
  ReadStats stats_;
  std::unique_ptr<EventParser> parser_;
};

}  // namespace

StatusOr<ReadStats> ReadTraceFrom(ByteSource* source, const std::string& name, TraceSink* sink,
                                  const ReadOptions& options) {
  ReadStats stats;
  EventScanner scanner(source, name, options.chunk_bytes);
  std::unique_ptr<EventParser> parser = MakeEventParser(sink, &stats);
  MetadataSender metadata(sink, &stats);
  // otherData usually precedes the events.
  RETURN_IF_ERROR(
      ParseEvents(&scanner, parser.get(), options, [&] { metadata.Send(scanner.top_level()); }));
  metadata.Send(scanner.top_level());
  stats.bytes = scanner.bytes_scanned();
  stats.array_form = scanner.array_form();
  stats.unclosed_array = scanner.unclosed_array();
  return stats;
}

StatusOr<ReadStats> ReadTraceParallel(const RandomAccessInput& input, const std::string& name,
                                      TraceSink* sink, const ReadOptions& options) {
  ReadStats stats;
  MetadataSender metadata(sink, &stats);
  BufferPool pool;
  MakePartParser make_parser = [sink, &pool] {
    return std::unique_ptr<PartParser>(std::make_unique<LogParser>(sink, &pool));
  };
  ASSIGN_OR_RETURN(ParallelScan scan,
                   ParseEventsParallel(input, name, options, {"otherData", "metadata"}, make_parser,
                                       &stats, [&](const std::map<std::string, std::string>& head) {
                                         metadata.Send(head);
                                       }));
  metadata.Send(scan.top_level);
  stats.bytes = scan.bytes_scanned;
  stats.array_form = scan.array_form;
  stats.unclosed_array = scan.unclosed_array;
  return stats;
}

StatusOr<ReadStats> ReadTrace(const std::string& path, TraceSink* sink,
                              const ReadOptions& options) {
  ASSIGN_OR_RETURN(auto source, OpenByteSource(path));
  if (!source->compressed() && ReadThreads(options) > 1) {
    ASSIGN_OR_RETURN(auto input, OpenRandomAccess(path));
    if (input->size() >= 2 * static_cast<int64_t>(options.range_bytes)) {
      return ReadTraceParallel(*input, path, sink, options);
    }
  }
  // Compressed: one thread inflates ahead while this one parses.
  if (source->compressed() && ReadThreads(options) > 1) source = ReadAheadSource(std::move(source));
  return ReadTraceFrom(source.get(), path, sink, options);
}

StatusOr<Trace> ReadTraceFile(const std::string& path, ReadStats* stats) {
  Trace trace;
  TraceBuilder builder(&trace);
  ASSIGN_OR_RETURN(ReadStats s, ReadTrace(path, &builder));
  if (stats) *stats = s;
  return trace;
}

}  // namespace shardscope::trace
