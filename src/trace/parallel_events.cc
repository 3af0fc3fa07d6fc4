#include "trace/parallel_events.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "trace/event_scanner.h"

namespace shardscope::trace {
namespace {

constexpr int kMaxWorkers = 8;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The bytes of a file from `start` on. Reads stop at `soft_end` first, so a
// part's scanner does not read far into the next part, then go on in 64 KiB
// steps (the event that crosses the end) and then freely (a part read on),
// up to `hard_end`, where the source ends early and says so (limit_hit).
class RangeSource final : public ByteSource {
 public:
  RangeSource(const RandomAccessInput& input, int64_t start, int64_t soft_end, int64_t hard_end)
      : input_(input), pos_(start), soft_end_(soft_end), hard_end_(hard_end) {}
  StatusOr<size_t> Read(char* dst, size_t size) override {
    constexpr int64_t kStep = 64 << 10;
    int64_t cap = pos_ < soft_end_           ? soft_end_ - pos_
                  : pos_ < soft_end_ + kStep ? soft_end_ + kStep - pos_
                                             : static_cast<int64_t>(size);
    if (pos_ + cap > hard_end_) {
      cap = hard_end_ - pos_;
      if (cap <= 0 && pos_ < input_.size()) {
        limit_hit_ = true;
        return size_t{0};
      }
    }
    size_t want = std::min(size, static_cast<size_t>(std::max<int64_t>(cap, 0)));
    ASSIGN_OR_RETURN(size_t n, input_.ReadAt(pos_, dst, want));
    pos_ += static_cast<int64_t>(n);
    return n;
  }
  int64_t raw_offset() const override { return pos_; }
  bool limit_hit() const { return limit_hit_; }

 private:
  const RandomAccessInput& input_;
  int64_t pos_;
  const int64_t soft_end_;
  const int64_t hard_end_;
  bool limit_hit_ = false;
};

// One part: where it starts (a guess, but for part 0) and what its worker found.
struct Part {
  int64_t start = -1;  // -1: no guess in this part's bytes; it is read by the one before
  bool done = false;
  std::unique_ptr<RangeOutput> output;
  ReadStats stats;
  Status status;
  size_t next = 0;  // the part whose trusted start this one stopped at; the count at the end
  std::map<std::string, std::string> top_level;
  std::map<std::string, std::string> head;  // part 0: the kept keys before the first event
  int64_t bytes_scanned = 0;
  bool unclosed_array = false;
  // Read past its limit (a start guessed inside a string can make one "event"
  // run to the end of the file): parsed again without a limit if it counts.
  bool gave_up = false;
};

// First non-space byte of the file after a UTF-8 byte order mark; -1 when none in its head.
StatusOr<int> FirstByte(const RandomAccessInput& input) {
  char head[4096];
  ASSIGN_OR_RETURN(size_t n, input.ReadAt(0, head, sizeof(head)));
  size_t i = n >= 3 && std::memcmp(head, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  while (i < n && IsSpace(head[i])) ++i;
  return i < n ? static_cast<unsigned char>(head[i]) : -1;
}

class Driver {
 public:
  Driver(const RandomAccessInput& input, const std::string& name, const ReadOptions& options,
         const std::set<std::string>& kept_keys, const MakePartParser& make_parser, bool array_form,
         std::vector<Part>* parts)
      : input_(input),
        name_(name),
        options_(options),
        kept_keys_(kept_keys),
        make_parser_(make_parser),
        array_form_(array_form),
        parts_(*parts) {}

  // Runs `threads` workers until every part is parsed or Stop.
  void Start(int threads, size_t max_in_flight) {
    max_in_flight_ = max_in_flight;
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  // Waits for part `i` and returns it; nullptr once stopped.
  Part* Wait(size_t i) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return parts_[i].done; });
    return &parts_[i];
  }
  // Parts before `i` are handed on or thrown away: workers may move past them.
  void Consumed(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    consumed_ = i;
    for (size_t k = 0; k < i && k < parts_.size(); ++k) {
      if (parts_[k].done) parts_[k].output.reset();
    }
    cv_.notify_all();
  }
  // Parses part `i` again on the calling thread, with no limit (it gave up).
  void Reparse(size_t i) {
    if (!own_parser_) own_parser_ = make_parser_();
    Parse(i, /*limited=*/false, own_parser_.get());
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

 private:
  void Work() {
    std::unique_ptr<PartParser> parser;
    while (true) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          return stopped_ || next_ >= parts_.size() || next_ < consumed_ + max_in_flight_;
        });
        if (stopped_ || next_ >= parts_.size()) return;
        i = next_++;
      }
      bool skip = parts_[i].start < 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        skip = skip || i < consumed_;
      }
      if (!skip) {
        if (!parser) parser = make_parser_();
        Parse(i, /*limited=*/true, parser.get());
      }
      std::lock_guard<std::mutex> lock(mu_);
      parts_[i].done = true;
      if (i < consumed_) parts_[i].output.reset();
      cv_.notify_all();
    }
  }

  // A part read on through more than a few parts gives up when `limited`.
  void Parse(size_t i, bool limited, PartParser* parser) {
    Part& part = parts_[i];
    size_t n = parts_.size();
    int64_t soft_end = input_.size();
    for (size_t j = i + 1; j < n; ++j) {
      if (parts_[j].start >= 0) {
        soft_end = parts_[j].start;
        break;
      }
    }
    const int64_t limit =
        limited ? soft_end + 4 * static_cast<int64_t>(std::max<size_t>(options_.range_bytes, 64))
                : input_.size();
    RangeSource source(input_, part.start, soft_end, limit);
    EventScanner scanner(&source, name_, options_.chunk_bytes);
    scanner.set_kept_keys(kept_keys_);
    if (i > 0) scanner.ResumeInEvents(part.start, array_form_);
    size_t target = i + 1;
    bool stopped = false;
    bool head_taken = false;
    auto stop_before = [&](int64_t offset) {
      while (target < n && parts_[target].start < offset) ++target;  // start −1: no guess
      stopped = target < n && parts_[target].start == offset;
      return stopped;
    };
    auto before_first = [&] {
      if (i != 0) return;
      part.head = scanner.top_level();
      head_taken = true;
    };
    part.status = ParseEvents(&scanner, parser->parser(), options_, before_first, stop_before);
    part.stats = *parser->stats();
    part.output = parser->Take();
    if (i == 0 && !head_taken) part.head = scanner.top_level();
    part.next = stopped ? target : n;
    part.top_level = scanner.top_level();
    part.bytes_scanned = scanner.bytes_scanned();
    part.unclosed_array = scanner.unclosed_array();
    part.gave_up = source.limit_hit();
  }

  const RandomAccessInput& input_;
  const std::string& name_;
  const ReadOptions& options_;
  const std::set<std::string>& kept_keys_;
  const MakePartParser& make_parser_;
  const bool array_form_;
  std::vector<Part>& parts_;
  size_t max_in_flight_ = 2;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;      // the next part a worker takes
  size_t consumed_ = 0;  // parts before it are no longer needed
  bool stopped_ = false;
  std::vector<std::thread> workers_;
  std::unique_ptr<PartParser> own_parser_;  // Reparse's, on the calling thread
};

}  // namespace

