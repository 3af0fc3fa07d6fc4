#include "sim/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <unordered_map>

#include "sim/moe_exchange.h"
#include "sim/network.h"

namespace shardscope::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kAhead = 16;  // ops prefetched ahead in Build
// Build reads an Op's fields up to its all-to-all row (op.h orders them so:
// a compute op's end before `dim`).
constexpr size_t kHotBytes = offsetof(Op, peer_sends) + sizeof(Op::peer_sends);
// Per-op state and timings (32 bytes each) and successors (4 bytes) fetched
// ahead of a rank's completions in the event loop.
constexpr int64_t kStateAhead = 4;
constexpr int32_t kSuccAhead = 16;

// Asks for the cache lines of [p, p + bytes).
inline void Prefetch(const void* p, size_t bytes) {
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}; a < end; a += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a));
  }
}
// Prefetch of data read once per run (the Ops): non-temporal, so that it
// displaces less of the engine's own per-op state from the caches.
inline void PrefetchOnce(const void* p, size_t bytes) {
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}; a < end; a += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 0);
  }
}

enum class EventKind : uint8_t {
  kRankStart,   // a = rank: post its ops that wait for nothing
  kPost,        // a = global op index of a comm op that is ready then
  kStageStart,  // a = collective instance: its stage's latency has passed
};

// 16 bytes, ordered by one 128-bit comparison of (time, seq): the event heap
// was a third of the run, mostly mispredicted branches of a two-field compare.
// Times are ≥ 0 (never -0 or NaN), so their bit patterns order as their values.
class Event {
 public:
  Event(double time, uint64_t seq, EventKind kind, int64_t a)
      : time_(std::bit_cast<uint64_t>(time)),
        tie_(seq << 32 | static_cast<uint64_t>(kind) << 30 | static_cast<uint64_t>(a)) {}
  double time() const { return std::bit_cast<double>(time_); }
  EventKind kind() const { return static_cast<EventKind>(tie_ >> 30 & 3); }
  int64_t a() const { return static_cast<int64_t>(tie_ & ((uint64_t{1} << 30) - 1)); }
  bool operator>(const Event& o) const { return Key() > o.Key(); }

 private:
  unsigned __int128 Key() const { return static_cast<unsigned __int128>(time_) << 64 | tie_; }
  uint64_t time_;
  uint64_t tie_;  // insertion order (ties run first-in, first-out) << 32 | kind << 30 | a
};
// A 4-ary min-heap of events: half the levels of a binary heap, so fewer
// moves and mispredicted branches per pop. Keys are unique (insertion order
// breaks ties), so it pops exactly the sequence std::priority_queue would.
class EventHeap {
 public:
  bool empty() const { return v_.empty(); }
  const Event& top() const { return v_.front(); }
  void push(const Event& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!(v_[parent] > e)) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  void pop() {
    const Event last = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    if (n == 0) return;
    size_t i = 0;
    while (true) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c) {
        if (v_[best] > v_[c]) best = c;
      }
      if (!(last > v_[best])) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
  }

 private:
  std::vector<Event> v_;
};

// Events per run stay below 2^32 (seq) when ops, ranks and instances stay below 2^30 (a).
constexpr int64_t kMaxOps = int64_t{1} << 30;

// One matched collective or send/recv pair in flight.
struct Instance {
  int64_t members = 0;  // index in PhaseRun::members_ of its `expected` members
  int32_t posted = 0;
  int32_t expected = 0;
  int32_t first = -1;  // the first posted op, for consistency checks
  const CollectivePlan* plan = nullptr;
  size_t stage = 0;
  double start = 0;
};

// Open-addressing map from a 64-bit key (never ~0) to an instance id: matching
// runs once per comm op, and a node-based map spent most of it in malloc.
class FlatIndex {
 public:
  void Reset(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap *= 2;
    keys_.assign(cap, kEmpty);
    values_.resize(cap);
    size_ = 0;
  }
  // The id stored for `key`, or `value` newly stored; the flag says which.
  std::pair<int32_t, bool> TryEmplace(uint64_t key, int32_t value) {
    if (2 * (size_ + 1) > keys_.size()) Grow();
    size_t i = Slot(key);
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key) return {values_[i], false};
      i = (i + 1) & (keys_.size() - 1);
    }
    keys_[i] = key;
    values_[i] = value;
    ++size_;
    return {value, true};
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t Slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & (keys_.size() - 1);
  }
  void Grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    Reset(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != kEmpty) TryEmplace(keys[i], values[i]);
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0;
};

}  // namespace

