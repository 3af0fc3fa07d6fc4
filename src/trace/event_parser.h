// EventParser: the parser half of the trace reader. Parses the JSON of one
// traceEvents element with simdjson On-Demand and hands the event to a
// TraceSink, or counts in ReadStats why it was skipped. Never fails and never
// throws: every malformed input ends as a count. Not thread-safe.
#ifndef SHARDSCOPE_TRACE_EVENT_PARSER_H_
#define SHARDSCOPE_TRACE_EVENT_PARSER_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::trace {

class EventParser {
 public:
  virtual ~EventParser() = default;
  // `raw` must have `capacity` readable bytes from raw.data(), at least
  // raw.size() + 64 (simdjson's padding). `offset` is used in messages.
  virtual void Parse(std::string_view raw, size_t capacity, int64_t offset) = 0;
};

std::unique_ptr<EventParser> MakeEventParser(TraceSink* sink, ReadStats* stats);
// simdjson's compile-time On-Demand implementation ("fallback" without -mavx2;
// stage 1 still dispatches to AVX2 at run time inside libsimdjson).
std::string_view EventParserImplementation();

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_EVENT_PARSER_H_
