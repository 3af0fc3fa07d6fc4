// ReplicaScheduler: the continuous-batching scheduler of one replica, after
// vLLM's: each iteration it gives every running request its next tokens (one
// for a decoding request, the next prefill chunk for one still prefilling) and
// admits waiting requests first-come first-served while the token budget
// (max_num_batched_tokens), the sequence limit (max_num_seqs) and free KV
// blocks allow. When a running request needs a block and none is free, the
// most recently admitted request is preempted by recompute: its blocks are
// freed and it waits at the head of the queue to prefill its prompt and the
// tokens it had generated again. Without chunked prefill, waiting prompts are
// prefilled whole in iterations of their own and running requests only decode
// (vLLM's default scheduler before chunked prefill); under long_prompts: chunk
// a prompt over what the budget leaves takes the rest, its next chunk leading
// the next iteration (SGLang's chunked_prefill_size; under refuse the loader
// refuses such workloads); with
// mix_prompts_with_decodes, whole prompts join the decodes' iterations instead
// (TensorRT-LLM's in-flight batching). Under guaranteed-no-evict admission
// (TensorRT-LLM's default) a request is admitted only when the blocks of its
// whole prompt + output fit beside every running request's: nothing is ever
// preempted, requests queue instead. With num_scheduler_steps N > 1 a
// decode-only iteration runs N steps (blocks for them taken up front); a
// request finishing in between stops there and leaves at the end. Not
// thread-safe; borrows the requests it is given (they must outlive it).
#ifndef SHARDSCOPE_SERVE_REPLICA_SCHEDULER_H_
#define SHARDSCOPE_SERVE_REPLICA_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "config/serving.h"
#include "serve/served_request.h"

namespace shardscope::serve {

// What one iteration computes.
struct Iteration {
  std::vector<std::pair<ServedRequest*, int64_t>> prefill;  // request, chunk tokens
  std::vector<ServedRequest*> decode;
  int64_t preempted = 0;  // requests preempted while scheduling it
  int64_t steps = 1;      // decode steps it runs (multi-step; 1 with any prefill)
  int64_t prefill_tokens() const;
  // Mean tokens in the KV cache of the decoding requests before the step.
  double decode_context_mean() const;
  bool empty() const { return prefill.empty() && decode.empty(); }
};

class ReplicaScheduler {
 public:
  // `prefill_only`: a disaggregated prefill instance — a request leaves it
  // (blocks freed, listed as finished) once its first token exists.
  // spec.max_num_seqs 0 takes SGLang's rule over `total_blocks`.
  ReplicaScheduler(const SchedulerSpec& spec, int64_t total_blocks, bool prefill_only = false);

  // KV blocks a request needs for `tokens` cached tokens.
  int64_t BlocksFor(int64_t tokens) const;
  // True when a request of these lengths could ever be served here (its whole
  // KV cache fits in the replica's blocks).
  bool CanEverFit(int64_t prompt, int64_t output) const;

  // Speculative decoding: each decode step computes `verify_tokens` (k + 1)
  // tokens of a request (its budget and KV blocks) and adds `tokens_per_step`
  // accepted tokens on average, emitted deterministically: the fractional
  // part carries to the next step (ServedRequest::speculative_credit).
  void SetSpeculative(double tokens_per_step, int64_t verify_tokens) {
    tokens_per_step_ = tokens_per_step;
    verify_tokens_ = verify_tokens;
  }
  // Queues an arrived request (its `target` set to the prompt).
  void Add(ServedRequest* request);
  // Queues a request whose KV cache arrives with it (a disaggregated decode
  // instance): it is admitted straight into decoding when blocks allow.
  void AddWithCache(ServedRequest* request);
  bool HasWork() const { return !waiting_.empty() || !running_.empty(); }