// Per-op state of one Run in flat arrays, so that the event loop never touches
// the (large) Op structs of compute ops; kept by the Engine between runs.
struct Engine::Scratch {
  // What the event loop needs of one op, in one place and one cache line:
  // ranks interleave, so separate arrays cost a cache miss each. A successor's
  // update touches only this; its OpTiming is written once, when it is ready.
  struct alignas(32) OpState {
    double duration = 0;     // compute ops: ComputeModel::Seconds
    double ready = 0;        // the latest end of its finished predecessors
    int32_t pending = 0;     // unfinished predecessors; -1 once finished
    int32_t rank = 0;        // its rank
    int32_t succ_begin = 0;  // successors: succ[succ_begin, the next op's succ_begin)
    int32_t comm = -1;       // comm ops: index in `comm`; compute ops: -1
    bool is_comm() const { return comm >= 0; }
  };
  static_assert(sizeof(OpState) == 32);
  // What matching and decomposing read of a comm op, copied out of the (cold,
  // large) Op when the graph is built: the event loop never touches an Op.
  struct CommInfo {
    int64_t row_begin = 0;  // all-to-all: its row (peer_sends) is rows[row_begin, + row_size)
    int32_t row_size = 0;
    int64_t group_id = -1, peer = -1, seq = 0, bytes = 0;
    Collective collective = Collective::kNone;
    Dim dim = Dim::kTp;
    bool changed = true;  // since the previous run (all-to-all plans are kept otherwise)
  };
  std::vector<int64_t> offset;  // global index of each rank's op 0
  std::vector<OpState> op;      // per global op, and one past the last (its succ_begin)
  std::vector<int32_t> preds;   // per global op: predecessors (stream order and deps)
  std::vector<CommInfo> comm;   // per comm op, in global op order
  // All-to-all rows, copied out of the ops: in one block, not one heap block
  // per op (a cache and a TLB miss each when matched); spare: for compacting.
  std::vector<PeerBytes> rows, spare_rows;
  // Build: the previous graph's comm ops (and rows in spare_rows), to tell
  // which all-to-alls are unchanged.
  std::vector<CommInfo> spare_comm;
  std::vector<int32_t> succ;  // successors (stream order and deps), CSR
  // Ops that wait for nothing (no predecessor), by rank: roots[root_begin[r],
  // root_begin[r + 1]) in op order, posted at the rank's start.
  std::vector<int32_t> roots;
  std::vector<int32_t> root_begin;
  size_t p2p_ops = 0;                       // comm ops that are sends or recvs
  std::vector<int32_t> edge_from, edge_to;  // edges in creation order, for the CSR
  std::vector<double> rank_end;
  std::vector<OpTiming> spare_timings;  // from Engine::Recycle
  bool graph = false;                   // a graph was built (by a Run)
  // Per (rank, dim): the rank's position in its group of that dimension.
  std::vector<int32_t> position;
  // All-to-all plans of the last run, by (group, seq): kept while the members'
  // rows stay the same, from one run to the next, graph rebuilt or not
  // (node-based: addresses stay valid). Only a run that finished leaves them
  // current (one that failed may not have planned every call).
  struct AllToAllPlan {
    int64_t bytes = 0;  // the call's (its first-posted member's), which a measured line scales by
    CollectivePlan plan;
  };
  std::unordered_map<uint64_t, AllToAllPlan> all_to_all_plans;
  bool plans_current = false;
  // SM contention (Engine::RunContended): seconds added to each global op's
  // compute time; empty: none.
  std::vector<double> extra;
};

namespace {

// The state of one Run, split from the Engine so that the Engine stays reusable.
class PhaseRun {
 public:
  PhaseRun(const PhaseProgram& program, const Placement& placement, const ComputeModel& compute,
           const Topology& topology, const EngineOptions& options,
           std::map<std::tuple<int64_t, int, int64_t, int64_t>, CollectivePlan>* cache,
           Engine::Scratch* scratch)
      : program_(program),
        placement_(placement),
        compute_(compute),
        topology_(topology),
        options_(options),
        cache_(cache),
        s_(*scratch),
        net_(topology.capacities()) {}

  // `same_graph`: reuse the previous run's dependency graph (Engine::RunSameGraph),
  // reading again the `updated` ops only (null: all).
  StatusOr<PhaseResult> Run(const std::vector<double>& rank_start, bool same_graph,
                            const UpdatedOps* updated = nullptr);

 private:
  Status Build();
  // Build's figures for a program with the graph of the previous run: only the
  // compute times and the message sizes are read from the ops (of `updated` only).
  Status Refresh(const UpdatedOps* updated);
  // Refresh's figures of global op g from `op`.
  // `row_later`: its all-to-all row by CopyRowLater, else now (fetched ahead).
  Status Reread(int64_t g, const Op& op, bool row_later);
  // An all-to-all with bytes must list them in peer_sends.
  Status CheckRow(int64_t rank, const Op& op) const;
  // A compute op's seconds on `rank` (its EngineOptions::rank_scale).
  // Plus global op g's SM-contention slowdown (Scratch::extra).
  double Duration(int64_t rank, const Op& op, int64_t g) const {
    const std::vector<double>& scale = options_.rank_scale;
    const double extra = s_.extra.empty() ? 0.0 : s_.extra[g];
    return (static_cast<size_t>(rank) < scale.size() ? compute_.Seconds(op, scale[rank])
                                                     : compute_.Seconds(op)) +
           extra;
  }
  using CommInfo = Engine::Scratch::CommInfo;
  // Points `c` at a copy of `row`: in its old place when it fits, else at the
  // end of s_.rows; marks `c` changed when the row differs from its old one.
  void SetRow(CommInfo& c, std::span<const PeerBytes> row);
  // SetRow of comm op c, once CopyRows is called: the row is fetched meanwhile
  // (a rank's rows are copied after its ops are read).
  void CopyRowLater(int32_t c, const std::vector<PeerBytes>& row) {
    Prefetch(row.data(), row.size() * sizeof(PeerBytes));
    rows_to_copy_.emplace_back(c, row);
  }
  void CopyRows() {
    for (const auto& [c, row] : rows_to_copy_) SetRow(s_.comm[c], row);
    rows_to_copy_.clear();
  }
  // timing_ from the recycled buffer, `total` long (each op's is written
  // when it becomes ready: SetReady).
  void PrepareTimings(int64_t total);
  // Op g is ready (posted) at `post`: its timing as far as known then (a
  // compute op's whole; a comm op's start and end come when its call ends).
  void SetReady(int64_t g, double post) {
    const Engine::Scratch::OpState& st = s_.op[g];
    timing_[g] = st.is_comm() ? OpTiming{post, 0, 0, Algorithm::kAuto, true}
                              : OpTiming{post, post, post + st.duration, Algorithm::kAuto, false};
  }
  // Drops the rows no comm op points at any more, once they are half of s_.rows.
  void CompactRows();
  std::span<const PeerBytes> Row(const CommInfo& c) const {
    return {s_.rows.data() + c.row_begin, static_cast<size_t>(c.row_size)};
  }
  void Push(double time, EventKind kind, int64_t a) {
    queue_.push(Event(time + 0.0, next_seq_++, kind, a));  // + 0.0: -0 becomes +0
  }
  Status Post(int64_t g, double now);
  Status Rendezvous(int64_t g, double now);
  Status StartInstance(int64_t id, double now);
  Status BeginStage(int64_t id, double now);
  // The hierarchical all-to-all's (token, node) pairs per (token, expert) pair
  // over the domains `devices` span, for the options' routing (uniform draw).
  double NodeRatio(const std::vector<int64_t>& devices) const;
  Status StartTransfer(int64_t id, double now);
  Status StageDone(int64_t id, double now);
  // Op g ended at timing_[g].end (≥ now, the event loop's time). Finishes it
  // and, depth first, every compute op that becomes ready through it: a compute
  // op's times depend on its predecessors only, so its end is known when it
  // becomes ready, and it needs no event (this rank's ops run in order, not
  // interleaved with every other rank's, which keeps them in cache). A comm op
  // that becomes ready is posted now, or by an event at its time: posts (and
  // everything on the network) stay in time order.
  Status Complete(int64_t g, double now);
  const CommInfo& Comm(int64_t g) const { return s_.comm[s_.op[g].comm]; }
  const Op& OpAt(int64_t g) const {
    const int32_t r = s_.op[g].rank;
    return program_.ranks[r].ops[g - s_.offset[r]];
  }
  Status Mismatch(int64_t g, int64_t other, std::string_view what) const;
  // Position of `rank` in `group`, -1 when it is not a member.
  int64_t PositionIn(const Group& group, int64_t rank) const {
    const int32_t p = s_.position[rank * kNumDims + static_cast<int>(group.dim)];
    if (p >= 0 && static_cast<size_t>(p) < group.ranks.size() && group.ranks[p] == rank) return p;
    auto it = std::find(group.ranks.begin(), group.ranks.end(), rank);
    return it == group.ranks.end() ? -1 : it - group.ranks.begin();
  }