StatusOr<int64_t> GuessEventStart(const RandomAccessInput& input, int64_t from, int64_t to) {
  constexpr size_t kWindow = 16 << 10;
  constexpr int64_t kOverlap = 256;  // a boundary cut by a window is found in the next
  std::vector<char> buf(kWindow);
  int64_t at = std::max<int64_t>(from - kOverlap, 0);
  to = std::min(to, input.size());
  while (at < to) {
    ASSIGN_OR_RETURN(size_t n, input.ReadAt(at, buf.data(), buf.size()));
    if (n == 0) break;
    const char* p = buf.data();
    for (size_t k = 0; k < n; ++k) {
      if (p[k] != '}') continue;
      size_t m = k + 1;
      while (m < n && IsSpace(p[m])) ++m;
      if (m >= n || p[m] != ',') continue;
      ++m;
      while (m < n && IsSpace(p[m])) ++m;
      if (m >= n || p[m] != '{') continue;
      int64_t offset = at + static_cast<int64_t>(m);
      if (offset >= to) return -1;
      if (offset >= from) return offset;
    }
    if (n < buf.size()) break;
    at += static_cast<int64_t>(n) - kOverlap;
  }
  return -1;
}

StatusOr<ParallelScan> ParseEventsParallel(
    const RandomAccessInput& input, const std::string& name, const ReadOptions& options,
    const std::set<std::string>& kept_keys, const MakePartParser& make_parser, ReadStats* stats,
    const std::function<void(const std::map<std::string, std::string>& head)>& before_first_event) {
  ParallelScan scan;
  ASSIGN_OR_RETURN(int first, FirstByte(input));
  scan.array_form = first == '[';
  // The parts and their guessed starts; part 0 starts at the file's start.
  const int64_t size = input.size();
  const int64_t range = static_cast<int64_t>(std::max<size_t>(options.range_bytes, 64));
  const size_t n = static_cast<size_t>(std::max<int64_t>((size + range - 1) / range, 1));
  std::vector<Part> parts(n);
  parts[0].start = 0;
  for (size_t k = 1; k < n; ++k) {
    ASSIGN_OR_RETURN(parts[k].start, GuessEventStart(input, static_cast<int64_t>(k) * range,
                                                     static_cast<int64_t>(k + 1) * range));
  }
  scan.ranges = static_cast<int>(n);

  Driver driver(input, name, options, kept_keys, make_parser, scan.array_form, &parts);
  // Beyond a few workers the calling thread, which hands every event on, is the limit.
  const int threads = std::clamp(ReadThreads(options), 1, kMaxWorkers);
  driver.Start(threads, static_cast<size_t>(threads) + 2);
  bool first_delivered = false;
  std::map<std::string, std::string> top_level;
  Status status;
  size_t i = 0;
  while (true) {
    Part* part = driver.Wait(i);
    if (part->gave_up) driver.Reparse(i);
    if (i == 0) top_level = part->head;
    if (!first_delivered && part->stats.events > 0) {
      if (before_first_event) before_first_event(parts[0].head);
      first_delivered = true;
    }
    part->output->Deliver();
    MergeReadStats(part->stats, stats);
    for (const auto& [key, value] : part->top_level) top_level[key] = value;
    scan.ranges_rejoined += static_cast<int>(part->next - i - 1);
    if (!part->status.ok() || part->next >= n) {
      status = part->status;
      scan.bytes_scanned = part->bytes_scanned;
      scan.unclosed_array = part->unclosed_array;
      break;
    }
    i = part->next;
    driver.Consumed(i);
  }
  driver.Stop();
  RETURN_IF_ERROR(status);
  scan.top_level = std::move(top_level);
  return scan;
}

}  // namespace shardscope::trace
