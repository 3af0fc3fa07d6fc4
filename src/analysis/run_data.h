// RunData: a trace reduced to what the metrics need — per rank, compact op
// records (32 bytes each, no strings) and spans; across ranks, the traffic and
// bandwidth sums accumulated while reading. RunCollector builds it as a
// TraceSink, so a trace is read once and never held as JSON or as OpEvents.
// Not thread-safe.
#ifndef SHARDSCOPE_ANALYSIS_RUN_DATA_H_
#define SHARDSCOPE_ANALYSIS_RUN_DATA_H_

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/trace_event.h"

namespace shardscope::analysis {

using trace::Category;
using trace::Collective;
using trace::Phase;

struct OpRec {
  int64_t ts = 0;
  int64_t end = 0;
  int32_t group = -1;  // index into RunData::groups; -1 for compute
  int32_t peer = -1;   // send/recv
  int32_t step = -1;
  Category cat = Category::kCompute;
  Collective coll = Collective::kNone;
  Phase phase = Phase::kNone;
  Dim dim = Dim::kNone;
};
static_assert(sizeof(OpRec) == 32);

struct SpanRec {
  int64_t ts = 0;
  int64_t end = 0;
  trace::SpanKind kind = trace::SpanKind::kPhase;
  Phase phase = Phase::kNone;
  int32_t step = -1;
};

struct RankData {
  std::vector<OpRec> ops;
  std::vector<SpanRec> spans;
  std::array<double, trace::kNumPhases> flops{};      // by the op's phase
  std::array<double, trace::kNumPhases> mem_bytes{};  // bytes read + written
  double bytes_sent = 0;                              // on the wire, by the algorithm
  // Comm ops without a message size (args.bytes), and without a group (or peer) or a known
  // collective: foreign traces may not say. Metrics that need them say "not available".
  int64_t comm_ops_without_bytes = 0;
  int64_t comm_ops_without_group = 0;
  bool has_memory = false;
  double peak_memory = 0;  // max over "memory" samples of the sum of their series
  std::map<std::string, double> peak_by_series;
  std::string name;
};

// A communication group: its ranks (ring order as traced) and dimension.
struct GroupInfo {
  std::vector<int32_t> ranks;
  Dim dim = Dim::kNone;
  bool p2p = false;  // a send/recv pair
};

// Routed-expert token counts of one (phase, decode step, layer), summed over
// ranks and micro-batches.
struct ExpertLoadCell {
  std::map<int32_t, int64_t> tokens;  // by global expert id
  // Expert id → its EP rank, named by the smallest expert id listed with it (the
  // experts of one op are those of one EP rank).
  std::map<int32_t, int32_t> ep_rank;
};

// Sums over the ops of one (group, collective).
struct BandwidthSums {
  int64_t ops = 0;
  double bytes = 0;          // Σ nccl-tests size
  double bus_bytes = 0;      // Σ size × bus factor
  double seconds = 0;        // Σ duration
  std::vector<float> busbw;  // per op, B/s (ops with zero duration left out)
};

// Sums over the ops of one collective and dimension whose message size falls in
// [2^k, 2^(k+1)) bytes: bus bandwidth against message size, as nccl-tests tables it.
struct SizeBucketSums {
  int64_t ops = 0;
  double bytes = 0;      // Σ nccl-tests size
  double bus_bytes = 0;  // Σ size × bus factor
  double seconds = 0;    // Σ duration
};
inline constexpr int kSizeBuckets = 64;

// A served request's span (trace_format.md, "Request spans"): arrival to finish.
struct RequestRec {
  int32_t replica = 0;  // the span's pid
  int64_t arrival_ns = 0, finish_ns = 0;
  trace::RequestArgs args;
};

struct RunData {
  std::map<int32_t, RankData> ranks;
  std::vector<GroupInfo> groups;
  // Wire bytes from rank i to rank j: key (i << 32) | j.
  std::unordered_map<uint64_t, double> traffic;
  std::array<double, trace::kNumCollectives> traffic_by_collective{};
  std::array<double, trace::kNumDimPositions> traffic_by_dim{};  // by trace::DimPosition
  std::array<double, trace::kNumCollectives> payload_by_collective{};
  std::array<double, trace::kNumDimPositions> payload_by_dim{};  // by trace::DimPosition
  std::map<std::pair<int32_t, Collective>, BandwidthSums> bandwidth;
  // Indexed (collective · kNumDimPositions + DimPosition(dim)) · kSizeBuckets + k
  // (SizeBucketIndex); empty until a sized comm op with a duration is seen.
  std::vector<SizeBucketSums> bandwidth_by_size;
  // How the ops of each such bucket ran, where the trace says (a simulated run's
  // args algorithm, protocol, all_to_all): bucket index → "nvls_tree/simple",
  // "hierarchical", … → ops.
  std::map<size_t, std::map<std::string, int64_t, std::less<>>> comm_choices;
  int64_t comm_ops_outside_group = 0;  // comm ops whose rank is not in their group
  int64_t comm_ops_without_bytes = 0;  // Σ over ranks of RankData::comm_ops_without_bytes
  int64_t comm_ops_without_group = 0;  // Σ over ranks of RankData::comm_ops_without_group
  // Of those, the ones whose collective is unknown (the rest lack only a group or peer).
  int64_t comm_ops_unknown_collective = 0;
  // Ranks of the run that have no trace (a multi-file set lacking files); set by the analyzer.
  std::vector<int32_t> missing_ranks;
  // The trace format (importers::TraceFormatName, e.g. "kineto"); set by the analyzer, so
  // reasons name what that format calls a field. Empty: ours.
  std::string format;
  // Served runs: every request span, and each replica's iterations [start, end)
  // (ops of kind "iteration") in trace order.
  std::vector<RequestRec> requests;
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> iterations;
  // (replica, iteration start) → requests decoded in it (the "serving" counter's
  // "decode" series; absent in traces without it).
  std::map<std::pair<int32_t, int64_t>, double> iteration_decodes;
  // Keyed by (phase, step, layer); only ops with expert counts.
  std::map<std::tuple<Phase, int32_t, int32_t>, ExpertLoadCell> expert_load;
  nlohmann::json metadata = nlohmann::json::object();
};

// Where an op of `bytes` > 0 falls in RunData::bandwidth_by_size.
size_t SizeBucketIndex(Collective c, Dim dim, double bytes);

// Fills RunData from the reader's events.
class RunCollector : public trace::TraceSink {
 public:
  explicit RunCollector(RunData* data) : data_(data) {}
  // A hint: the trace is about `bytes` bytes of JSON. A rank's op array then
  // grows at once to its projected share of the ops rather than by doubling
  // (fewer copies and page faults); capacity not yet filled costs no resident
  // memory. The collected data are the same with or without it.
  void set_size_hint(int64_t bytes) { expected_ops_ = bytes / kMinBytesPerOp; }
  void OnMetadata(const nlohmann::json& metadata) override;
  void OnProcessName(int32_t rank, std::string_view name) override;
  void OnOp(const trace::OpEvent& op) override;
  void OnSpan(const trace::SpanEvent& span) override;
  void OnCounter(const trace::CounterEvent& counter) override;

