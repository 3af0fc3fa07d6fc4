#include "serve/replica_scheduler.h"

#include <algorithm>

namespace shardscope::serve {
namespace {

// SGLang's max_running_requests when none is given, over a pool of `tokens`
// KV tokens: min(tokens / 2, clamp(tokens / context × 512, 2048, 4096))
// (scheduler.py, model_runner.py; config/engine_profile.cc).
int64_t SglangMaxRunning(int64_t tokens, int64_t max_model_len) {
  const int64_t pool =
      std::clamp<int64_t>(tokens * 512 / std::max<int64_t>(max_model_len, 1), 2048, 4096);
  return std::max<int64_t>(std::min(tokens / 2, pool), 1);
}

}  // namespace

int64_t Iteration::prefill_tokens() const {
  int64_t t = 0;
  for (const auto& [r, chunk] : prefill) t += chunk;
  return t;
}

double Iteration::decode_context_mean() const {
  if (decode.empty()) return 0;
  double sum = 0;
  for (const ServedRequest* r : decode) sum += static_cast<double>(r->computed);
  return sum / static_cast<double>(decode.size());
}

ReplicaScheduler::ReplicaScheduler(const SchedulerSpec& spec, int64_t total_blocks,
                                   bool prefill_only)
    : spec_(spec), total_blocks_(total_blocks), prefill_only_(prefill_only) {
  if (spec_.max_num_seqs <= 0) {
    spec_.max_num_seqs = SglangMaxRunning(total_blocks * spec_.block_size, spec_.max_model_len);
  }
}

int64_t ReplicaScheduler::BlocksFor(int64_t tokens) const {
  return (tokens + spec_.block_size - 1) / spec_.block_size;
}

bool ReplicaScheduler::CanEverFit(int64_t prompt, int64_t output) const {
  // The last token is sampled and never fed back: prompt + output − 1 cached at
  // most, and the prompt at least (an EOS-first request, output 0, still prefills).
  return BlocksFor(prompt + std::max<int64_t>(output, 1) - 1) <= total_blocks_;
}

int64_t ReplicaScheduler::MaxCached(const ServedRequest* r) const {
  if (prefill_only_) return r->prompt;
  // A decode-only request feeds every output token; others sample the last one.
  return r->decode_only ? r->prompt + r->output : r->prompt + std::max<int64_t>(r->output, 1) - 1;
}

bool ReplicaScheduler::Reserve(ServedRequest* r) {
  if (spec_.admission != Admission::kGuaranteedNoEvict || r->reserved > 0) return true;
  const int64_t need = BlocksFor(MaxCached(r));
  if (reserved_blocks_ + need > total_blocks_) return false;
  reserved_blocks_ += need;
  r->reserved = need;
  return true;
}

void ReplicaScheduler::Release(ServedRequest* r) {
  reserved_blocks_ -= r->reserved;
  r->reserved = 0;
}

double ReplicaScheduler::NewTokenRoom() const {
  if (spec_.admission != Admission::kNewTokenRatio) return 0;
  // schedule_policy.py PrefillAdder: the pool free at the round's start, less
  // every running request's remaining (clipped) max_new_tokens × the ratio.
  double room = static_cast<double>((total_blocks_ - used_blocks_) * spec_.block_size);
  for (const ServedRequest* r : running_) {
    const int64_t left = std::max<int64_t>(r->output - r->generated, 0);
    room -= static_cast<double>(std::min(left, kClipMaxNewTokens)) * new_token_ratio_;
  }
  return room;
}

bool ReplicaScheduler::FitsNewTokens(const ServedRequest* r, double* room) const {
  if (spec_.admission != Admission::kNewTokenRatio) return true;
  // The input still to compute plus the whole (clipped) output must be below
  // the room left; an idle replica takes its first request regardless (it can
  // ever fit, CanEverFit), so nothing waits on an empty replica.
  const int64_t left = std::max<int64_t>(r->output - r->generated, 0);
  const double need =
      static_cast<double>((r->target - r->computed) + std::min(left, kClipMaxNewTokens));
  if (!running_.empty() && need >= *room) return false;
  *room -= need;
  return true;
}

void ReplicaScheduler::UpdateNewTokenRatio(const Iteration& it) {
  if (spec_.admission != Admission::kNewTokenRatio) return;
  if (it.empty()) {  // idle: scheduler.py resets the ratio
    new_token_ratio_ = kInitNewTokenRatio;
  } else if (it.preempted > 0) {
    // schedule_batch.py retract_decode: (tokens decoded + 20 per request) over
    // the requests' max_new_tokens, those left running, at most 1.
    double decoded = 0, total = 0;
    for (const ServedRequest* r : running_) {
      decoded += static_cast<double>(r->generated);
      total += static_cast<double>(r->output);
    }
    new_token_ratio_ = total > 0
                           ? std::min(1.0, (decoded + static_cast<double>(kRetractDecodeSteps) *
                                                          static_cast<double>(running_.size())) /
                                               total)
                           : kInitNewTokenRatio;
  } else if (!it.decode.empty()) {
    new_token_ratio_ =
        std::max(kMinNewTokenRatio, new_token_ratio_ - (kInitNewTokenRatio - kMinNewTokenRatio) /
                                                           kNewTokenRatioDecaySteps);
  }
}

bool ReplicaScheduler::TryAdmit(Iteration* it, ServedRequest* r, int64_t need, double* room,
                                int64_t* budget) {
  if (!FitsNewTokens(r, room) || !Reserve(r)) return false;
  if (!Allocate(r, r->computed + need)) {
    Release(r);
    return false;
  }
  Admit(it, r, need);
  *budget -= need;
  return true;
}

int64_t ReplicaScheduler::PromptTokens(const ServedRequest* r, int64_t budget, bool others) const {
  const int64_t need = r->target - r->computed;
  if (need <= budget) return need;
  // Split: the rest of the budget now (long_prompts: chunk).
  if (spec_.long_prompts == LongPrompts::kChunk && budget > 0) return budget;
  // Refused prompts never get here (config/serving.cc refuses them at load),
  // but one that does goes alone.
  return others ? 0 : need;
}

int64_t ReplicaScheduler::DecodeTokens(const ServedRequest* r) const {
  // Multi-step takes the blocks of all its steps up front (vLLM's lookahead slots).
  return std::min(r->computed + spec_.num_scheduler_steps, std::max(MaxCached(r), r->computed + 1));
}

void ReplicaScheduler::Add(ServedRequest* r) {
  r->target = r->prompt;
  waiting_.push_back(r);
}

void ReplicaScheduler::AddWithCache(ServedRequest* r) {
  r->target = r->computed;
  waiting_.push_back(r);
}

void ReplicaScheduler::AdmitCached() {
  while (!waiting_.empty() && !waiting_.front()->prefilling() &&
         static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    if (!Reserve(r)) break;
    if (!Allocate(r, r->computed)) {
      Release(r);
      break;
    }
    waiting_.pop_front();
    running_.push_back(r);
  }
}

bool ReplicaScheduler::Allocate(ServedRequest* r, int64_t tokens) {
  const int64_t more = BlocksFor(tokens) - r->blocks;
  if (more <= 0) return true;
  if (used_blocks_ + more > total_blocks_) return false;
  used_blocks_ += more;
  r->blocks += more;
  return true;
}

void ReplicaScheduler::Free(ServedRequest* r) {
  used_blocks_ -= r->blocks;
  r->blocks = 0;
  Release(r);
}

void ReplicaScheduler::Preempt(ServedRequest* r) {
  Free(r);
  r->computed = 0;
  r->target = r->prompt + r->generated;  // recompute: the prompt and every token so far
  ++r->preemptions;
  waiting_.push_front(r);
}

void ReplicaScheduler::Admit(Iteration* it, ServedRequest* r, int64_t tokens) {
  waiting_.pop_front();
  running_.push_back(r);
  it->prefill.emplace_back(r, tokens);
}

void ReplicaScheduler::ScheduleRunning(Iteration* it, int64_t* budget) {
  for (size_t i = 0; i < running_.size();) {
    ServedRequest* r = running_[i];
    if (*budget <= 0) break;
    const int64_t need =
        r->prefilling() ? std::min(r->target - r->computed, *budget)
                        : std::min(verify_tokens_, std::max<int64_t>(r->output - r->generated, 1));
    const int64_t hold =
        r->prefilling() ? r->computed + need : std::max(DecodeTokens(r), r->computed + need);
    bool scheduled = true;
    // Under guaranteed-no-evict the reservation covers `hold`: this never fails.
    while (!Allocate(r, hold)) {
      // Out of blocks: preempt the most recently admitted request (maybe r itself).
      ServedRequest* victim = running_.back();
      running_.pop_back();
      Preempt(victim);
      ++it->preempted;
      if (victim == r) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    if (r->prefilling()) {
      it->prefill.emplace_back(r, need);
    } else {
      it->decode.push_back(r);
    }
    *budget -= need;
    ++i;
  }
}

Iteration ReplicaScheduler::ScheduleChunked() {
  AdmitCached();
  Iteration it;
  int64_t budget = spec_.max_num_batched_tokens;
  ScheduleRunning(&it, &budget);
  if (it.preempted > 0) return it;  // no admission while memory is short
  double room = NewTokenRoom();
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    if (!TryAdmit(&it, r, std::min(r->target - r->computed, budget), &room, &budget)) break;
  }
  return it;
}

Iteration ReplicaScheduler::ScheduleWholePrompts() {
  AdmitCached();
  Iteration it;
  int64_t budget = spec_.max_num_batched_tokens;
  // Prefill-only iterations first, led by a split prompt's next chunk (SGLang's chunked_req).
  for (ServedRequest* r : running_) {
    if (!r->prefilling() || budget <= 0) continue;
    const int64_t need = std::min(r->target - r->computed, budget);
    if (!Allocate(r, r->computed + need)) break;
    it.prefill.emplace_back(r, need);
    budget -= need;
  }
  double room = NewTokenRoom();
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    const int64_t need = PromptTokens(r, budget, /*others=*/!it.prefill.empty());
    if (need <= 0 || !TryAdmit(&it, r, need, &room, &budget)) break;
  }
  if (!it.prefill.empty()) return it;
  budget = spec_.max_num_batched_tokens;
  ScheduleRunning(&it, &budget);
  return it;
}

