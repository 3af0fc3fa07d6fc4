// The pieces the NCCL profiler-plugin decoders share (nccl_profiler_importer.h):
// the COLL/P2P call record, the emitter that turns calls into comm ops, and reading
// a JSON object's members as text. Internal to importers/.
#ifndef SHARDSCOPE_IMPORTERS_NCCL_PROFILER_CALLS_H_
#define SHARDSCOPE_IMPORTERS_NCCL_PROFILER_CALLS_H_

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers::nccl_profiler {

// Sanity bounds on values read from the file: a count's bytes must fit int64 whatever the
// communicator size, and a communicator must be small enough to list.
constexpr int64_t kMaxCount = int64_t{1} << 40;
constexpr int64_t kMaxRanks = 1 << 20;

// One COLL or P2P call of one rank, with what the trace says about it.
struct NcclCall {
  int32_t rank = -1;
  std::string func;  // "AllReduce", "Send", …
  int64_t count = -1;
  std::string datatype;
  int32_t peer = -1;
  int32_t root = -1;
  int64_t seq = -1;
  std::vector<int32_t> group;  // the communicator's ranks, for collectives
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
};

// Turns calls into comm ops: see "Foreign traces: NCCL profiler" in docs/trace_format.md.
class CallEmitter {
 public:
  CallEmitter(trace::TraceSink* sink, trace::ReadStats* stats) : sink_(sink), stats_(stats) {}

  void Emit(const NcclCall& call);

 private:
  trace::TraceSink* const sink_;
  trace::ReadStats* const stats_;
  std::set<int32_t> named_;
};

// An unsigned integer's decimal text, whole.
bool ToUint(std::string_view s, uint64_t* out);

// A flat JSON object's members as text; nested objects as their JSON.
using Fields = std::map<std::string, std::string, std::less<>>;

// Reads the members of `object` into `fields` as text, those of its member object `nested`
// ("args", "details") into `inner`, and those of its "start" and "stop" objects into
// `fields` as "start.ts", "stop.pid", ….
simdjson::error_code ReadObject(simdjson::ondemand::object object, Fields* fields,
                                std::string_view nested, Fields* inner);

// A member's text (nullptr when absent); as an integer (trace/json_value.h, also when the
// file wrote it as a string; `missing` when absent or not one); as microseconds in ns.
const std::string* Get(const Fields& f, std::string_view key);
int64_t GetInt(const Fields& f, std::string_view key, int64_t missing);
bool GetNs(const Fields& f, std::string_view key, int64_t* ns);

}  // namespace shardscope::importers::nccl_profiler

#endif  // SHARDSCOPE_IMPORTERS_NCCL_PROFILER_CALLS_H_
