// The one definition of TTFT, TPOT and throughput, for every backend and the
// analyzer: TTFT spans the first prefill start to the last prefill end over all
// ranks; TPOT is (last decode end − that prefill end) / decode steps; prefill
// throughput = batch · prompt / TTFT, decode throughput = batch / TPOT and the
// seeds' TPS = batch · prompt / run time. The simulator feeds it its per-rank
// phase windows (seconds, double), the CPU backend and the analyzer the
// recorded per-rank spans (nanoseconds, int64). Plain values; not thread-safe.
#ifndef SHARDSCOPE_RUN_LATENCY_H_
#define SHARDSCOPE_RUN_LATENCY_H_

#include <cstdint>
#include <map>

namespace shardscope::run {

struct Latency {
  double ttft = 0;            // seconds
  double tpot = 0;            // seconds; 0 without decode
  double decode_seconds = 0;  // last decode end − prefill end
  int64_t decode_steps = 0;   // the steps TPOT divides by
  bool has_prefill = false;
  bool has_decode = false;  // a decode window and at least one step to divide by
};

struct Throughput {
  double prefill_tokens_per_s = 0;  // batch · prompt / TTFT
  double decode_tokens_per_s = 0;   // batch / TPOT
  double tps = 0;                   // batch · prompt / run time
};

// The windows over all ranks that latency needs, from per-rank spans. `Time` is
// int64_t nanoseconds (recorded traces) or double seconds (the simulator);
// differences are taken in `Time` before conversion, so epoch timestamps lose
// no precision.
template <typename Time>
class LatencyWindows {
 public:
  // One rank's prefill span (or, without spans, a prefill op).
  void AddPrefill(Time begin, Time end);
  // The end of one rank's decode step `step` (a step span, or an op with a step id).
  void AddDecodeStep(int32_t step, Time end);
  // The end of a decode span or op that names no step.
  void AddDecodeEnd(Time end);

  bool has_prefill() const { return has_prefill_; }
  bool has_decode() const { return has_decode_; }
  Time prefill_begin() const { return prefill_begin_; }
  Time prefill_end() const { return prefill_end_; }
  Time decode_end() const { return decode_end_; }
  // Each decode step's end (latest over ranks), by step id.
  const std::map<int32_t, Time>& step_ends() const { return step_end_; }

  // The figures; decode steps are the distinct step ids seen, or, when the
  // decode window names none, `unnumbered_steps` (e.g. tokens_to_generate − 1;
  // ≤ 0: no TPOT).
  Latency Compute(int64_t unnumbered_steps = 0) const;

 private:
  bool has_prefill_ = false, has_decode_ = false;
  Time prefill_begin_{}, prefill_end_{}, decode_end_{};
  std::map<int32_t, Time> step_end_;
};

// Seconds of a difference of `Time`s.
inline double ToSeconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }
inline double ToSeconds(double seconds) { return seconds; }

// The run time the seeds' TPS divides by when decode steps were simulated
// only in part: TTFT + all `decode_steps` at the mean TPOT.
inline double ExtrapolatedRunSeconds(const Latency& l, int64_t decode_steps) {
  return l.ttft + static_cast<double>(decode_steps) * l.tpot;
}

// Throughput of `batch` requests of `prompt` tokens; a figure whose divisor is
// 0 stays 0.
Throughput ComputeThroughput(const Latency& latency, int64_t batch, int64_t prompt,
                             double run_seconds);

extern template class LatencyWindows<int64_t>;
extern template class LatencyWindows<double>;

}  // namespace shardscope::run

#endif  // SHARDSCOPE_RUN_LATENCY_H_
