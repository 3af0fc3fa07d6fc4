// The trace reader: streams a Chrome Trace Event file (.json or .json.gz,
// object or array form) into a TraceSink. The EventScanner splits the file into
// events; runs of them are parsed with simdjson On-Demand as one document, and
// an event that fails there is parsed again alone. Malformed events are
// counted by kind and skipped; the ReadStats say what was skipped and why.
// Memory: one read chunk plus the largest event (in parallel: a few parts, see
// parallel_events.h). Not thread-safe: one call per sink; ReadTrace itself may
// use several threads, and the sink is only ever called from the calling one.
#ifndef SHARDSCOPE_TRACE_TRACE_READER_H_
#define SHARDSCOPE_TRACE_TRACE_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/byte_source.h"
#include "trace/event_parser.h"
#include "trace/event_scanner.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::trace {

struct ReadOptions {
  size_t chunk_bytes = 1 << 20;
  // Parse runs of plain events as one simdjson document (the fast path); off,
  // every event is its own document. The results are the same either way.
  bool batch_events = true;
  // Threads that parse a plain (uncompressed) file, each its own part
  // (ParseEventsParallel); the events reach the sink in file order all the
  // same. 0: $SHARDSCOPE_THREADS when set, else the CPUs the process may use.
  // 1 reads on the calling thread alone. Compressed input is read by one.
  int threads = 0;
  // The size of each part a thread parses at a time (files below two parts are
  // read by one thread).
  size_t range_bytes = 4 << 20;
};

// The threads `options` asks for (ReadOptions::threads), at least 1.
int ReadThreads(const ReadOptions& options);

// Reads `path` into `sink`. Errors: NotFound (no file), InvalidArgument (empty,
// not JSON, not a trace), DataLoss (truncated or corrupt; names the byte offset).
// Events already delivered before an error stay delivered.
StatusOr<ReadStats> ReadTrace(const std::string& path, TraceSink* sink,
                              const ReadOptions& options = {});
// The same over any ByteSource; `name` is used in messages.
StatusOr<ReadStats> ReadTraceFrom(ByteSource* source, const std::string& name, TraceSink* sink,
                                  const ReadOptions& options = {});
// The same over a plain file or buffer read in parts on ReadThreads(options)
// threads (ParseEventsParallel); ReadTrace picks it for plain files of at least
// two ReadOptions::range_bytes. Same events, order, counts and errors as
// ReadTraceFrom.
StatusOr<ReadStats> ReadTraceParallel(const RandomAccessInput& input, const std::string& name,
                                      TraceSink* sink, const ReadOptions& options = {});
// The reading loop shared by ReadTraceFrom and the importers (src/importers):
// hands every event `scanner` finds to `parser`, runs of plain events as one
// batch (ReadOptions::batch_events). `before_first_event` runs once, just
// before the first event is parsed. `stop_before`, when given, sees the byte
// offset of each event first; true stops there, that event unparsed. Errors
// are the scanner's; events parsed before an error stay parsed.
Status ParseEvents(EventScanner* scanner, EventParser* parser, const ReadOptions& options,
                   const std::function<void()>& before_first_event = {},
                   const std::function<bool(int64_t offset)>& stop_before = {});
// Reads a whole trace into memory.
StatusOr<Trace> ReadTraceFile(const std::string& path, ReadStats* stats = nullptr);

// Exact nanoseconds from a JSON number of microseconds ("12.345" -> 12345).
// Up to three decimals are exact; more decimals or an exponent round to the
// nearest ns. False when `token` is not a number or overflows.
bool ParseMicrosToNs(std::string_view token, int64_t* ns);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TRACE_READER_H_
