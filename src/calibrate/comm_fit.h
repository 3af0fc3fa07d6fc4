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

// The same line, robust to sizes off it (a warm-up row, a protocol or
// algorithm switch): minimises Σ count · ρ(r) over the sizes, r the relative
// error (latency + bytes / algbw − t) / t and ρ Huber's loss with its corner
// at 1.345 × the residuals' robust scale (1.4826 × their median |r|, at least
// 1 %), by iteratively reweighted least squares from FitLink's line. Each
// size still counts by its relative error, so the small sizes fit the
// latency and the large ones the bandwidth. rms_relative is over all sizes.
LinkFit FitLinkRobust(const std::vector<MessageSample>& samples);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_COMM_FIT_H_