  const PhaseProgram& program_;
  const Placement& placement_;
  const ComputeModel& compute_;
  const Topology& topology_;
  const EngineOptions& options_;
  std::map<std::tuple<int64_t, int, int64_t, int64_t>, CollectivePlan>* cache_;
  Engine::Scratch& s_;
  FlowNetwork net_;

  std::vector<OpTiming> timing_;  // per global op; becomes the result's
  std::vector<Instance> instances_;
  std::vector<int32_t> members_;            // global op per instance and group position
  FlatIndex collective_index_, p2p_index_;  // (group, seq) and (dim, src, dst, seq) → instance
  std::vector<int32_t> chain_;              // Complete's stack of finished ops
  // Build: the rank's all-to-all rows, by comm op, copied after its other fields.
  std::vector<std::pair<int32_t, std::span<const PeerBytes>>> rows_to_copy_;
  EventHeap queue_;
  uint64_t next_seq_ = 0;
  int64_t done_ = 0;
};

// One pass over every op (in order, for the memory prefetcher): rank, compute
// time, comm flag, predecessor count and edges; after each rank, its part of
// the successor CSR (edges never leave a rank, so its edges and op states are
// still in cache when they are sorted).
Status PhaseRun::Build() {
  const size_t ranks = program_.ranks.size();
  s_.offset.assign(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r) {
    s_.offset[r + 1] = s_.offset[r] + static_cast<int64_t>(program_.ranks[r].ops.size());
  }
  s_.graph = false;
  const int64_t total = s_.offset[ranks];
  if (total >= kMaxOps) {
    return InvalidArgument("program has {} ops, more than the engine supports", total);
  }
  s_.op.resize(total + 1);
  s_.preds.resize(total);
  PrepareTimings(total);
  s_.p2p_ops = 0;
  std::swap(s_.comm, s_.spare_comm);  // the previous graph's comm ops and rows
  std::swap(s_.rows, s_.spare_rows);
  s_.comm.clear();
  s_.rows.clear();
  s_.succ.clear();
  s_.roots.clear();
  s_.root_begin.assign(1, 0);
  for (size_t r = 0; r < ranks; ++r) {
    s_.edge_from.clear();
    s_.edge_to.clear();
    int32_t last[kNumStreams];
    std::fill(std::begin(last), std::end(last), -1);
    const auto& ops = program_.ranks[r].ops;
    const int32_t* deps = program_.ranks[r].deps.data();
    const int32_t base = static_cast<int32_t>(s_.offset[r]);
    for (size_t i = 0; i < ops.size(); ++i) {
      // The Ops are cold (written by the builder): fetch ahead what is read
      // of them (their deps are read in order from the rank's block).
      if (i + kAhead < ops.size()) PrefetchOnce(&ops[i + kAhead], kHotBytes);
      const Op& op = ops[i];
      const int32_t g = base + static_cast<int32_t>(i);
      Engine::Scratch::OpState& st = s_.op[g];
      st.rank = static_cast<int32_t>(r);
      int32_t& l = last[options_.serial_comm ? 0 : static_cast<int>(op.stream)];
      // Successor order as before: the stream successor, then deps, by op.
      if (l >= 0) {
        s_.edge_from.push_back(l);
        s_.edge_to.push_back(g);
      }
      st.pending = op.deps_count + (l >= 0 ? 1 : 0);
      s_.preds[g] = st.pending;
      st.ready = 0;
      if (st.pending == 0) s_.roots.push_back(g);
      l = g;
      for (const int32_t* d = deps + op.deps_begin; d != deps + op.deps_begin + op.deps_count;
           ++d) {
        s_.edge_from.push_back(base + *d);
        s_.edge_to.push_back(g);
      }
      st.comm = -1;
      st.duration = 0;
      if (op.is_comm()) {
        RETURN_IF_ERROR(CheckRow(r, op));
        st.comm = static_cast<int32_t>(s_.comm.size());
        s_.comm.push_back({0, 0, op.group_id, op.peer, op.seq, op.bytes, op.collective, op.dim});
        if (op.collective == Collective::kSend || op.collective == Collective::kRecv) ++s_.p2p_ops;
        CopyRowLater(st.comm, op.peer_sends);
      } else {
        st.duration = Duration(st.rank, op, g);
      }
      st.succ_begin = 0;  // its successor count, until the CSR is made
    }
    s_.root_begin.push_back(static_cast<int32_t>(s_.roots.size()));
    // The rank's rows; a comm op the previous graph had at the same index,
    // with the same call and row, is unchanged (its all-to-all plan is kept).
    for (const auto& [c, row] : rows_to_copy_) {
      CommInfo& n = s_.comm[c];
      SetRow(n, row);
      n.changed = true;
      if (static_cast<size_t>(c) < s_.spare_comm.size()) {
        const CommInfo& o = s_.spare_comm[c];
        const std::span<const PeerBytes> old(s_.spare_rows.data() + o.row_begin,
                                             static_cast<size_t>(o.row_size));
        n.changed = o.group_id != n.group_id || o.seq != n.seq || o.peer != n.peer ||
                    o.bytes != n.bytes || o.collective != n.collective || o.dim != n.dim ||
                    !std::equal(row.begin(), row.end(), old.begin(), old.end());
      }
    }
    rows_to_copy_.clear();
    // Counting sort of the rank's edges by source, stable: successors in
    // creation order. succ_begin: the count, then the end, then (filled from
    // the last edge back) the begin; an op's end is the next op's begin.
    for (int32_t f : s_.edge_from) ++s_.op[f].succ_begin;
    int32_t next = static_cast<int32_t>(s_.succ.size());
    for (int64_t g = s_.offset[r]; g < s_.offset[r + 1]; ++g) {
      next += s_.op[g].succ_begin;
      s_.op[g].succ_begin = next;
    }
    s_.succ.resize(next);
    for (size_t e = s_.edge_from.size(); e-- > 0;) {
      s_.succ[--s_.op[s_.edge_from[e]].succ_begin] = s_.edge_to[e];
    }
  }
  s_.op[total] = Engine::Scratch::OpState{};
  s_.op[total].succ_begin = static_cast<int32_t>(s_.succ.size());
  s_.graph = true;
  return Status::Ok();
}

Status PhaseRun::CheckRow(int64_t rank, const Op& op) const {
  if (op.collective == Collective::kAllToAll && op.peer_sends.empty() && op.bytes != 0) {
    return InvalidArgument(
        "rank {} op {} ({}): an all-to-all of {} B without peer_sends (its bytes to each "
        "group member, which the simulator reads)",
        rank, op.id, OpName(op), op.bytes);
  }
  return Status::Ok();
}

Status PhaseRun::Reread(int64_t g, const Op& op, bool row_later) {
  Engine::Scratch::OpState& st = s_.op[g];
  if (st.is_comm()) {  // the fields Update may change (the row in place)
    RETURN_IF_ERROR(CheckRow(st.rank, op));
    Engine::Scratch::CommInfo& c = s_.comm[st.comm];
    // Changed (its all-to-all decomposed again) only when what the plan is
    // made of differs: re-running an unchanged program keeps every plan.
    c.changed = c.bytes != op.bytes || c.peer != op.peer;
    c.bytes = op.bytes;
    c.peer = op.peer;
    if (row_later) {
      CopyRowLater(st.comm, op.peer_sends);
    } else {
      SetRow(c, op.peer_sends);
    }
  } else {
    st.duration = Duration(st.rank, op, g);
  }
  return Status::Ok();
}

Status PhaseRun::Refresh(const UpdatedOps* updated) {
  const size_t ranks = program_.ranks.size();
  if (!s_.graph || s_.offset.size() != ranks + 1) {
    return InternalError("the engine has no dependency graph of this program to reuse");
  }
  for (size_t r = 0; r < ranks; ++r) {
    const auto& ops = program_.ranks[r].ops;
    if (static_cast<int64_t>(ops.size()) != s_.offset[r + 1] - s_.offset[r]) {
      return InternalError("rank {} has {} ops, the reused dependency graph {}", r, ops.size(),
                           s_.offset[r + 1] - s_.offset[r]);
    }
  }
  PrepareTimings(s_.offset[ranks]);
  for (int64_t g = 0; g < s_.offset[ranks]; ++g) {
    s_.op[g].pending = s_.preds[g];
    s_.op[g].ready = 0;
  }
  if (updated != nullptr) {
    if (updated->by_rank.size() != ranks) {
      return InternalError("updated ops list {} ranks, the program {}", updated->by_rank.size(),
                           ranks);
    }
    for (Engine::Scratch::CommInfo& c : s_.comm) c.changed = false;
    for (size_t r = 0; r < ranks; ++r) {
      const auto& ops = program_.ranks[r].ops;
      const std::vector<int32_t>& ids = updated->by_rank[r];
      for (size_t k = 0; k < ids.size(); ++k) {
        const int32_t id = ids[k];
        if (id < 0 || static_cast<size_t>(id) >= ops.size()) {
          return InternalError("updated op {} of rank {} is not in the program", id, r);
        }
        // The ops are cold: fetch those a little ahead, then their vectors.
        if (k + kAhead < ids.size() && static_cast<size_t>(ids[k + kAhead]) < ops.size()) {
          PrefetchOnce(&ops[ids[k + kAhead]], kHotBytes);
        }
        if (k + kAhead / 2 < ids.size() && static_cast<size_t>(ids[k + kAhead / 2]) < ops.size()) {
          const Op& ahead = ops[ids[k + kAhead / 2]];
          if (!ahead.expert_tokens.empty()) Prefetch(ahead.expert_tokens.data(), 1);
          if (!ahead.peer_sends.empty()) Prefetch(ahead.peer_sends.data(), 1);
        }
        RETURN_IF_ERROR(Reread(s_.offset[r] + id, ops[id], /*row_later=*/false));
      }
    }
    CompactRows();
    return Status::Ok();
  }
  for (size_t r = 0; r < ranks; ++r) {
    const auto& ops = program_.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i + kAhead < ops.size()) PrefetchOnce(&ops[i + kAhead], kHotBytes);
      RETURN_IF_ERROR(Reread(s_.offset[r] + static_cast<int64_t>(i), ops[i], /*row_later=*/true));
    }
    CopyRows();
  }
  CompactRows();
  return Status::Ok();
}

