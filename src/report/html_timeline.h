// Timeline: a downsampled overview of a trace — per rank, the time each op
// category (compute, communication, other) covers in each of a fixed number of
// time bins — plus the phase and decode-step boundaries. Built by reading a
// ShardScope trace once (trace::ReadTrace); it stays small at any trace size.
// Not thread-safe.
#ifndef SHARDSCOPE_REPORT_HTML_TIMELINE_H_
#define SHARDSCOPE_REPORT_HTML_TIMELINE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

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

// Reads `path` (a ShardScope trace, as the store writes it) into a Timeline with
// `bins` bins. Errors are the reader's.
StatusOr<Timeline> ReadTimeline(const std::string& path, int bins = kTimelineBins);

}  // namespace shardscope::report

#endif  // SHARDSCOPE_REPORT_HTML_TIMELINE_H_
