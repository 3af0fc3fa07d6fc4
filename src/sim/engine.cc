#include "sim/engine.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

#include "sim/network.h"

namespace shardscope::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class EventKind : uint8_t {
  kRankStart,   // a = rank: post its ops that wait for nothing
  kOpDone,      // a = global op index of a compute op
  kStageStart,  // a = collective instance: its stage's latency has passed
};

struct Event {
  double time;
  uint64_t seq;  // insertion order: ties run first-in, first-out
  EventKind kind;
  int64_t a;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// One matched collective or send/recv pair in flight.
struct Instance {
  std::vector<int64_t> members;  // global op index per group position (p2p: send, recv)
  int32_t posted = 0;
  int32_t expected = 0;
  int64_t first = -1;  // the first posted op, for consistency checks
  const CollectivePlan* plan = nullptr;
  CollectivePlan own_plan;  // when not cached
  size_t stage = 0;
  double start = 0;
};

// The state of one Run, split from the Engine so that the Engine stays reusable.
class PhaseRun {
 public:
  PhaseRun(const PhaseProgram& program, const Placement& placement, const ComputeModel& compute,
           const Topology& topology, const EngineOptions& options,
           std::map<std::tuple<int64_t, int, int64_t, int64_t>, CollectivePlan>* cache)
      : program_(program),
        placement_(placement),
        compute_(compute),
        topology_(topology),
        options_(options),
        cache_(cache),
        net_(topology.capacities()) {}

  StatusOr<PhaseResult> Run(const std::vector<double>& rank_start);

 private:
  void Build();
  void Push(double time, EventKind kind, int64_t a) {
    queue_.push(Event{time, next_seq_++, kind, a});
  }
  Status Post(int64_t g, double now);
  Status Rendezvous(int64_t g, double now);
  Status StartInstance(int64_t id, double now);
  Status BeginStage(int64_t id, double now);
  Status StartTransfer(int64_t id, double now);
  Status StageDone(int64_t id, double now);
  Status Complete(int64_t g, double now);
  const Op& OpAt(int64_t g) const {
    return program_.ranks[rank_of_[g]].ops[g - offset_[rank_of_[g]]];
  }
  Status Mismatch(int64_t g, int64_t other, std::string_view what) const;

  const PhaseProgram& program_;
  const Placement& placement_;
  const ComputeModel& compute_;
  const Topology& topology_;
  const EngineOptions& options_;
  std::map<std::tuple<int64_t, int, int64_t, int64_t>, CollectivePlan>* cache_;
  FlowNetwork net_;

  std::vector<int64_t> offset_;      // global index of each rank's op 0
  std::vector<int32_t> rank_of_;     // rank of each global op
  std::vector<int32_t> pending_;     // unfinished predecessors (deps + stream order)
  std::vector<int64_t> succ_begin_;  // CSR of successors
  std::vector<int64_t> succ_;
  std::vector<OpTiming> timing_;   // per global op
  std::vector<uint8_t> finished_;  // per global op
  std::vector<Instance> instances_;
  std::unordered_map<uint64_t, int64_t> collective_index_, p2p_index_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t next_seq_ = 0;
  int64_t done_ = 0;
  std::vector<double> rank_end_;
};

void PhaseRun::Build() {
  const size_t ranks = program_.ranks.size();
  offset_.assign(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r) offset_[r + 1] = offset_[r] + program_.ranks[r].ops.size();
  const int64_t total = offset_[ranks];
  rank_of_.resize(total);
  pending_.assign(total, 0);
  succ_begin_.assign(total + 1, 0);
  std::vector<int64_t> pred(total, -1);  // stream predecessor
  for (size_t r = 0; r < ranks; ++r) {
    int64_t last[kNumStreams];
    std::fill(std::begin(last), std::end(last), -1);
    const auto& ops = program_.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const int64_t g = offset_[r] + static_cast<int64_t>(i);
      rank_of_[g] = static_cast<int32_t>(r);
      int64_t& l = last[static_cast<int>(ops[i].stream)];
      pred[g] = l;
      if (l >= 0) ++succ_begin_[l + 1];
      l = g;
      pending_[g] = static_cast<int32_t>(ops[i].deps.size()) + (pred[g] >= 0 ? 1 : 0);
      for (int32_t d : ops[i].deps) ++succ_begin_[offset_[r] + d + 1];
    }
  }
  for (int64_t g = 0; g < total; ++g) succ_begin_[g + 1] += succ_begin_[g];
  succ_.resize(succ_begin_[total]);
  std::vector<int64_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (int64_t g = 0; g < total; ++g) {
    if (pred[g] >= 0) succ_[fill[pred[g]]++] = g;
    for (int32_t d : OpAt(g).deps) {
      const int64_t dg = offset_[rank_of_[g]] + d;
      succ_[fill[dg]++] = g;
    }
  }
  timing_.assign(total, OpTiming{});
  finished_.assign(total, 0);
}

