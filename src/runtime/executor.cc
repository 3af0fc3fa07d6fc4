#include "runtime/executor.h"

#include <chrono>

#include "runtime/phase_runner.h"

namespace shardscope::runtime {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Executor::Executor(const Experiment& e, const Placement& pl, int64_t rank, Backend* b,
                   Communicator* c, const ExecutorOptions& o, std::unique_ptr<Arena> weight_arena,
                   BackendWeights w)
    : experiment_(e),
      placement_(pl),
      rank_(rank),
      backend_(b),
      comm_(c),
      options_(o),
      weight_arena_(std::move(weight_arena)),
      weights_(std::move(w)),
      state_(std::make_unique<State>(b->NewArena())) {}

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(const Experiment& experiment,
                                                     const Placement& placement, Backend* backend,
                                                     Communicator* comm,
                                                     const ExecutorOptions& options) {
  const int64_t rank = comm->rank();
  if (placement.world_size() != comm->world_size()) {
    return InvalidArgument("experiment '{}' needs {} ranks, the communicator has {}",
                           experiment.name, placement.world_size(), comm->world_size());
  }
  std::unique_ptr<Arena> arena;
  BackendWeights bw;
  {
    ASSIGN_OR_RETURN(Weights w, Weights::Create(experiment, placement, rank));
    arena = backend->NewArena(BackendWeights::UploadBytes(w, kExecutorDType), MemoryUse::kWeights);
    ASSIGN_OR_RETURN(bw, BackendWeights::Upload(w, *backend, *arena, kExecutorDType));
  }  // the host copy is freed here
  return std::unique_ptr<Executor>(new Executor(experiment, placement, rank, backend, comm, options,
                                                std::move(arena), std::move(bw)));
}

Status Executor::Reset() {
  RETURN_IF_ERROR(state_->arena->Reset());
  state_->cache.clear();
  state_->next_token.clear();
  records_.clear();
  samples_.clear();
  return Status::Ok();
}

int64_t Executor::system_allocations() const {
  return backend_->system_allocations() + state_->arena->system_allocations();
}

Status Executor::Run(const PhaseProgram& program) {
  if (static_cast<int64_t>(program.ranks.size()) != placement_.world_size()) {
    return InvalidArgument("the Program has {} ranks, the plan {}", program.ranks.size(),
                           placement_.world_size());
  }
  RETURN_IF_ERROR(backend_->ResetArena());  // the previous phase's activations
  PhaseRunner runner(experiment_, placement_, rank_, *backend_, *comm_, weights_, *state_, options_,
                     program, &records_, &samples_);
  return runner.Run();
}

Status RunGeneration(const ProgramBuilder& builder, Executor& executor) {
  RETURN_IF_ERROR(executor.Reset());
  ASSIGN_OR_RETURN(PhaseProgram prefill, builder.Build(Phase::kPrefill, 0));
  RETURN_IF_ERROR(executor.Run(prefill));
  const int64_t steps = builder.experiment().workload.tokens_to_generate - 1;
  for (int64_t k = 0; k < steps; ++k) {
    ASSIGN_OR_RETURN(PhaseProgram step, builder.Build(Phase::kDecode, k));
    RETURN_IF_ERROR(executor.Run(step));
  }
  return Status::Ok();
}

}  // namespace shardscope::runtime
