// Turning an executor's OpRecords into trace events (the trace issue's format,
// the same names and args the simulator writes), with the rank's clock offset
// to rank 0 removed; and estimating that offset over the communicator.
#ifndef SHARDSCOPE_RUNTIME_CPU_TRACE_H_
#define SHARDSCOPE_RUNTIME_CPU_TRACE_H_

#include <string>
#include <vector>

#include "plan/placement.h"
#include "runtime/comm/communicator.h"
#include "runtime/executor.h"
#include "trace/trace_event.h"

namespace shardscope::runtime {

// This rank's steady clock minus rank 0's, in ns (0 on rank 0), from the
// round trip with the smallest delay of `rounds` ping-pongs with rank 0
// (NTP-style: the remote reading against the midpoint of the round trip). The
// estimate is within ±round_trip_ns / 2 of the true offset (exact bound when
// the one-way delays are unknown). Collective over the world.
struct ClockOffset {
  int64_t offset_ns = 0;
  int64_t round_trip_ns = 0;  // of the round trip used; 0 on rank 0
};
StatusOr<ClockOffset> EstimateClockOffset(Communicator& comm, int rounds = 8);

// One rank's ops and phase/step spans; times shifted by −offset_ns − origin_ns.
struct RankEvents {
  std::vector<trace::OpEvent> ops;
  std::vector<trace::SpanEvent> spans;
};
RankEvents ToTraceEvents(const std::vector<OpRecord>& records, const Placement& placement,
                         int64_t rank, int64_t offset_ns, int64_t origin_ns);

// Compact JSON round trip, to gather events on rank 0.
std::string SerializeEvents(const RankEvents& events);
StatusOr<RankEvents> ParseEvents(const std::string& text);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_CPU_TRACE_H_