void PhaseRun::PrepareTimings(int64_t total) {
  timing_ = std::move(s_.spare_timings);  // a recycled result's buffer, if any
  timing_.resize(total);                  // a recycled buffer of this size is not written here
}

void PhaseRun::SetRow(CommInfo& c, std::span<const PeerBytes> row) {
  if (!std::equal(row.begin(), row.end(), Row(c).begin(), Row(c).end())) c.changed = true;
  if (row.size() > static_cast<size_t>(c.row_size)) {  // else in its own place
    c.row_begin = static_cast<int64_t>(s_.rows.size());
    s_.rows.resize(s_.rows.size() + row.size());
  }
  c.row_size = static_cast<int32_t>(row.size());
  std::copy(row.begin(), row.end(), s_.rows.begin() + c.row_begin);
}

void PhaseRun::CompactRows() {
  size_t live = 0;
  for (const CommInfo& c : s_.comm) live += static_cast<size_t>(c.row_size);
  if (s_.rows.size() <= 2 * live + 64) return;
  s_.spare_rows.clear();
  for (CommInfo& c : s_.comm) {
    const std::span<const PeerBytes> row = Row(c);
    c.row_begin = static_cast<int64_t>(s_.spare_rows.size());
    s_.spare_rows.insert(s_.spare_rows.end(), row.begin(), row.end());
  }
  std::swap(s_.rows, s_.spare_rows);
}