  // The next iteration; may preempt running requests. Empty only without work.
  Iteration Schedule();
  // Applies an iteration that ended at `end`: cache progress, new tokens (and
  // the gap since each request's previous token, appended to `itl` for measured
  // requests), finished requests (blocks freed), appended to `finished`.
  void Complete(const Iteration& iteration, double end, std::vector<double>* itl,
                std::vector<ServedRequest*>* finished);
  // The same for an iteration of iteration.steps steps ending at `step_ends`
  // (one per step): a decoding request's k-th token comes at step_ends[k].
  void Complete(const Iteration& iteration, std::span<const double> step_ends,
                std::vector<double>* itl, std::vector<ServedRequest*>* finished);
  int64_t max_num_seqs() const { return spec_.max_num_seqs; }

  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t outstanding() const { return waiting() + running(); }
  int64_t used_blocks() const { return used_blocks_; }
  // Blocks promised to running requests (guaranteed-no-evict admission).
  int64_t reserved_blocks() const { return reserved_blocks_; }
  int64_t total_blocks() const { return total_blocks_; }
  double new_token_ratio() const { return new_token_ratio_; }

  // SGLang's new-token-ratio admission (python/sglang/global_config.py, v0.4):
  // SGLANG_INIT_NEW_TOKEN_RATIO 0.7, the floor 0.7 × 0.14, reached after 600
  // decode iterations; CLIP_MAX_NEW_TOKENS_ESTIMATION 4096 (schedule_policy.py);
  // retract_decode_steps 20.
  static constexpr double kInitNewTokenRatio = 0.7;
  static constexpr double kMinNewTokenRatio = 0.7 * 0.14;
  static constexpr double kNewTokenRatioDecaySteps = 600;
  static constexpr int64_t kClipMaxNewTokens = 4096;
  static constexpr int64_t kRetractDecodeSteps = 20;

 private:
  // Grows the request's blocks to hold `tokens`; false (nothing taken) when too few are free.
  bool Allocate(ServedRequest* r, int64_t tokens);
  void Free(ServedRequest* r);
  void Preempt(ServedRequest* r);
  void Admit(Iteration* it, ServedRequest* r, int64_t tokens);
  // The most tokens the request ever caches here.
  int64_t MaxCached(const ServedRequest* r) const;
  // Whether admission lets `r` in (under guaranteed-no-evict: its whole
  // footprint fits beside the reservations); on true the reservation is made.
  bool Reserve(ServedRequest* r);
  void Release(ServedRequest* r);
  // Under new-token-ratio admission: the KV tokens an admission round may
  // promise, the free pool less every running request's remaining output ×
  // the ratio (0 under the other admissions).
  double NewTokenRoom() const;
  // Whether r's input still to compute and remaining output fit in `*room`
  // (SGLang's PrefillAdder); on true they are taken from it. Always true under
  // the other admissions.
  bool FitsNewTokens(const ServedRequest* r, double* room) const;
  // After an iteration: the ratio decays by one decode step, or after a
  // preemption is re-estimated from the running requests (SGLang's retract).
  void UpdateNewTokenRatio(const Iteration& it);
  // Admits waiting r for `need` tokens of *budget when the admission rule
  // (FitsNewTokens, Reserve) and the free blocks allow; false: nothing taken.
  bool TryAdmit(Iteration* it, ServedRequest* r, int64_t need, double* room, int64_t* budget);
  // Tokens of waiting r's prompt an iteration with `budget` left takes: all of
  // it; over the budget the rest (long_prompts: chunk), else all of it alone
  // (0, it waits, when the iteration has `others`).
  int64_t PromptTokens(const ServedRequest* r, int64_t budget, bool others) const;
  // Tokens a decoding request's blocks must hold for this iteration's steps.
  int64_t DecodeTokens(const ServedRequest* r) const;
  // Moves requests that arrived with their KV cache from the head of the queue
  // into the running set while blocks and max_num_seqs allow.
  void AdmitCached();
  Iteration ScheduleChunked();
  Iteration ScheduleWholePrompts();
  Iteration ScheduleMixedWholePrompts();
  // Schedules the running requests (from the front) with preemption; returns
  // the tokens left in `budget`.
  void ScheduleRunning(Iteration* it, int64_t* budget);

  SchedulerSpec spec_;
  int64_t total_blocks_;
  bool prefill_only_;
  double tokens_per_step_ = 1;  // speculative decoding: expected tokens per decode step
  int64_t verify_tokens_ = 1;   // tokens a decode step computes per request
  int64_t used_blocks_ = 0;
  int64_t reserved_blocks_ = 0;
  double new_token_ratio_ = kInitNewTokenRatio;
  std::deque<ServedRequest*> waiting_;
  std::vector<ServedRequest*> running_;  // in admission order
};

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_REPLICA_SCHEDULER_H_
