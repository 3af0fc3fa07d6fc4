// The content of an XLA profile that ShardScope uses, whatever file it came from (an
// XSpace protobuf or trace-viewer JSON): per device, named lines of timed events with
// their stats; and its mapping onto the trace model, shared by both importers and
// documented in docs/trace_format.md ("Foreign traces: XLA/TPU"). Value types.
#ifndef SHARDSCOPE_IMPORTERS_XLA_DEVICE_TRACE_H_
#define SHARDSCOPE_IMPORTERS_XLA_DEVICE_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

// Stats as text: numbers in decimal, strings as they are.
using XlaStats = std::vector<std::pair<std::string, std::string>>;

// The value of stat `name`, or nullptr.
const std::string* FindXlaStat(const XlaStats& stats, std::string_view name);

struct XlaEvent {
  // Start = base_ns + offset_ps, end = start + duration_ps. Kept apart so that absolute
  // (epoch) times stay exact without overflowing picoseconds.
  int64_t base_ns = 0;
  int64_t offset_ps = 0;
  int64_t duration_ps = 0;
  std::string name;       // display name: "all-reduce.1", "fusion.3", "12" (a step)
  std::string long_name;  // the HLO text ("%all-reduce.1 = f32[8] all-reduce(...), ..."), if known
  XlaStats stats;         // the event's own stats over those of its metadata
};

struct XlaLine {
  std::string name;  // "XLA Ops", "Async XLA Ops", "Steps", "XLA Modules", …
  std::vector<XlaEvent> events;
};

struct XlaDevice {
  int32_t ordinal = 0;  // N of "/device:TPU:N": the rank
  std::string name;     // "/device:TPU:0"
  std::vector<XlaLine> lines;
  XlaStats stats;  // plane stats (peak FLOP/s, HBM bandwidth, device type), XSpace only
};

// "/device:TPU:3" or "/device:GPU:3" → 3; nullopt for host and other planes.
std::optional<int32_t> XlaDeviceOrdinal(std::string_view plane_name);

// Hands the devices' ops, steps and names to `sink`, and adds to `stats` the ops, spans
// and names delivered and what was ignored or kept with caveats. Events are taken in
// start order per line. Never fails: what cannot be mapped is counted.
void EmitXlaDevices(const std::vector<XlaDevice>& devices, trace::TraceSink* sink,
                    trace::ReadStats* stats);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_XLA_DEVICE_TRACE_H_
