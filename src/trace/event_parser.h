// EventParser: the parser half of the trace reader. Parses the JSON of one
// traceEvents element with simdjson On-Demand and hands the event to a
// TraceSink, or counts in ReadStats why it was skipped. Never fails and never
// throws: every malformed input ends as a count. Not thread-safe.
#ifndef SHARDSCOPE_TRACE_EVENT_PARSER_H_
#define SHARDSCOPE_TRACE_EVENT_PARSER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::trace {

// One traceEvents element: its JSON and its byte offset in the file.
struct RawEvent {
  std::string_view json;
  int64_t offset = 0;
};

class EventParser {
 public:
  virtual ~EventParser() = default;
  // `raw` must have `capacity` readable bytes from raw.data(), at least
  // raw.size() + 64 (simdjson's padding). `offset` is used in messages.
  virtual void Parse(std::string_view raw, size_t capacity, int64_t offset) = 0;
  // Parses consecutive elements of one traceEvents array, separated only by
  // ',' and whitespace and free of backslashes (so strings are taken from the
  // buffer as they are), as a single document (one simdjson call for all);
  // any event that fails there goes through Parse, with the ones after it, so
  // the outcome equals calling Parse on each. `first` is a writable alias of
  // events[0].json.data(), with first[-1] writable too; first[-1] and the byte
  // just past the last event are changed during the call and restored.
  // `capacity`: readable bytes from `first`.
  virtual void ParseBatch(std::span<const RawEvent> events, char* first, size_t capacity) = 0;
};

std::unique_ptr<EventParser> MakeEventParser(TraceSink* sink, ReadStats* stats);
// simdjson's compile-time On-Demand implementation ("fallback" without -mavx2;
// stage 1 still dispatches to AVX2 at run time inside libsimdjson).
std::string_view EventParserImplementation();

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_EVENT_PARSER_H_
