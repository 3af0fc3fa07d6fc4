// TraceWriter: streams a trace to a Chrome Trace Event JSON file (object form;
// docs/trace_format.md) in memory independent of the trace's length. Events go
// to a temporary file beside the target; Close() flushes, fsyncs and renames it,
// so a crash never leaves a half-written trace under the final name. A path
// ending in ".gz" is gzip-compressed. Text is formatted into 4 MiB blocks that
// background threads write (and compress, in parallel: trace/block_writer.h)
// while the next block fills. Not thread-safe: one writer per thread.
//
//   ASSIGN_OR_RETURN(auto writer, TraceWriter::Open("run.trace", metadata));
//   writer->NameProcess(0, "rank 0 · node 0 · gpu 0");
//   writer->NameThread(0, 0, "compute");
//   writer->AddOp(op);           // any order; ts/dur in ns
//   RETURN_IF_ERROR(writer->Close());
//
// The Add*/Name* calls never fail loudly: the first error (bad event, I/O) is
// kept, later events are dropped, and status() and Close() return it.
#ifndef SHARDSCOPE_TRACE_TRACE_WRITER_H_
#define SHARDSCOPE_TRACE_TRACE_WRITER_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/block_writer.h"
#include "trace/trace_event.h"

namespace shardscope::trace {

struct TraceWriterOptions {
  // False: Close() fails with kFailedPrecondition if the final path exists.
  bool overwrite = true;
  // Gzip the output; by default when the path ends in ".gz".
  std::optional<bool> gzip;
  int gzip_level = 1;    // fast: traces compress well even at level 1
  int gzip_threads = 0;  // compressing threads; 0: one per hardware thread
};

class TraceWriter {
 public:
  // Creates the temporary file; `metadata` (a JSON object, may be empty) is
  // written as the trace's "otherData".
  static StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path,
                                                     const nlohmann::json& metadata,
                                                     const TraceWriterOptions& options = {});
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  // Without a successful Close(), removes the temporary file.
  ~TraceWriter();

  // "M" events: the names Perfetto shows for a rank's process and its streams.
  void NameProcess(int32_t rank, std::string_view name);
  void NameThread(int32_t rank, int32_t stream, std::string_view name);
  void AddOp(const OpEvent& op);
  void AddSpan(const SpanEvent& span);
  void AddCounter(const CounterEvent& counter);

  // Writes every event of `trace` (names, ops, spans, counters).
  void AddAll(const Trace& trace);

  // Ends the JSON, flushes, fsyncs and renames to the final path.
  Status Close();

  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }
  // The temporary file being written (for cleanup by a signal handler).
  const std::string& temp_path() const { return temp_path_; }
  int64_t events_written() const { return events_; }
  // JSON text written so far (before compression).
  int64_t bytes_written() const { return out_->bytes_in() + static_cast<int64_t>(block_.size); }

 private:
  TraceWriter(std::string path, std::string temp_path, int fd, const TraceWriterOptions& options);
  // Room for `n` more bytes in the current block (handing a full one to out_);
  // returns where to write them. End() records how far was written.
  char* Reserve(size_t n);
  // A metadata ("M") event: `what` is "process_name" or "thread_name".
  void NameEvent(int32_t rank, int32_t tid, std::string_view what, std::string_view name);
  void End(char* end);
  // The separator before an event ("\n" first, ",\n" after).
  char* BeginEvent(char* p);
  void Fail(Status status);

  const std::string path_;
  const std::string temp_path_;
  int fd_ = -1;
  TraceWriterOptions options_;
  std::unique_ptr<BlockWriter> out_;
  TextBlock block_;  // being filled
  Status status_;
  bool closed_ = false;
  int64_t events_ = 0;
};

// Writes a whole in-memory trace to `path`.
Status WriteTrace(const Trace& trace, const std::string& path,
                  const TraceWriterOptions& options = {});

// Appends `s` to `out` as a JSON string literal (quotes included).
void AppendJsonString(std::string_view s, std::string* out);
// Appends ns as microseconds with exactly three decimals: 1500 -> "1.500".
void AppendMicros(int64_t ns, std::string* out);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TRACE_WRITER_H_