Iteration ReplicaScheduler::ScheduleMixedWholePrompts() {
  AdmitCached();
  Iteration it;
  int64_t budget = spec_.max_num_batched_tokens;
  ScheduleRunning(&it, &budget);
  if (it.preempted > 0) return it;
  // Whole prompts into what the decodes left (a split prompt's next chunk was
  // scheduled with them); a prompt over the rest is split or waits.
  double room = NewTokenRoom();
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    const int64_t need = PromptTokens(r, budget, /*others=*/!it.empty());
    if (need <= 0 || !TryAdmit(&it, r, need, &room, &budget)) break;
  }
  return it;
}

Iteration ReplicaScheduler::Schedule() {
  Iteration it = spec_.chunked_prefill            ? ScheduleChunked()
                 : spec_.mix_prompts_with_decodes ? ScheduleMixedWholePrompts()
                                                  : ScheduleWholePrompts();
  if (it.prefill.empty() && !it.decode.empty()) it.steps = spec_.num_scheduler_steps;
  UpdateNewTokenRatio(it);
  return it;
}

void ReplicaScheduler::Complete(const Iteration& it, double end, std::vector<double>* itl,
                                std::vector<ServedRequest*>* finished) {
  const std::vector<double> ends(static_cast<size_t>(it.steps), end);
  Complete(it, ends, itl, finished);
}

