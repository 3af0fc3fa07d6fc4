// Executor: runs one rank's ops of a Program on real tensors, in list order,
// through the Kernels and Communicator interfaces (so the CUDA backend plugs in
// beside the CPU one). Comm ops are posted non-blocking when reached and
// completed when an op that depends on them starts (or the phase ends), so the
// overlap the Program allows happens. State that outlives a phase — KV caches,
// each request's next token — lives here; Reset() starts a new generation.
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
#include "runtime/communicator.h"
#include "runtime/fault_injection.h"
#include "runtime/kernels.h"
#include "runtime/weights.h"

namespace shardscope::runtime {

// One op as it ran on this rank: times in ns on this rank's steady clock
// (compute: around the kernel; comm: from post to completion), and for comm ops
// the bytes that really moved (fp32 activations, the router's real split).
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

// Nanoseconds on the steady clock (what OpRecord uses).
int64_t NowNs();

class Executor {
 public:
  // Builds this rank's weights. `kernels` and `comm` are borrowed and must
  // outlive the executor; the communicator must already have the placement's groups.
  static StatusOr<std::unique_ptr<Executor>> Create(const Experiment& experiment,
                                                    const Placement& placement, Kernels* kernels,
                                                    Communicator* comm,
                                                    const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Forgets KV caches, tokens and records: the next Run must be a prefill.
  void Reset();
  // Runs this rank's ops of `program`. A failure names the rank and the op; the
  // other ranks are not told (the caller aborts the job).
  Status Run(const PhaseProgram& program);

  int64_t rank() const { return rank_; }
  const std::vector<OpRecord>& records() const { return records_; }
  const std::vector<SampleRecord>& samples() const { return samples_; }
  const Weights& weights() const { return weights_; }

  // Per-generation state (KV caches, next tokens); opaque.
  struct State;

 private:
  Executor(const Experiment& e, const Placement& pl, int64_t rank, Kernels* k, Communicator* c,
           const ExecutorOptions& o, Weights w);

  const Experiment experiment_;
  const Placement placement_;
  const int64_t rank_;
  Kernels* const kernels_;
  Communicator* const comm_;
  const ExecutorOptions options_;
  Weights weights_;
  std::unique_ptr<State> state_;
  std::vector<OpRecord> records_;
  std::vector<SampleRecord> samples_;
};

// Runs one whole generation on this rank: Reset, the prefill and the
// tokens_to_generate − 1 decode steps of `builder`'s experiment.
Status RunGeneration(const ProgramBuilder& builder, Executor& executor);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_EXECUTOR_H_
