// TeeSink: hands every event of one read to two sinks in turn, so one pass over
// a trace feeds e.g. the analyzer and the report's timeline.
#ifndef SHARDSCOPE_TRACE_TEE_SINK_H_
#define SHARDSCOPE_TRACE_TEE_SINK_H_

#include "trace/trace_event.h"

namespace shardscope::trace {

class TeeSink : public TraceSink {
 public:
  TeeSink(TraceSink* first, TraceSink* second) : first_(first), second_(second) {}
  void OnMetadata(const nlohmann::json& metadata) override {
    first_->OnMetadata(metadata);
    second_->OnMetadata(metadata);
  }
  void OnProcessName(int32_t rank, std::string_view name) override {
    first_->OnProcessName(rank, name);
    second_->OnProcessName(rank, name);
  }
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override {
    first_->OnThreadName(rank, stream, name);
    second_->OnThreadName(rank, stream, name);
  }
  void OnOp(const OpEvent& op) override {
    first_->OnOp(op);
    second_->OnOp(op);
  }
  void OnSpan(const SpanEvent& span) override {
    first_->OnSpan(span);
    second_->OnSpan(span);
  }
  void OnCounter(const CounterEvent& counter) override {
    first_->OnCounter(counter);
    second_->OnCounter(counter);
  }

 private:
  TraceSink* const first_;
  TraceSink* const second_;
};

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TEE_SINK_H_
