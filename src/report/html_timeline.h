// Timeline: a downsampled overview of a trace — per rank, the time each op
// category (compute, communication, other) covers in each of a fixed number of
// time bins — plus the phase and decode-step boundaries. Built from one read of
// a ShardScope trace (its own or the analyzer's); it stays small at any trace size.
// Not thread-safe.
#ifndef SHARDSCOPE_REPORT_HTML_TIMELINE_H_
#define SHARDSCOPE_REPORT_HTML_TIMELINE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "trace/trace_event.h"

namespace shardscope::report {

inline constexpr int kTimelineBins = 200;

struct Timeline {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  // Per rank: fraction of each bin covered by compute / comm / other ops (0..1, summed
  // over streams, so a bin with overlapped compute and comm can exceed 1 in total).
  std::map<int32_t, std::vector<std::array<float, 3>>> busy;
  // Phase and step starts (ns) with their names: "prefill", "decode step 3".
  std::vector<std::pair<int64_t, std::string>> marks;
  bool empty() const { return busy.empty(); }
};

// Builds a Timeline from the events of one trace as they are read: a per-rank
// histogram of covered time that doubles its bin width whenever an op ends past
// its range, so one pass needs no prior knowledge of the trace's span.
class TimelineSink : public trace::TraceSink {
 public:
  void OnOp(const trace::OpEvent& op) override;
  void OnSpan(const trace::SpanEvent& span) override;
  // The timeline in `bins` bins (at least 1).
  Timeline Finish(int bins = kTimelineBins) const;

 private:
  static constexpr size_t kFineBins = 4096;
  void Widen();

  bool started_ = false;
  int64_t begin_ = 0, max_end_ = 0;
  int64_t width_ = 1;  // ns per fine bin
  int32_t marks_rank_ = -1;
  std::map<int32_t, std::vector<std::array<double, 3>>> busy_;
  std::vector<std::pair<int64_t, std::string>> marks_;
};

// Reads `path` (a ShardScope trace, as the store writes it) into a Timeline with
// `bins` bins. Errors are the reader's.
StatusOr<Timeline> ReadTimeline(const std::string& path, int bins = kTimelineBins);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_TIMELINE_H_
