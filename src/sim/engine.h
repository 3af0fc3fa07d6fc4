// Engine: discrete-event execution of one phase's Program on a cluster.
// Per rank, each stream runs its ops in order; an op also waits for the ops in
// its `deps`. A compute op takes the ComputeModel's time. A comm op is posted
// when it is ready; a collective starts when every group member has posted it
// (the `k`-th call of a group matches across members by seq), a send/recv when
// both sides have (matched by dimension, sender, receiver and seq); it is then
// decomposed into network stages (collectives.h) that share links (network.h).
// Every member's op ends when the transfer ends. Events are typed values owned
// by the queue, ordered by (time, insertion): runs are deterministic.
// Not thread-safe; one Engine per thread (it keeps scratch buffers between runs).
#ifndef SHARDSCOPE_SIM_ENGINE_H_
#define SHARDSCOPE_SIM_ENGINE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "cluster/cluster.h"
#include "core/status.h"
#include "plan/placement.h"
#include "program/program.h"
#include "program/program_builder.h"
#include "sim/collectives.h"
#include "sim/compute_model.h"
#include "sim/topology.h"

namespace shardscope::sim {

// The routing an expert-parallel all-to-all deduplicates against (the
// hierarchical kind): routed experts, experts per token, expert groups and
// groups per token (0: no group limit).
struct ExchangeRouting {
  int64_t experts = 0;
  int64_t topk = 0;
  int64_t groups = 0;
  int64_t group_limit = 0;
};

struct EngineOptions {
  // Forced algorithm; kAuto chooses per call (collectives.h). It applies to the
  // collectives that have it, as NCCL_ALGO does.
  Algorithm allreduce = Algorithm::kAuto;
  // Every op of a rank in program order, comm included (SimSetup::serial_comm:
  // CPU ranks, whose communication progresses only on their one thread).
  bool serial_comm = false;
  // Each rank's factor on its compute ops' time (sim/rank_spread.h); empty: 1.
  std::vector<double> rank_scale;
  // Forced protocol (NCCL_PROTO); kAuto chooses per call.
  Protocol protocol = Protocol::kAuto;
  // Expert-parallel all-to-alls per phase (resolved: never kAuto).
  AllToAllKind prefill_all_to_all = AllToAllKind::kNccl;
  AllToAllKind decode_all_to_all = AllToAllKind::kNccl;
  ExchangeRouting routing;
  // Per phase, the fraction of a rank's SMs its expert-parallel all-to-all
  // kernels hold from launch to end (ExchangeKernelCost::sm_share of the
  // phase's kind; 0: none). A compute op overlapped by them for a time T runs
  // s·T longer, at most C·s/(1 − s) for its own time C (Engine::Run).
  double prefill_sm_share = 0;
  double decode_sm_share = 0;
};

// When one op ran, in seconds from the start of the simulation.
struct OpTiming {
  double post = 0;   // ready on its stream (a comm op: posted, waiting for its peers)
  double start = 0;  // compute: = post; comm: the last member posted, bytes may move
  double end = 0;
  Algorithm algorithm = Algorithm::kAuto;  // comm ops: the algorithm used
  bool comm = false;                       // a comm op (figures need no Op to tell)
  // Comm ops: NCCL's protocol used; kAuto where none applies (untuned links).
  Protocol protocol = Protocol::kAuto;
};

// The timings of every rank's ops in one flat array; timings[rank][op id].
struct RankTimings {
  std::vector<OpTiming> flat;   // all ranks' ops, rank by rank
  std::vector<int64_t> offset;  // index in `flat` of each rank's op 0; size ranks + 1
  std::span<const OpTiming> operator[](size_t rank) const {
    return {flat.data() + offset[rank], flat.data() + offset[rank + 1]};
  }
  size_t size() const { return offset.empty() ? 0 : offset.size() - 1; }
};

struct PhaseResult {
  RankTimings timings;           // [rank][op id]
  std::vector<double> rank_end;  // when each rank's last op ended
  int64_t ops = 0;               // ops executed
  int64_t transfers = 0;         // network transfers (stages) run
};

class Engine {
 public:
  // Borrows the placement, compute model and topology; they must outlive it.
  Engine(const Placement& placement, const ComputeModel& compute, const Topology& topology,
         EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;

  // Runs `program`; rank r starts at rank_start[r] (empty: all at 0). Fails on a
  // mismatched collective or a deadlock, naming the rank and op. With an SM
  // share for the phase (EngineOptions), the run is repeated, each compute op
  // slowed by the all-to-alls that overlapped it in the run before, until the
  // slowdowns settle (at most kContentionPasses runs after the first).
  StatusOr<PhaseResult> Run(const PhaseProgram& program,
                            const std::vector<double>& rank_start = {});

  // Run, for a program that differs from the one of the previous Run (or
  // RunSameGraph) in op costs only: the same ops per rank in the same order,
  // with the same kinds, streams, deps, collectives, groups, peers and seqs —
  // as ProgramBuilder::Update leaves a decode program it patches in place. The
  // previous run's dependency graph is reused; only compute times are read.
  // `updated` (optional): the ops whose costs changed since the previous run
  // (what ProgramBuilder::Update reports), for the same program object updated
  // in place; then only those are read again. An all-to-all none of whose
  // members' rows, bytes or peers changed keeps its decomposition.
  // Fails when a rank's op count differs or no Run came before.
  StatusOr<PhaseResult> RunSameGraph(const PhaseProgram& program,
                                     const std::vector<double>& rank_start = {},
                                     const UpdatedOps* updated = nullptr);

  // Takes back a result the caller is done with: the next run fills its
  // timings buffer instead of allocating (and faulting in) a new one.
  void Recycle(PhaseResult&& result);

  // Per-run buffers (engine.cc), kept between runs to avoid reallocating them.
  struct Scratch;
  static constexpr int kContentionPasses = 8;

 private:
  // The first run (`same_graph`, `updated`: as RunSameGraph), then the SM
  // contention passes.
  StatusOr<PhaseResult> RunContended(const PhaseProgram& program,
                                     const std::vector<double>& rank_start, bool same_graph,
                                     const UpdatedOps* updated);
  const Placement& placement_;
  const ComputeModel& compute_;
  const Topology& topology_;
  EngineOptions options_;
  std::unique_ptr<Scratch> scratch_;
  // Plans of collectives whose decomposition depends only on these.
  std::map<std::tuple<int64_t, int, int64_t, int64_t>, CollectivePlan> plan_cache_;
};

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_ENGINE_H_
