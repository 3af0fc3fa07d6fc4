#include "runtime/executor.h"

#include <chrono>

#include "runtime/phase_runner.h"

namespace shardscope::runtime {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Executor::Executor(const Experiment& e, const Placement& pl, int64_t rank, Kernels* k,
                   Communicator* c, const ExecutorOptions& o, Weights w)
    : experiment_(e),
      placement_(pl),
      rank_(rank),
      kernels_(k),
      comm_(c),
      options_(o),
      weights_(std::move(w)),
      state_(std::make_unique<State>()) {}

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(const Experiment& experiment,
                                                     const Placement& placement, Kernels* kernels,
                                                     Communicator* comm,
                                                     const ExecutorOptions& options) {
  const int64_t rank = comm->rank();
  if (placement.world_size() != comm->world_size()) {
    return InvalidArgument("experiment '{}' needs {} ranks, the communicator has {}",
                           experiment.name, placement.world_size(), comm->world_size());
  }
  ASSIGN_OR_RETURN(Weights w, Weights::Create(experiment, placement, rank));
  return std::unique_ptr<Executor>(
      new Executor(experiment, placement, rank, kernels, comm, options, std::move(w)));
}

void Executor::Reset() {
  state_ = std::make_unique<State>();
  records_.clear();
  samples_.clear();
}

Status Executor::Run(const PhaseProgram& program) {
  if (static_cast<int64_t>(program.ranks.size()) != placement_.world_size()) {
    return InvalidArgument("the Program has {} ranks, the plan {}", program.ranks.size(),
                           placement_.world_size());
  }
  PhaseRunner runner(experiment_, placement_, rank_, *kernels_, *comm_, weights_, *state_, options_,
                     program, &records_, &samples_);
  return runner.Run();
}

Status RunGeneration(const ProgramBuilder& builder, Executor& executor) {
  executor.Reset();
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
