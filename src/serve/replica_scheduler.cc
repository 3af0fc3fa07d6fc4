#include "serve/replica_scheduler.h"

#include <algorithm>

namespace shardscope::serve {

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
    : spec_(spec), total_blocks_(total_blocks), prefill_only_(prefill_only) {}

int64_t ReplicaScheduler::BlocksFor(int64_t tokens) const {
  return (tokens + spec_.block_size - 1) / spec_.block_size;
}

bool ReplicaScheduler::CanEverFit(int64_t prompt, int64_t output) const {
  // The last token is sampled and never fed back: prompt + output − 1 cached at
  // most, and the prompt at least (an EOS-first request, output 0, still prefills).
  return BlocksFor(prompt + std::max<int64_t>(output, 1) - 1) <= total_blocks_;
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
    if (!Allocate(r, r->computed)) break;
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
    bool scheduled = true;
    while (!Allocate(r, r->computed + need)) {
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
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    const int64_t need = std::min(r->target - r->computed, budget);
    if (!Allocate(r, r->computed + need)) break;
    Admit(&it, r, need);
    budget -= need;
  }
  return it;
}

Iteration ReplicaScheduler::ScheduleWholePrompts() {
  AdmitCached();
  Iteration it;
  int64_t budget = spec_.max_num_batched_tokens;
  // Prefill-only iterations first; a prompt longer than the budget goes alone.
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    ServedRequest* r = waiting_.front();
    const int64_t need = r->target - r->computed;
    if (!it.prefill.empty() && need > budget) break;
    if (!Allocate(r, r->computed + need)) break;
    Admit(&it, r, need);
    budget -= need;
  }
  if (!it.prefill.empty()) return it;
  budget = spec_.max_num_batched_tokens;
  ScheduleRunning(&it, &budget);
  return it;
}

Iteration ReplicaScheduler::Schedule() {
  return spec_.chunked_prefill ? ScheduleChunked() : ScheduleWholePrompts();
}

void ReplicaScheduler::Complete(const Iteration& it, double end, std::vector<double>* itl,
                                std::vector<ServedRequest*>* finished) {
  auto token = [&](ServedRequest* r) {
    if (r->generated == 0) {
      r->first_token = end;
    } else if (r->measured && itl != nullptr) {
      itl->push_back(end - r->last_token);
    }
    ++r->generated;
    r->last_token = end;
    if (r->done() || prefill_only_) {
      if (r->done()) r->finish = end;
      Free(r);
      finished->push_back(r);
    }
  };
  for (const auto& [r, chunk] : it.prefill) {
    r->computed += chunk;
    if (!r->prefilling()) token(r);
  }
  for (ServedRequest* r : it.decode) {
    int64_t tokens = 1;
    if (tokens_per_step_ > 1) {  // speculative: the accepted tokens, carried fractions
      r->speculative_credit += tokens_per_step_;
      tokens = static_cast<int64_t>(r->speculative_credit);
      r->speculative_credit -= static_cast<double>(tokens);
      tokens = std::clamp<int64_t>(tokens, 1, r->output - r->generated);
    }
    for (int64_t i = 0; i < tokens; ++i) {  // tokens of one step stream together (ITL 0)
      r->computed += 1;
      token(r);
    }
  }
  std::erase_if(running_, [this](const ServedRequest* r) {
    return r->done() || (prefill_only_ && r->generated > 0 && !r->prefilling());
  });
}

}  // namespace shardscope::serve
