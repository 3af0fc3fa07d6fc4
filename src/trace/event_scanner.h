// EventScanner: the tokenizer half of the trace reader. It walks the outer
// structure of a Chrome trace — object form {"traceEvents": [...], ...} or
// array form [...] — and hands out the raw bytes of one traceEvents element at
// a time, reading the source in fixed-size chunks, so memory stays at one chunk
// plus the largest event. It does not validate events (the parser does); it
// only finds where each one ends. Not thread-safe.
//
// Every event handed out has at least one byte before it in the buffer that the
// scanner no longer reads, so the reader may wrap a run of events in '[' ']'
// in place (MutableAt) and parse them as one document.
#ifndef SHARDSCOPE_TRACE_EVENT_SCANNER_H_
#define SHARDSCOPE_TRACE_EVENT_SCANNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/byte_source.h"

namespace shardscope::trace {

// Bytes readable past the end of every event handed out (simdjson's padding).
inline constexpr size_t kScannerPadding = 64;

class EventScanner {
 public:
  // `name` is the file name used in messages.
  EventScanner(ByteSource* source, std::string name, size_t chunk_bytes = 1 << 20);

  // Makes the scanner start inside the traceEvents array, at the start of an
  // element: `source` then begins at byte `offset` of the file, and the file
  // is in array form or not as `array_form` says. Call before the first Next.
  // From an element's start it hands out what a scanner from the file's start
  // would (ParseEventsParallel reads a file in parts so).
  void ResumeInEvents(int64_t offset, bool array_form);

  // Sets *event to the next element of traceEvents and *offset to its byte
  // offset in the (uncompressed) file; *capacity is the number of readable
  // bytes from event->data() (at least size + kScannerPadding). Returns false at
  // the end. Errors: InvalidArgument when the file is not a JSON trace or is
  // empty, DataLoss when it ends early (naming the byte offset).
  StatusOr<bool> Next(std::string_view* event, int64_t* offset, size_t* capacity);

  // Raw JSON of the kept top-level keys (object form): "otherData" and
  // "metadata" unless set_kept_keys chose others (importers keep their own).
  const std::map<std::string, std::string>& top_level() const { return top_level_; }
  void set_kept_keys(std::set<std::string> keys) { kept_keys_ = std::move(keys); }
  bool array_form() const { return array_form_; }
  // Array form only: the file ended after a complete event without the closing
  // "]", which the Chrome format allows.
  bool unclosed_array() const { return unclosed_array_; }
  int64_t bytes_scanned() const { return base_ + static_cast<int64_t>(pos_); }
  // True when the last event is an object without a backslash anywhere in it:
  // its string and bracket structure is then plain quote parity.
  bool last_event_plain() const { return last_event_plain_; }
  // `hook` runs before the buffer is refilled, which moves or overwrites the
  // bytes of every event handed out so far.
  void set_before_refill(std::function<void()> hook) { before_refill_ = std::move(hook); }
  // Writable alias of `p`, a pointer into an event handed out since the last
  // refill; p[-1] is the byte before it. Whoever writes there restores the
  // bytes the scanner has not consumed yet before the next call.
  char* MutableAt(const char* p) { return buf_.data() + (p - buf_.data()); }

 private:
  enum class State { kStart, kObjectKey, kAfterObjectValue, kArrayElement, kAfterElement, kDone };
  enum class Scan { kComplete, kNeedMore, kError };

  // Skips whitespace; returns the next byte or -1 at the end of the input.
  StatusOr<int> PeekNonSpace();
  // Moves bytes from `keep` on to the front of the buffer and reads more;
  // false at the end of the input.
  StatusOr<bool> Refill(size_t keep);
  // Finds the end of the JSON value starting at buffer index `start`.
  // *plain is set when the value is an object the vector scan finished.
  Scan ScanValue(size_t start, size_t* end, bool* plain) const;
  // Scans a complete value at pos_, refilling as needed; sets *start, *end (buffer indices).
  Status TakeValue(size_t* start, size_t* end, std::string_view what);
  Status Unexpected(std::string_view expected, int c) const;
  int64_t Offset(size_t index) const { return base_ + static_cast<int64_t>(index); }

  ByteSource* const source_;
  const std::string name_;
  const size_t chunk_bytes_;
  std::vector<char> buf_;  // [0, end_) valid, then padding
  size_t pos_ = 0;
  size_t end_ = 0;
  int64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false;
  State state_ = State::kStart;
  bool array_form_ = false;
  bool unclosed_array_ = false;
  bool saw_events_ = false;
  std::map<std::string, std::string> top_level_;
  std::set<std::string> kept_keys_ = {"otherData", "metadata"};
  bool last_event_plain_ = false;
  std::function<void()> before_refill_;
};

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_EVENT_SCANNER_H_
