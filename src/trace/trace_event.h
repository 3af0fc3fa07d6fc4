// The trace model: the events of one inference run as ShardScope records them
// (ops, phase/decode-step spans, memory counters, process and thread names),
// and the sink interface through which the reader delivers them. Timestamps
// and durations are int64 nanoseconds. Plain value types; not thread-safe.
// docs/trace_format.md describes how each field appears in the JSON file.
#ifndef SHARDSCOPE_TRACE_TRACE_EVENT_H_
#define SHARDSCOPE_TRACE_TRACE_EVENT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "core/parallel_dim.h"
#include "core/phase.h"

namespace shardscope::trace {

// What an op spends its time on. kOther: host work, memcpy, anything neither.
enum class Category : uint8_t { kCompute = 0, kComm, kOther };
inline constexpr int kNumCategories = 3;

using ::shardscope::Collective;  // core/collective.h
using ::shardscope::CollectiveName;
using ::shardscope::kNumCollectives;
using ::shardscope::ParseCollective;

using ::shardscope::kNumPhases;  // core/phase.h
using ::shardscope::ParsePhase;
using ::shardscope::Phase;
using ::shardscope::PhaseName;

// The parallelism dimension of a communication group (core/parallel_dim.h).
using ::shardscope::Dim;
using ::shardscope::DimName;
using ::shardscope::kNumDims;

// The order the analyzer and the reports list dimensions in: none, tp, pp, sp,
// dp, ep (not the mesh order of Dim's values), and a dimension's position in it,
// which indexes their per-dimension tables.
inline constexpr int kNumDimPositions = kNumDims + 1;
inline constexpr std::array<Dim, kNumDimPositions> kDimListOrder = {Dim::kNone, Dim::kTp, Dim::kPp,
                                                                    Dim::kSp,   Dim::kDp, Dim::kEp};
constexpr size_t DimPosition(Dim d) {
  for (size_t i = 0; i < kDimListOrder.size(); ++i) {
    if (kDimListOrder[i] == d) return i;
  }
  return 0;
}

// Spans are not work: they mark a phase or one decode step on a rank.
enum class SpanKind : uint8_t { kPhase = 0, kStep };

// The tid spans are written on, so they get a track of their own.
inline constexpr int32_t kSpanStream = 1000;

std::string_view CategoryName(Category c);
std::optional<Category> ParseCategory(std::string_view s);

// One op (kernel or communication call) of one rank: a Chrome "X" event.
// A served request's lifetime, on its request span (trace_format.md,
// "Request spans"): the span runs from arrival to the last token. Times in ns
// on the trace's clock; −1: did not happen (no KV transfer) or not given.
struct RequestArgs {
  int64_t id = -1;  // −1: not a request span
  int64_t prompt_tokens = 0, output_tokens = 0;
  int64_t scheduled_ns = -1;    // first scheduled (queueing ends)
  int64_t first_token_ns = -1;  // its first output token
  int64_t kv_arrival_ns = -1;   // disaggregated: its KV cache reached the decode instance
  int64_t preemptions = 0;      // times its KV cache was dropped and recomputed
  bool warmup = false;          // left out of the statistics
  // Its last output token; −1: not given (the span's end stands in). Before the
  // span's end by the response overhead (detokenise, respond) of a served run.
  int64_t last_token_ns = -1;
  bool decode_only = false;  // arrived with its context cached: no prefill, no TTFT
  bool operator==(const RequestArgs&) const = default;
};

struct OpEvent {
  int32_t rank = 0;    // pid: global rank
  int32_t stream = 0;  // tid: compute or a comm stream
  std::string name;
  Category category = Category::kCompute;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  // args. Defaults mean "not given" and are not written.
  std::string kind;  // op kind: "qkv_proj", "attention", "all_reduce", …
  Phase phase = Phase::kNone;
  int32_t step = -1;  // decode step
  int32_t layer = -1;
  int32_t micro_batch = -1;
  int32_t sp_step = -1;  // ring-attention step
  int64_t flops = 0;     // a multiply-add counts 2
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  Collective collective = Collective::kNone;
  Dim dim = Dim::kNone;
  std::vector<int32_t> group;           // global ranks of the group, in ring order
  int32_t peer = -1;                    // send/recv: the other global rank
  int32_t root = -1;                    // broadcast: the global rank that owns the data
  int64_t seq = -1;                     // order of the call within its group or peer pair
  int64_t bytes = 0;                    // message size as nccl-tests counts it (trace_format.md)
  std::vector<int64_t> bytes_per_peer;  // all-to-all(v): bytes to each group member
  // Simulated comm ops: how the collective ran (docs/sim.md "Collectives") —
  // the algorithm ("ring", "tree", "nvls", "nvls_tree", "hierarchical",
  // "direct", "low_latency"), NCCL's protocol ("ll", "ll128", "simple"; empty
  // where none applies: untuned links, the MoE exchange kernels) and, for an
  // all-to-all, its kind ("nccl", "hierarchical", "low_latency").
  std::string algorithm;
  std::string protocol;
  std::string all_to_all;
  std::string dtype;
  // Routed-expert GEMM: the global ids of the rank's experts and the tokens each
  // received, entry by entry (same length). Empty when not given.
  std::vector<int32_t> experts;
  std::vector<int64_t> expert_tokens;
  RequestArgs request;  // request spans of served runs

  bool is_comm() const { return category == Category::kComm; }
  int64_t end_ns() const { return ts_ns + dur_ns; }
  bool operator==(const OpEvent&) const = default;
};

// A prefill/decode phase (kPhase) or one decode step (kStep) of one rank.
struct SpanEvent {
  int32_t rank = 0;
  SpanKind kind = SpanKind::kPhase;
  Phase phase = Phase::kNone;
  int32_t step = -1;  // kStep: the decode step
  std::string name;   // "prefill", "decode", "step 3"
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;

  int64_t end_ns() const { return ts_ns + dur_ns; }
  bool operator==(const SpanEvent&) const = default;
};

// A counter sample: one "C" event; values in bytes for the "memory" counter,
// one series per category (weights, kv_cache, activations, buffers).
struct CounterEvent {
  int32_t rank = 0;
  std::string name;
  int64_t ts_ns = 0;
  std::vector<std::pair<std::string, double>> values;
  bool operator==(const CounterEvent&) const = default;
};

// Receives the events of a trace in file order. Implementations: TraceBuilder
// (the whole model in memory) and the analyzer's compact collector.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void OnMetadata(const nlohmann::json& metadata) {}
  virtual void OnProcessName(int32_t rank, std::string_view name) {}
  virtual void OnThreadName(int32_t rank, int32_t stream, std::string_view name) {}
  virtual void OnOp(const OpEvent& op) = 0;
  virtual void OnSpan(const SpanEvent& span) {}
  virtual void OnCounter(const CounterEvent& counter) {}
};

// A whole trace in memory and the sink that fills it: trace/trace.h.
struct Trace;

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TRACE_EVENT_H_
