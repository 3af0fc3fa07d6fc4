// The head: final norm of each request's last token and greedy sampling.
#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::HeadNorm(MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  RETURN_IF_ERROR(Act(&mb.last_rows, {R, hidden_}));
  for (int64_t r = 0; r < R; ++r) {
    int64_t row = -1;
    for (int64_t t = 0; t < mb.local; ++t) {
      if (!prefill_ || mb.pos[static_cast<size_t>(r * mb.local + t)] == seq_ - 1) {
        row = r * mb.local + t;
      }
    }
    if (row < 0) return InternalError("the last prompt token of a request is not on this rank");
    RETURN_IF_ERROR(backend_.Copy(RowsOf(mb.x, row, 1), RowsOf(mb.last_rows, r, 1)));
  }
  RETURN_IF_ERROR(Act(&mb.final_hn, {R, hidden_}));
  return backend_.RmsNorm(mb.last_rows, weights_.final_norm(), static_cast<float>(model_.norm_eps),
                          mb.final_hn);
}

Status PhaseRunner::Sampling(const Op& op, MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  if (op.role != OpRole::kSampleSelect) {
    mb.best_value.assign(static_cast<size_t>(R), 0.0f);
    std::vector<int32_t> idx(static_cast<size_t>(R));
    RETURN_IF_ERROR(backend_.ArgMax(mb.logits, weights_.vocab().begin, mb.best_value, idx));
    mb.local_best.resize(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) mb.local_best[r] = {mb.best_value[r], idx[r]};
    if (op.role == OpRole::kSample) {
      mb.out_ids = idx;
      return Sampled(mb);
    }
    return Status::Ok();
  }
  // Select: the largest of the tp shards' maxima; lower index on ties.
  for (int64_t r = 0; r < R; ++r) {
    ArgMaxPair best = mb.all_best[r];
    for (int64_t s = 1; s < tp_; ++s) {
      const ArgMaxPair& c = mb.all_best[s * R + r];
      if (c.value > best.value || (c.value == best.value && c.index < best.index)) best = c;
    }
    mb.out_ids[r] = best.index;
  }
  return Sampled(mb);
}

Status PhaseRunner::Sampled(MicroBatch& mb) {
  mb.ids_ready = true;
  const int64_t V = weights_.vocab().count;
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    SampleRecord s;
    s.phase_index = phase_index_;
    s.request = mb.requests[r];
    s.token = mb.out_ids[r];
    s.vocab_begin = weights_.vocab().begin;
    if (opt_.keep_logits) {
      s.logits.resize(static_cast<size_t>(V));
      RETURN_IF_ERROR(
          backend_.CopyToHost(RowsOf(mb.logits, static_cast<int64_t>(r), 1), s.logits.data()));
    }
    samples_->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace shardscope::runtime