Status PhaseRun::Mismatch(int64_t g, int64_t other, std::string_view what) const {
  const Op& a = OpAt(g);
  const Op& b = OpAt(other);
  return InvalidArgument(
      "program mismatch: rank {} op {} ({}) and rank {} op {} ({}) are matched as one call "
      "but differ in {}",
      rank_of_[g], a.id, OpName(a), rank_of_[other], b.id, OpName(b), what);
}

Status PhaseRun::Post(int64_t g, double now) {
  OpTiming& t = timing_[g];
  t.post = now;
  const Op& op = OpAt(g);
  if (!op.is_comm()) {
    t.start = now;
    Push(now + compute_.Seconds(op), EventKind::kOpDone, g);
    return Status::Ok();
  }
  return Rendezvous(g, now);
}

Status PhaseRun::Rendezvous(int64_t g, double now) {
  const Op& op = OpAt(g);
  const int64_t rank = rank_of_[g];
  int64_t id;
  int64_t position;
  if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
    const bool send = op.collective == Collective::kSend;
    const uint64_t src = static_cast<uint64_t>(send ? rank : op.peer);
    const uint64_t dst = static_cast<uint64_t>(send ? op.peer : rank);
    const uint64_t key = (((static_cast<uint64_t>(op.dim) << 20 | src) << 20 | dst) << 23) ^
                         static_cast<uint64_t>(op.seq);
    auto [it, inserted] = p2p_index_.try_emplace(key, static_cast<int64_t>(instances_.size()));
    if (inserted) {
      instances_.emplace_back();
      instances_.back().members.assign(2, -1);
      instances_.back().expected = 2;
    }
    id = it->second;
    position = send ? 0 : 1;
  } else {
    if (op.group_id < 0 || op.group_id >= static_cast<int64_t>(placement_.groups().size())) {
      return InvalidArgument("rank {} op {} ({}): unknown group {}", rank, op.id, OpName(op),
                             op.group_id);
    }
    const Group& group = placement_.groups()[op.group_id];
    const uint64_t key = static_cast<uint64_t>(op.group_id) << 32 | static_cast<uint64_t>(op.seq);
    auto [it, inserted] =
        collective_index_.try_emplace(key, static_cast<int64_t>(instances_.size()));
    if (inserted) {
      instances_.emplace_back();
      instances_.back().members.assign(group.ranks.size(), -1);
      instances_.back().expected = static_cast<int32_t>(group.ranks.size());
    }
    id = it->second;
    auto pos = std::find(group.ranks.begin(), group.ranks.end(), rank);
    if (pos == group.ranks.end()) {
      return InvalidArgument("rank {} op {} ({}) is not a member of group {}", rank, op.id,
                             OpName(op), op.group_id);
    }
    position = pos - group.ranks.begin();
  }
  Instance& inst = instances_[id];
  if (inst.members[position] >= 0) return Mismatch(g, inst.members[position], "seq (posted twice)");
  if (inst.first >= 0) {
    const Op& first = OpAt(inst.first);
    const bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
    if (!p2p && first.collective != op.collective) return Mismatch(g, inst.first, "collective");
    if (op.collective != Collective::kAllToAll && first.bytes != op.bytes) {
      return Mismatch(g, inst.first, "bytes");
    }
  } else {
    inst.first = g;
  }
  inst.members[position] = g;
  if (++inst.posted == inst.expected) return StartInstance(id, now);
  return Status::Ok();
}