Status PhaseRun::Mismatch(int64_t g, int64_t other, std::string_view what) const {
  const Op& a = OpAt(g);
  const Op& b = OpAt(other);
  return InvalidArgument(
      "program mismatch: rank {} op {} ({}) and rank {} op {} ({}) are matched as one call "
      "but differ in {}",
      s_.op[g].rank, a.id, OpName(a), s_.op[other].rank, b.id, OpName(b), what);
}
Status PhaseRun::Post(int64_t g, double now) {
  SetReady(g, now);
  if (s_.op[g].is_comm()) return Rendezvous(g, now);
  return Complete(g, now);
}

Status PhaseRun::Rendezvous(int64_t g, double now) {
  const CommInfo& op = Comm(g);
  const int64_t rank = s_.op[g].rank;
  const bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
  int32_t id;
  int64_t position;
  auto add_instance = [&](int32_t expected) {
    instances_.emplace_back();
    instances_.back().members = static_cast<int64_t>(members_.size());
    instances_.back().expected = expected;
    members_.resize(members_.size() + expected, -1);
  };
  if (p2p) {
    const bool send = op.collective == Collective::kSend;
    const uint64_t src = static_cast<uint64_t>(send ? rank : op.peer);
    const uint64_t dst = static_cast<uint64_t>(send ? op.peer : rank);
    const uint64_t key = (((static_cast<uint64_t>(op.dim) << 20 | src) << 20 | dst) << 23) ^
                         static_cast<uint64_t>(op.seq);
    bool inserted;
    std::tie(id, inserted) = p2p_index_.TryEmplace(key, static_cast<int32_t>(instances_.size()));
    if (inserted) add_instance(2);
    position = send ? 0 : 1;
  } else {
    if (op.group_id < 0 || op.group_id >= static_cast<int64_t>(placement_.groups().size())) {
      return InvalidArgument("rank {} op {} ({}): unknown group {}", rank, OpAt(g).id,
                             OpName(OpAt(g)), op.group_id);
    }
    const Group& group = placement_.groups()[op.group_id];
    // The phase picks the kernels: a decode step's plan is not a prefill's.
    const bool decode = program_.phase == Phase::kDecode;
    const uint64_t key = static_cast<uint64_t>(op.group_id) << 32 | static_cast<uint64_t>(op.seq) |
                         (decode ? uint64_t{1} << 63 : 0);
    bool inserted;
    std::tie(id, inserted) =
        collective_index_.TryEmplace(key, static_cast<int32_t>(instances_.size()));
    if (inserted) add_instance(static_cast<int32_t>(group.ranks.size()));
    position = PositionIn(group, rank);
    if (position < 0) {
      return InvalidArgument("rank {} op {} ({}) is not a member of group {}", rank, OpAt(g).id,
                             OpName(OpAt(g)), op.group_id);
    }
  }
  Instance& inst = instances_[id];
  int32_t& member = members_[inst.members + position];
  if (member >= 0) return Mismatch(g, member, "seq (posted twice)");
  if (inst.first >= 0) {
    const CommInfo& first = Comm(inst.first);
    if (!p2p && first.collective != op.collective) return Mismatch(g, inst.first, "collective");
    if (op.collective != Collective::kAllToAll && first.bytes != op.bytes) {
      return Mismatch(g, inst.first, "bytes");
    }
  } else {
    inst.first = static_cast<int32_t>(g);
  }
  member = static_cast<int32_t>(g);
  if (op.collective == Collective::kAllToAll) {
    // Its per-peer row is read when the last member posts: fetch it meanwhile.
    const char* row = reinterpret_cast<const char*>(Row(op).data());
    const size_t bytes = Row(op).size_bytes();
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(row + o);
  }
  if (++inst.posted == inst.expected) return StartInstance(id, now);
  return Status::Ok();
}

