// Fitting latency and bandwidth of one collective at one group size from
// measured calls: t = latency + bytes / algbw, by least squares on the
// relative error over the distinct message sizes (median time of each), so
// small and large messages weigh the same. Pure functions; thread-safe.
#ifndef SHARDSCOPE_CALIBRATE_COMM_FIT_H_
#define SHARDSCOPE_CALIBRATE_COMM_FIT_H_

#include <cstdint>
#include <vector>

namespace shardscope::calibrate {

struct MessageSample {
  double bytes = 0;    // nccl-tests size
  double seconds = 0;  // median measured duration of calls of this size
  int64_t count = 1;
};

struct LinkFit {
  double latency = 0;          // seconds, ≥ 0
  double algbw = 0;            // bytes/s: bytes / (t − latency)
  bool latency_known = false;  // false: one message size, latency folded into algbw
  double rms_relative = 0;     // of the fitted line over the samples
};

// Needs at least one sample with bytes > 0 and seconds > 0 (else algbw = 0).
LinkFit FitLink(const std::vector<MessageSample>& samples);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_COMM_FIT_H_
