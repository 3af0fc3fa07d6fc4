// Executor: runs one rank's ops of a Program on real tensors, in list order,
// through the Backend and Communicator interfaces (so the CUDA backend plugs in
// beside the CPU one). Memory: the weights are uploaded once into an arena the
// executor owns; the KV caches live in a second one, reset by Reset() (each
// generation); activations come from the backend's step arena, reset at the
// start of every phase — so the steady state allocates nothing. Comm ops are
// posted non-blocking when reached and completed when an op that depends on
// them starts (or the phase ends), so the overlap the Program allows happens.
// State that outlives a phase — KV caches, each request's next token — lives
// here; Reset() starts a new generation.
// docs/runtime.md maps every op kind and label to what it computes.
// One executor per rank; not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_EXECUTOR_H_
#define SHARDSCOPE_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "plan/placement.h"
#include "program/program.h"
#include "program/program_builder.h"
#include "runtime/comm/communicator.h"
#include "runtime/device/backend.h"
#include "runtime/fault_injection.h"
#include "runtime/weights/backend_weights.h"

namespace shardscope::runtime {

// One op as it ran on this rank: times in ns on this rank's steady clock
// (compute: from issue, lasting what the backend's OpTimer measured; comm: from
// post to completion), and for comm ops the bytes that really moved (the
// activations' dtype, the router's real split).
struct OpRecord {
  int32_t phase_index = 0;  // 0: prefill; k + 1: decode step k
  Op op;
  int64_t start_ns = 0, end_ns = 0;
  int64_t bytes = 0;
  std::vector<int64_t> bytes_per_peer;
};

// A token sampled on this rank, with this rank's logits shard when kept.
struct SampleRecord {
  int32_t phase_index = 0;
  int64_t request = 0;  // global request index
  int32_t token = -1;
  int64_t vocab_begin = 0;
  std::vector<float> logits;  // [vocab_begin, vocab_begin + size) of the vocabulary
};

// Where a rank is in its Program, stored by the executor before each op (two
// relaxed stores), so that a crash handler — or the launcher, reading it from a
// file mapping after the rank died — can name the op. Lock-free.
struct OpPosition {
  std::atomic<int32_t> phase_index{-1};  // 0: prefill; k + 1: decode step k; -1: none
  std::atomic<int32_t> op{-1};           // op id in the rank's phase Program; -1: none
  // Ops entered so far (all phases): the launcher's measure of progress.
  std::atomic<uint32_t> entered{0};
  // The comm op whose completion the rank is blocked on; -1: not blocked.
  std::atomic<int32_t> waiting_on{-1};
  // The running phase's ops (this process only; null outside Executor::Run).
  std::atomic<const RankProgram*> program{nullptr};
};

struct ExecutorOptions {
  bool keep_logits = false;  // tests compare logits against the single-rank run
  bool record_ops = true;
  // Fault injection (tests, SHARDSCOPE_FAULT): the spec's rank fails at its op.
  FaultSpec fault;
  // Where to record the current op (borrowed; null: not recorded).
  OpPosition* position = nullptr;
};

// The dtype of the executor's weights, activations and KV caches: fp32 today
// (the model's dtype is what the simulator costs; the executor computes the
// reference values). Comm ops move tensors in their dtype.
inline constexpr DType kExecutorDType = DType::kFp32;

// Nanoseconds on the steady clock (what OpRecord uses).
int64_t NowNs();

class Executor {
 public:
  // Builds this rank's weights and uploads them to `backend`. `backend` and
  // `comm` are borrowed and must outlive the executor; the communicator must
  // already have the placement's groups.
  static StatusOr<std::unique_ptr<Executor>> Create(const Experiment& experiment,
                                                    const Placement& placement, Backend* backend,
                                                    Communicator* comm,
                                                    const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Forgets KV caches, tokens and records: the next Run must be a prefill.
  Status Reset();
  // Runs this rank's ops of `program`. A failure names the rank and the op; the
  // other ranks are not told (the caller aborts the job).
  Status Run(const PhaseProgram& program);

  int64_t rank() const { return rank_; }
  const std::vector<OpRecord>& records() const { return records_; }
  const std::vector<SampleRecord>& samples() const { return samples_; }
  const BackendWeights& weights() const { return weights_; }
  // Memory chunks taken from the system by the backend's step arena and the
  // KV caches' arena: constant over the decode steps of a generation.
  int64_t system_allocations() const;

  // Per-generation state (KV caches, next tokens); opaque.
  struct State;

 private:
  Executor(const Experiment& e, const Placement& pl, int64_t rank, Backend* b, Communicator* c,
           const ExecutorOptions& o, std::unique_ptr<Arena> weight_arena, BackendWeights w);

  const Experiment experiment_;
  const Placement placement_;
  const int64_t rank_;
  Backend* const backend_;
  Communicator* const comm_;
  const ExecutorOptions options_;
  std::unique_ptr<Arena> weight_arena_;  // before weights_: the tensors live in it
  BackendWeights weights_;
  std::unique_ptr<State> state_;
  std::vector<OpRecord> records_;
  std::vector<SampleRecord> samples_;
};

// Runs one whole generation on this rank: Reset, the prefill and the
// tokens_to_generate − 1 decode steps of `builder`'s experiment.
Status RunGeneration(const ProgramBuilder& builder, Executor& executor);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_EXECUTOR_H_