Status PhaseRun::StartInstance(int64_t id, double now) {
  Instance& inst = instances_[id];
  inst.start = now;
  const CommInfo& op = Comm(inst.first);
  const bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
  const Group* group = p2p ? nullptr : &placement_.groups()[op.group_id];
  int64_t root = 0;
  if (op.collective == Collective::kBroadcast) {
    auto it = std::find(group->ranks.begin(), group->ranks.end(), op.peer);
    root = it == group->ranks.end() ? 0 : it - group->ranks.begin();
  }
  auto make_call = [&] {
    CollectiveCall call;
    call.collective = op.collective;
    call.bytes = op.bytes;
    call.root = root;
    if (p2p) {
      call.devices = {placement_.Location(s_.op[members_[inst.members]].rank).device,
                      placement_.Location(s_.op[members_[inst.members + 1]].rank).device};
    } else {
      for (int64_t r : group->ranks) call.devices.push_back(placement_.Location(r).device);
    }
    return call;
  };
  if (op.collective == Collective::kAllToAll) {
    // Planned again only when a member's row changed since the previous run
    // (or the call's bytes: those of the member that posted first).
    // The phase picks the kernels: a decode step's plan is not a prefill's.
    const bool decode = program_.phase == Phase::kDecode;
    const uint64_t key = static_cast<uint64_t>(op.group_id) << 32 | static_cast<uint64_t>(op.seq) |
                         (decode ? uint64_t{1} << 63 : 0);
    bool changed = false;
    for (int32_t i = 0; i < inst.expected; ++i) {
      changed = changed || Comm(members_[inst.members + i]).changed;
    }
    auto it = s_.all_to_all_plans.find(key);
    if (changed || it == s_.all_to_all_plans.end() || it->second.bytes != op.bytes) {
      CollectiveCall call = make_call();
      for (int32_t i = 0; i < inst.expected; ++i) {
        call.sparse_rows.push_back(Row(Comm(members_[inst.members + i])));
      }
      call.all_to_all = decode ? options_.decode_all_to_all : options_.prefill_all_to_all;
      if (call.all_to_all == AllToAllKind::kHierarchical) call.node_ratio = NodeRatio(call.devices);
      ASSIGN_OR_RETURN(CollectivePlan plan,
                       Decompose(topology_, call, options_.allreduce, options_.protocol));
      it = s_.all_to_all_plans
               .insert_or_assign(key, Engine::Scratch::AllToAllPlan{op.bytes, std::move(plan)})
               .first;
    }
    inst.plan = &it->second.plan;
  } else {
    // Same group, collective, size and root: same plan.
    const auto key = std::make_tuple(p2p ? -1 - s_.op[members_[inst.members]].rank * 65536 -
                                               s_.op[members_[inst.members + 1]].rank
                                         : op.group_id,
                                     static_cast<int>(op.collective), op.bytes, root);
    auto it = cache_->find(key);
    if (it == cache_->end()) {
      ASSIGN_OR_RETURN(CollectivePlan plan,
                       Decompose(topology_, make_call(), options_.allreduce, options_.protocol));
      it = cache_->emplace(key, std::move(plan)).first;
    }
    inst.plan = &it->second;
  }
  inst.stage = 0;
  return BeginStage(id, now);
}

double PhaseRun::NodeRatio(const std::vector<int64_t>& devices) const {
  const ExchangeRouting& r = options_.routing;
  if (r.topk <= 0 || r.experts <= 0) return 1;
  std::vector<int64_t> domains;
  for (int64_t d : devices) domains.push_back(topology_.DomainOf(d));
  std::sort(domains.begin(), domains.end());
  const int64_t m = std::unique(domains.begin(), domains.end()) - domains.begin();
  if (m < 2 || r.experts % m != 0) return 1;
  // Groups default to one per node, as DeepEP's kernels assume (moe_exchange.h).
  const int64_t groups = r.groups > 1 ? r.groups : m;
  return ExpectedBinsReached(r.experts, m, r.topk, groups, r.group_limit) /
         static_cast<double>(r.topk);
}

Status PhaseRun::BeginStage(int64_t id, double now) {
  Instance& inst = instances_[id];
  if (inst.stage >= inst.plan->stages.size()) return StageDone(id, now);
  const double latency = inst.plan->stages[inst.stage].latency;
  if (latency > 0) {
    Push(now + latency, EventKind::kStageStart, id);
    return Status::Ok();
  }
  return StartTransfer(id, now);
}

Status PhaseRun::StartTransfer(int64_t id, double now) {
  Instance& inst = instances_[id];
  const Stage& stage = inst.plan->stages[inst.stage];
  bool any = false;
  for (const LinkLoad& l : stage.loads) any = any || l.bytes > 0;
  if (!any) return StageDone(id, now);
  net_.Start(now, stage.loads, id);
  return Status::Ok();
}

