#include "run/latency.h"

#include <algorithm>

namespace shardscope::run {

template <typename Time>
void LatencyWindows<Time>::AddPrefill(Time begin, Time end) {
  if (!has_prefill_) {
    has_prefill_ = true;
    prefill_begin_ = begin;
    prefill_end_ = end;
    return;
  }
  prefill_begin_ = std::min(prefill_begin_, begin);
  prefill_end_ = std::max(prefill_end_, end);
}

template <typename Time>
void LatencyWindows<Time>::AddDecodeStep(int32_t step, Time end) {
  auto [it, inserted] = step_end_.emplace(step, end);
  if (!inserted) it->second = std::max(it->second, end);
  AddDecodeEnd(end);
}

template <typename Time>
void LatencyWindows<Time>::AddDecodeEnd(Time end) {
  decode_end_ = has_decode_ ? std::max(decode_end_, end) : end;
  has_decode_ = true;
}

template <typename Time>
Latency LatencyWindows<Time>::Compute(int64_t unnumbered_steps) const {
  Latency l;
  l.has_prefill = has_prefill_;
  if (!has_prefill_) return l;
  l.ttft = ToSeconds(prefill_end_ - prefill_begin_);
  if (!has_decode_) return l;
  l.decode_steps = step_end_.empty() ? std::max<int64_t>(unnumbered_steps, 0)
                                     : static_cast<int64_t>(step_end_.size());
  if (l.decode_steps == 0) return l;
  l.has_decode = true;
  l.decode_seconds = ToSeconds(decode_end_ - prefill_end_);
  l.tpot = l.decode_seconds / static_cast<double>(l.decode_steps);
  return l;
}

Throughput ComputeThroughput(const Latency& l, int64_t batch, int64_t prompt, double run_seconds) {
  Throughput t;
  const double b = static_cast<double>(batch);
  const double tokens = b * static_cast<double>(prompt);
  t.prefill_tokens_per_s = l.ttft > 0 ? tokens / l.ttft : 0;
  t.decode_tokens_per_s = l.tpot > 0 ? b / l.tpot : 0;
  t.tps = run_seconds > 0 ? tokens / run_seconds : 0;
  return t;
}

template class LatencyWindows<int64_t>;
template class LatencyWindows<double>;

}  // namespace shardscope::run
