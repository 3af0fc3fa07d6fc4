// The head: final norm of each request's last token and greedy sampling.
#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::HeadNorm(MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  Tensor rows({R, h_});
  for (int64_t r = 0; r < R; ++r) {
    int64_t row = -1;
    for (int64_t t = 0; t < mb.local; ++t) {
      if (!prefill_ || mb.pos[static_cast<size_t>(r * mb.local + t)] == seq_ - 1) {
        row = r * mb.local + t;
      }
    }
    if (row < 0) return InternalError("the last prompt token of a request is not on this rank");
    k_.CopyRows(mb.x.data() + row * h_, h_, rows.data() + r * h_, h_, 1, h_);
  }
  mb.final_hn = Tensor({R, h_});
  k_.RmsNorm(rows.data(), h_, w_.final_norm().data(), mb.final_hn.data(), h_, R, h_,
             static_cast<float>(m_.norm_eps));
  return Status::Ok();
}

Status PhaseRunner::Sampling(const Op& op, MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  const int64_t V = w_.vocab().count;
  if (op.role != OpRole::kSampleSelect) {
    std::vector<float> mx(static_cast<size_t>(R));
    std::vector<int32_t> idx(static_cast<size_t>(R));
    k_.ArgMax(mb.logits.data(), R, V, w_.vocab().begin, mx.data(), idx.data());
    mb.local_best.resize(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) mb.local_best[r] = {mx[r], idx[r]};
    if (op.role == OpRole::kSample) {
      mb.out_ids = idx;
      Sampled(mb);
    }
    return Status::Ok();
  }
  {  // select: the largest of the tp shards' maxima; lower index on ties
    for (int64_t r = 0; r < R; ++r) {
      ArgMaxPair best = mb.all_best[r];
      for (int64_t s = 1; s < tp_; ++s) {
        const ArgMaxPair& c = mb.all_best[s * R + r];
        if (c.value > best.value || (c.value == best.value && c.index < best.index)) best = c;
      }
      mb.out_ids[r] = best.index;
    }
    Sampled(mb);
    return Status::Ok();
  }
}

void PhaseRunner::Sampled(MicroBatch& mb) {
  mb.ids_ready = true;
  const int64_t V = w_.vocab().count;
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    SampleRecord s;
    s.phase_index = phase_index_;
    s.request = mb.requests[r];
    s.token = mb.out_ids[r];
    s.vocab_begin = w_.vocab().begin;
    if (opt_.keep_logits) {
      s.logits.assign(mb.logits.data() + r * V, mb.logits.data() + (r + 1) * V);
    }
    samples_->push_back(std::move(s));
  }
}

}  // namespace shardscope::runtime