Status PhaseRun::StageDone(int64_t id, double now) {
  Instance& inst = instances_[id];
  if (inst.stage < inst.plan->stages.size()) ++inst.stage;
  if (inst.stage < inst.plan->stages.size()) return BeginStage(id, now);
  const int64_t begin = inst.members, end = begin + inst.expected;
  for (int64_t i = begin; i < end; ++i) {
    timing_[members_[i]].start = inst.start;
    timing_[members_[i]].algorithm = inst.plan->algorithm;
    timing_[members_[i]].protocol =
        topology_.tuning().modelled ? inst.plan->protocol : Protocol::kAuto;
  }
  // By index: completing may add instances and members and move both vectors.
  for (int64_t i = begin; i < end; ++i) {
    timing_[members_[i]].end = now;
    RETURN_IF_ERROR(Complete(members_[i], now));
  }
  return Status::Ok();
}

Status PhaseRun::Complete(int64_t g, double now) {
  // A stack of finished ops whose successors are still to update; a nested
  // call (through Rendezvous) works above `base` and empties its part.
  const size_t base = chain_.size();
  chain_.push_back(static_cast<int32_t>(g));
  while (chain_.size() > base) {
    const int32_t f = chain_.back();
    chain_.pop_back();
    Engine::Scratch::OpState& st = s_.op[f];
    const double end = timing_[f].end;
    // The rank's next ops are usually next: fetch their state and timings.
    if (f + kStateAhead < static_cast<int64_t>(s_.op.size())) {
      __builtin_prefetch(&s_.op[f + kStateAhead]);
      __builtin_prefetch(&timing_[f + kStateAhead], 1);
      // A comm op a little ahead (its state fetched earlier): its match fields.
      const int32_t c = s_.op[f + kStateAhead / 2].comm;
      if (c >= 0) __builtin_prefetch(&s_.comm[c]);
    }
    const int32_t succ_end = s_.op[f + 1].succ_begin;
    if (succ_end + kSuccAhead < static_cast<int32_t>(s_.succ.size())) {
      __builtin_prefetch(&s_.succ[succ_end + kSuccAhead]);
    }
    st.pending = -1;  // finished
    ++done_;
    double& rank_end = s_.rank_end[st.rank];
    rank_end = std::max(rank_end, end);
    for (int32_t i = st.succ_begin; i < succ_end; ++i) {
      const int32_t n = s_.succ[i];
      Engine::Scratch::OpState& next = s_.op[n];
      next.ready = std::max(next.ready, end);  // ready when its last predecessor ends
      if (--next.pending != 0) continue;
      SetReady(n, next.ready);
      if (!next.is_comm()) {
        chain_.push_back(n);
      } else if (next.ready == now) {
        RETURN_IF_ERROR(Rendezvous(n, now));
      } else {
        Push(next.ready, EventKind::kPost, n);
      }
    }
  }
  return Status::Ok();
}

StatusOr<PhaseResult> PhaseRun::Run(const std::vector<double>& rank_start, bool same_graph,
                                    const UpdatedOps* updated) {
  const size_t ranks = program_.ranks.size();
  if (static_cast<int64_t>(ranks) != placement_.world_size()) {
    return InvalidArgument("program has {} ranks, the placement {}", ranks,
                           placement_.world_size());
  }
  if (!s_.plans_current) s_.all_to_all_plans.clear();
  s_.plans_current = false;  // until this run has finished
  RETURN_IF_ERROR(same_graph ? Refresh(updated) : Build());
  const int64_t total = s_.offset[ranks];
  const size_t comm_ops = s_.comm.size();  // of the graph, built or reused
  collective_index_.Reset(comm_ops - s_.p2p_ops);
  p2p_index_.Reset(s_.p2p_ops);
  instances_.reserve(comm_ops);
  s_.rank_end.assign(ranks, 0);
  for (size_t r = 0; r < ranks; ++r) {
    const double start = r < rank_start.size() ? rank_start[r] : 0.0;
    s_.rank_end[r] = start;
    Push(start, EventKind::kRankStart, static_cast<int64_t>(r));
  }
  std::vector<int64_t> finished;
  while (true) {
    const double tq = queue_.empty() ? kInf : queue_.top().time();
    const double tn = net_.NextCompletion();
    if (tq == kInf && tn == kInf) break;
    if (tn <= tq) {
      finished.clear();
      net_.AdvanceTo(tn, &finished);
      for (int64_t id : finished) RETURN_IF_ERROR(StageDone(id, tn));
      continue;
    }
    const Event e = queue_.top();
    queue_.pop();
    const double t = e.time();
    switch (e.kind()) {
      case EventKind::kRankStart:
        // Ops that wait for nothing (not those made ready meanwhile).
        for (int32_t i = s_.root_begin[e.a()]; i < s_.root_begin[e.a() + 1]; ++i) {
          RETURN_IF_ERROR(Post(s_.roots[i], t));
        }
        break;
      case EventKind::kPost:
        RETURN_IF_ERROR(Rendezvous(e.a(), t));
        break;
      case EventKind::kStageStart:
        RETURN_IF_ERROR(StartTransfer(e.a(), t));
        break;
    }
  }
  if (done_ != total) {
    for (int64_t g = 0; g < total; ++g) {
      if (s_.op[g].pending >= 0) {
        const Op& op = OpAt(g);
        const bool posted = s_.op[g].pending == 0;
        return Status(
            StatusCode::kFailedPrecondition,
            fmt::format(
                "deadlock in {} step {}: rank {} op {} ({}) {}", PhaseName(program_.phase),
                program_.step, s_.op[g].rank, op.id, OpName(op),
                posted ? "was posted but its peers never matched it" : "never became ready"));
      }
    }
    return InternalError("simulation ended with {} of {} ops done", done_, total);
  }
  s_.plans_current = true;
  PhaseResult result;
  result.timings.flat = std::move(timing_);
  result.timings.offset = s_.offset;
  result.rank_end = s_.rank_end;
  result.ops = total;
  result.transfers = net_.transfers_started();
  return result;
}

}  // namespace

