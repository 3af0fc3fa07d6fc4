// ParseEventsParallel: the reading loop of ParseEvents on several threads, for
// a plain (uncompressed) trace. The file is cut into parts of about
// ReadOptions::range_bytes; each part starts at a guessed event boundary (a
// '{' after "}," outside of what looks like a string), and a worker thread
// parses it with its own scanner and parser into its own storage (a
// RangeOutput). A guess is trusted only when the part before it, scanning from
// a trusted start, finds an event starting exactly there; otherwise that part
// reads on through the next one, whose work is thrown away. The calling thread
// hands the parts on in file order, so what a sink sees, the counts and the
// errors equal ParseEvents over the whole file. Memory: about threads + 2 parts
// in flight.
#ifndef SHARDSCOPE_TRACE_PARALLEL_EVENTS_H_
#define SHARDSCOPE_TRACE_PARALLEL_EVENTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "trace/byte_source.h"
#include "trace/event_parser.h"
#include "trace/read_stats.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {

// The events of one part, parsed on a worker thread.
class RangeOutput {
 public:
  virtual ~RangeOutput() = default;
  // Hands the part's events on; on the calling thread, parts in file order.
  virtual void Deliver() = 0;
};

// A worker thread's parser, used for part after part: it keeps its buffers.
class PartParser {
 public:
  virtual ~PartParser() = default;
  // The parser the worker feeds; it counts into stats().
  virtual EventParser* parser() = 0;
  virtual ReadStats* stats() = 0;
  // What was parsed since the last call, to deliver later; the stats are reset.
  virtual std::unique_ptr<RangeOutput> Take() = 0;
};

// Makes a worker's parser; called on worker threads, so it must be thread-safe.
using MakePartParser = std::function<std::unique_ptr<PartParser>()>;

// What the sequential scanner would report at the end of the file.
struct ParallelScan {
  // Kept top-level keys as the scanner holds them at the end (top_level()).
  std::map<std::string, std::string> top_level;
  int64_t bytes_scanned = 0;
  bool array_form = false;
  bool unclosed_array = false;
  int ranges = 0;           // parts the file was cut into
  int ranges_rejoined = 0;  // guesses found wrong: parts read on by the part before
};

// Parses the events of `input` (plain bytes; `name` in messages) as ParseEvents
// would, on ReadThreads(options) worker threads (at most 8). `kept_keys`: the scanner's
// (EventScanner::set_kept_keys). `before_first_event(head)` runs on the calling
// thread before the first event is handed on, with the kept keys that precede
// it. Counts of all parts are added to *stats. Errors as ParseEvents's, after
// the events before the error were handed on.
StatusOr<ParallelScan> ParseEventsParallel(
    const RandomAccessInput& input, const std::string& name, const ReadOptions& options,
    const std::set<std::string>& kept_keys, const MakePartParser& make_parser, ReadStats* stats,
    const std::function<void(const std::map<std::string, std::string>& head)>& before_first_event);

// The first guessed event start in [from, to): the offset of a '{' that follows
// '}' ',' (whitespace between allowed); -1 when there is none.
StatusOr<int64_t> GuessEventStart(const RandomAccessInput& input, int64_t from, int64_t to);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_PARALLEL_EVENTS_H_