Status PhaseRun::StartInstance(int64_t id, double now) {
  Instance& inst = instances_[id];
  inst.start = now;
  const Op& op = OpAt(inst.first);
  CollectiveCall call;
  call.collective = op.collective;
  call.bytes = op.bytes;
  const bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
  if (p2p) {
    call.devices = {placement_.Location(rank_of_[inst.members[0]]).device,
                    placement_.Location(rank_of_[inst.members[1]]).device};
  } else {
    const Group& group = placement_.groups()[op.group_id];
    for (int64_t r : group.ranks) call.devices.push_back(placement_.Location(r).device);
    if (op.collective == Collective::kBroadcast) {
      auto it = std::find(group.ranks.begin(), group.ranks.end(), op.peer);
      call.root = it == group.ranks.end() ? 0 : it - group.ranks.begin();
    }
  }
  if (op.collective == Collective::kAllToAll) {
    for (int64_t m : inst.members) call.per_peer.push_back(OpAt(m).bytes_per_peer);
    ASSIGN_OR_RETURN(inst.own_plan, Decompose(topology_, call, options_.allreduce));
    inst.plan = &inst.own_plan;
  } else {
    // Same group, collective, size and root: same plan.
    const auto key = std::make_tuple(
        p2p ? -1 - rank_of_[inst.members[0]] * 65536 - rank_of_[inst.members[1]] : op.group_id,
        static_cast<int>(op.collective), op.bytes, call.root);
    auto it = cache_->find(key);
    if (it == cache_->end()) {
      ASSIGN_OR_RETURN(CollectivePlan plan, Decompose(topology_, call, options_.allreduce));
      it = cache_->emplace(key, std::move(plan)).first;
    }
    inst.plan = &it->second;
  }
  inst.stage = 0;
  return BeginStage(id, now);
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
  for (int64_t g : inst.members) {
    timing_[g].start = inst.start;
    timing_[g].algorithm = inst.plan->algorithm;
  }
  // Copy: completing may add instances and move the vector.
  const std::vector<int64_t> members = inst.members;
  for (int64_t g : members) RETURN_IF_ERROR(Complete(g, now));
  return Status::Ok();
}

Status PhaseRun::Complete(int64_t g, double now) {
  timing_[g].end = now;
  finished_[g] = 1;
  ++done_;
  double& end = rank_end_[rank_of_[g]];
  end = std::max(end, now);
  for (int64_t i = succ_begin_[g]; i < succ_begin_[g + 1]; ++i) {
    const int64_t s = succ_[i];
    if (--pending_[s] == 0) RETURN_IF_ERROR(Post(s, now));
  }
  return Status::Ok();
}

StatusOr<PhaseResult> PhaseRun::Run(const std::vector<double>& rank_start) {
  const size_t ranks = program_.ranks.size();
  if (static_cast<int64_t>(ranks) != placement_.world_size()) {
    return InvalidArgument("program has {} ranks, the placement {}", ranks,
                           placement_.world_size());
  }
  Build();
  rank_end_.assign(ranks, 0);
  for (size_t r = 0; r < ranks; ++r) {
    const double start = r < rank_start.size() ? rank_start[r] : 0.0;
    rank_end_[r] = start;
    Push(start, EventKind::kRankStart, static_cast<int64_t>(r));
  }
  std::vector<int64_t> finished;
  while (true) {
    const double tq = queue_.empty() ? kInf : queue_.top().time;
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
    switch (e.kind) {
      case EventKind::kRankStart:
        for (int64_t g = offset_[e.a]; g < offset_[e.a + 1]; ++g) {
          if (pending_[g] == 0) RETURN_IF_ERROR(Post(g, e.time));
        }
        break;
      case EventKind::kOpDone:
        RETURN_IF_ERROR(Complete(e.a, e.time));
        break;
      case EventKind::kStageStart:
        RETURN_IF_ERROR(StartTransfer(e.a, e.time));
        break;
    }
  }
  const int64_t total = offset_[ranks];
  if (done_ != total) {
    for (int64_t g = 0; g < total; ++g) {
      if (!finished_[g]) {
        const Op& op = OpAt(g);
        const bool posted = pending_[g] == 0;
        return Status(
            StatusCode::kFailedPrecondition,
            fmt::format(
                "deadlock in {} step {}: rank {} op {} ({}) {}", PhaseName(program_.phase),
                program_.step, rank_of_[g], op.id, OpName(op),
                posted ? "was posted but its peers never matched it" : "never became ready"));
      }
    }
    return InternalError("simulation ended with {} of {} ops done", done_, total);
  }
  PhaseResult result;
  result.timings.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    result.timings[r].assign(timing_.begin() + offset_[r], timing_.begin() + offset_[r + 1]);
  }
  result.rank_end = rank_end_;
  result.ops = total;
  result.transfers = net_.transfers_started();
  return result;
}

}  // namespace

Engine::Engine(const Placement& placement, const ComputeModel& compute, const Topology& topology,
               EngineOptions options)
    : placement_(placement), compute_(compute), topology_(topology), options_(options) {}

StatusOr<PhaseResult> Engine::Run(const PhaseProgram& program,
                                  const std::vector<double>& rank_start) {
  PhaseRun run(program, placement_, compute_, topology_, options_, &plan_cache_);
  return run.Run(rank_start);
}

}  // namespace shardscope::sim