Engine::Engine(const Placement& placement, const ComputeModel& compute, const Topology& topology,
               EngineOptions options)
    : placement_(placement),
      compute_(compute),
      topology_(topology),
      options_(options),
      scratch_(std::make_unique<Scratch>()) {
  scratch_->position.assign(placement.world_size() * kNumDims, -1);
  for (const Group& group : placement.groups()) {
    for (size_t i = 0; i < group.ranks.size(); ++i) {
      scratch_->position[group.ranks[i] * kNumDims + static_cast<int>(group.dim)] =
          static_cast<int32_t>(i);
    }
  }
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;

StatusOr<PhaseResult> Engine::Run(const PhaseProgram& program,
                                  const std::vector<double>& rank_start) {
  return RunContended(program, rank_start, false, nullptr);
}

namespace {

// SM contention: each compute op's added seconds, given a run's timings. The
// rank's all-to-all kernels hold a share s of its SMs from launch (post) to
// end; a compute op progresses at 1 − s of the device while they are held, at
// 1 otherwise: from its start, its own time C of work ends where the held and
// free stretches add up to C (C + s·T for a held time T; at most C/(1 − s)).
// `extra`: the slowdowns the run had (its spans include them).
std::vector<double> ContentionExtra(const PhaseProgram& program, const PhaseResult& run,
                                    const std::vector<double>& extra, double share) {
  std::vector<double> out(run.timings.flat.size(), 0.0);
  std::vector<std::pair<double, double>> held;  // a rank's all-to-all spans, merged
  for (size_t r = 0; r < program.ranks.size(); ++r) {
    const auto& ops = program.ranks[r].ops;
    const std::span<const OpTiming> t = run.timings[r];
    const int64_t base = run.timings.offset[r];
    held.clear();
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].collective == Collective::kAllToAll && t[i].end > t[i].post) {
        held.emplace_back(t[i].post, t[i].end);
      }
    }
    if (held.empty()) continue;
    std::sort(held.begin(), held.end());
    size_t merged = 0;
    for (size_t k = 1; k < held.size(); ++k) {
      if (held[k].first <= held[merged].second) {
        held[merged].second = std::max(held[merged].second, held[k].second);
      } else {
        held[++merged] = held[k];
      }
    }
    held.resize(merged + 1);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (t[i].comm) continue;
      const double had = extra.empty() ? 0.0 : extra[base + i];
      double work = t[i].end - t[i].start - had;  // its own time C
      if (work <= 0) continue;
      const double start = t[i].start;
      double now = start;
      auto it = std::lower_bound(
          held.begin(), held.end(), now,
          [](const std::pair<double, double>& h, double at) { return h.second <= at; });
      for (; it != held.end() && work > 0; ++it) {
        if (it->first > now) {  // free until the next held stretch
          const double gap = it->first - now;
          if (work <= gap) break;
          work -= gap;
          now = it->first;
        }
        const double room = (it->second - now) * (1 - share);
        if (work <= room) {
          now += work / (1 - share);
          work = 0;
        } else {
          work -= room;
          now = it->second;
        }
      }
      const double end = now + work;
      out[base + i] = std::max(0.0, end - start - (t[i].end - t[i].start - had));
    }
  }
  return out;
}

}  // namespace

StatusOr<PhaseResult> Engine::RunContended(const PhaseProgram& program,
                                           const std::vector<double>& rank_start, bool same_graph,
                                           const UpdatedOps* updated) {
  const double share =
      program.phase == Phase::kDecode ? options_.decode_sm_share : options_.prefill_sm_share;
  // A previous run's slowdowns are in the ops' durations: read every op again.
  if (!scratch_->extra.empty()) {
    scratch_->extra.clear();
    updated = nullptr;
  }
  PhaseRun first(program, placement_, compute_, topology_, options_, &plan_cache_, scratch_.get());
  ASSIGN_OR_RETURN(PhaseResult result, first.Run(rank_start, same_graph, updated));
  if (share <= 0) return result;
  for (int pass = 0; pass < kContentionPasses; ++pass) {
    std::vector<double> extra = ContentionExtra(program, result, scratch_->extra, share);
    double change = 0;
    for (size_t g = 0; g < extra.size(); ++g) {
      const double had = scratch_->extra.empty() ? 0.0 : scratch_->extra[g];
      change = std::max(change, std::abs(extra[g] - had));
    }
    if (change <= 1e-12) break;  // settled (or nothing overlapped)
    scratch_->extra = std::move(extra);
    Recycle(std::move(result));
    PhaseRun again(program, placement_, compute_, topology_, options_, &plan_cache_,
                   scratch_.get());
    ASSIGN_OR_RETURN(result, again.Run(rank_start, true, nullptr));
  }
  return result;
}

void Engine::Recycle(PhaseResult&& result) {
  scratch_->spare_timings = std::move(result.timings.flat);
}

StatusOr<PhaseResult> Engine::RunSameGraph(const PhaseProgram& program,
                                           const std::vector<double>& rank_start,
                                           const UpdatedOps* updated) {
  return RunContended(program, rank_start, true, updated);
}

}  // namespace shardscope::sim
