// EventLog: a TraceSink that records the events it receives compactly in one
// byte buffer (fixed fields copied, strings and lists as length + bytes), so a
// thread can parse part of a trace ahead and another hand the events on later,
// in order, with Replay. Names, ops, spans and counters are recorded; metadata
// is not (the reader delivers it itself). Not thread-safe; one writer, then
// one reader.
#ifndef SHARDSCOPE_TRACE_EVENT_LOG_H_
#define SHARDSCOPE_TRACE_EVENT_LOG_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/trace_event.h"

namespace shardscope::trace {

class EventLog final : public TraceSink {
 public:
  void OnProcessName(int32_t rank, std::string_view name) override;
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override;
  void OnOp(const OpEvent& op) override;
  void OnSpan(const SpanEvent& span) override;
  void OnCounter(const CounterEvent& counter) override;

  // Hands every recorded event to `sink`, in the order they were recorded.
  void Replay(TraceSink* sink) const;
  // Bytes recorded so far.
  size_t size() const { return buf_.size(); }
  // Drops the events and frees the buffer.
  void Clear();
  // Exchanges the recorded bytes with *buffer (e.g. an empty one that kept its
  // capacity, so a thread records part after part without allocating).
  void Swap(std::vector<char>* buffer) { buf_.swap(*buffer); }

 private:
  void PutString(std::string_view s);
  template <typename T>
  void PutPod(const T& v);
  template <typename T>
  void PutVector(const std::vector<T>& v);

  std::vector<char> buf_;
};

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_EVENT_LOG_H_
