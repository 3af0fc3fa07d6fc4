// A whole trace in memory (the trace model of trace/trace_event.h gathered
// into one value) and TraceBuilder, the TraceSink that fills it: for tests,
// small traces and tools; the analyzer streams events instead.
#ifndef SHARDSCOPE_TRACE_TRACE_H_
#define SHARDSCOPE_TRACE_TRACE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/trace_event.h"

namespace shardscope::trace {

// A whole trace in memory: for tests, small traces and tools; the analyzer
// does not need it.
struct Trace {
  nlohmann::json metadata = nlohmann::json::object();
  std::map<int32_t, std::string> process_names;
  std::map<std::pair<int32_t, int32_t>, std::string> thread_names;
  std::vector<OpEvent> ops;
  std::vector<SpanEvent> spans;
  std::vector<CounterEvent> counters;
  bool operator==(const Trace&) const = default;
};

// A TraceSink that fills a Trace.
class TraceBuilder : public TraceSink {
 public:
  explicit TraceBuilder(Trace* trace) : trace_(trace) {}
  void OnMetadata(const nlohmann::json& metadata) override { trace_->metadata = metadata; }
  void OnProcessName(int32_t rank, std::string_view name) override {
    trace_->process_names[rank] = std::string(name);
  }
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override {
    trace_->thread_names[{rank, stream}] = std::string(name);
  }
  void OnOp(const OpEvent& op) override { trace_->ops.push_back(op); }
  void OnSpan(const SpanEvent& span) override { trace_->spans.push_back(span); }
  void OnCounter(const CounterEvent& counter) override { trace_->counters.push_back(counter); }

 private:
  Trace* const trace_;
};

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TRACE_H_