 private:
  // Plain JSON of one op event takes at least about this many bytes in our traces
  // (~240 with args), so bytes / this over-estimates the ops of a trace.
  static constexpr int64_t kMinBytesPerOp = 150;

  RankData& Rank(int32_t rank);
  // Makes room in rd->ops for one more op (set_size_hint).
  void GrowOps(RankData* rd);
  int32_t InternGroup(Dim dim, const std::vector<int32_t>& ranks, bool p2p);
  void AddExpertTokens(const trace::OpEvent& op);
  void AddTraffic(int32_t from, int32_t to, double bytes, const trace::OpEvent& op, RankData* rd);

  double* TrafficCell(uint64_t key);
  BandwidthSums& Bandwidth(int32_t group, Collective c);
  // Counts a sized comm op's algorithm/protocol in RunData::comm_choices.
  void AddCommChoice(const trace::OpEvent& op, size_t bucket);

  RunData* const data_;
  int32_t last_rank_ = -1;
  RankData* last_rank_data_ = nullptr;
  std::map<std::pair<Dim, std::vector<int32_t>>, int32_t> group_index_;
  std::pair<Dim, std::vector<int32_t>> scratch_key_;
  std::vector<int32_t> pair_;  // scratch: a send/recv pair
  std::string choice_;         // scratch: a comm op's "algorithm/protocol"
  // Ids of the last few groups interned (a rank's ops repeat the same groups).
  std::array<int32_t, 4> recent_groups_ = {-1, -1, -1, -1};
  size_t recent_next_ = 0;
  // The last few traffic cells (unordered_map values keep their address).
  std::array<std::pair<uint64_t, double*>, 4> recent_traffic_{};
  size_t recent_traffic_next_ = 0;
  // data_->bandwidth entries by group * kNumCollectives + collective (map nodes are stable).
  std::vector<BandwidthSums*> bandwidth_index_;
  int64_t expected_ops_ = 0;  // from set_size_hint; 0: none
  int64_t ops_seen_ = 0;
  int64_t ops_reserved_ = 0;  // Σ over ranks of the op arrays' capacity
};

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_RUN_DATA_H_