void ReplicaScheduler::Complete(const Iteration& it, std::span<const double> step_ends,
                                std::vector<double>* itl, std::vector<ServedRequest*>* finished) {
  auto token = [&](ServedRequest* r, double at) {
    if (r->generated == 0) {
      r->first_token = at;
    } else if (r->measured && itl != nullptr) {
      itl->push_back(at - r->last_token);
    }
    ++r->generated;
    r->last_token = at;
    if (r->done() || prefill_only_) {
      if (r->done()) r->finish = at;
      Free(r);
      finished->push_back(r);
    }
  };
  for (const auto& [r, chunk] : it.prefill) {
    r->computed += chunk;
    if (!r->prefilling()) token(r, step_ends.back());
  }
  // Step by step; a request done before the last step stops there.
  for (const double at : step_ends) {
    for (ServedRequest* r : it.decode) {
      if (r->done()) continue;
      int64_t tokens = 1;
      if (tokens_per_step_ > 1) {  // speculative: the accepted tokens, carried fractions
        r->speculative_credit += tokens_per_step_;
        tokens = static_cast<int64_t>(r->speculative_credit);
        r->speculative_credit -= static_cast<double>(tokens);
        tokens = std::clamp<int64_t>(tokens, 1, r->output - r->generated);
      }
      for (int64_t i = 0; i < tokens; ++i) {  // tokens of one step stream together (ITL 0)
        r->computed += 1;
        token(r, at);
      }
    }
  }
  std::erase_if(running_, [this](const ServedRequest* r) {
    return r->done() || (prefill_only_ && r->generated > 0 && !r->prefilling());
  });
}

}  // namespace shardscope::serve
