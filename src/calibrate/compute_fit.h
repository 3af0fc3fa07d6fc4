// Fitting the simulator's compute model to measured op times. The model is the
// one of sim/compute_model.h:
//   t = max(F / (P · e_f · r / (r + h)), B / min(BW · e_m, S)) + L
// with F the op's FLOPs, B its bytes, r its rows (0: unknown, no ramp), P and
// BW the device's peak FLOP/s and memory bandwidth, S the run's share of a
// shared memory bus (0: none); a resident sample's memory term is B / C with C
// the cache bandwidth, when one is given, and its FLOP term's e_f is the
// class's ceiling from the cache where it has one (sim::Efficiency::cache_flops).
// FitEfficiency finds (e_f, e_m, h) of one op class for a given launch overhead
// L by minimising the squared log error weighted by measured time (each op's
// error counts relatively, and the ops the time goes to count most).
// Pure functions; thread-safe.
#ifndef SHARDSCOPE_CALIBRATE_COMPUTE_FIT_H_
#define SHARDSCOPE_CALIBRATE_COMPUTE_FIT_H_

#include <cstdint>
#include <vector>

#include "sim/calibration.h"

namespace shardscope::calibrate {

// One op shape of a class with the median of its measured durations.
struct ShapeSample {
  double flops = 0;
  double bytes = 0;
  double rows = 0;     // GEMM m (or tokens per expert); 0: unknown
  double seconds = 0;  // median measured duration
  int64_t count = 1;   // measured ops of this shape (the sample's weight)
  // The run's share of a memory bus the node's busy devices share
  // (sim::SharedBandwidthPerDevice), capping the memory rate; 0: none.
  double shared_bandwidth = 0;
  // The run's working set fit the device's last-level cache: its bytes stream
  // at DeviceRoofs::cache_bandwidth (when positive) instead.
  bool resident = false;
  // The sample's weight in the loss; 0: count × seconds (its measured time).
  double weight = 0;
  // Its class pays the row ramp from the cache too (sim::Efficiency::cache_ramp).
  bool cache_ramp = false;
};

struct DeviceRoofs {
  double peak_flops = 0;        // FLOP/s
  double memory_bandwidth = 0;  // bytes/s
  double cache_bandwidth = 0;   // bytes/s of resident samples (sim::Calibration); 0: off
};

// The compute model's time for one sample.
double ModelSeconds(const sim::Efficiency& e, const DeviceRoofs& roofs, double launch,
                    const ShapeSample& s);

struct EfficiencyFit {
  sim::Efficiency efficiency;
  double loss = 0;  // Σ count · measured · ln(model / measured)²
  // Samples (weighted by count) whose model time the FLOP term, or the memory
  // term, decides: a term that decides none is not identified by the data.
  int64_t flops_bound = 0;
  int64_t memory_bound = 0;
  bool fit_half_rows = false;  // h was searched (some sample has rows)
};

// Fits (e_f, e_m, h) for fixed `launch`. e_f and e_m are searched in
// [1e-4, 1]; h in [0, 512] when `half_rows` and some sample has rows, else 0. A term
// that decides no sample keeps `prior`'s value, raised (up to 1) where that
// value would make it decide a sample the fit gave to the other term.
EfficiencyFit FitEfficiency(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs,
                            double launch, const sim::Efficiency& prior, bool half_rows = true);

// The loss FitEfficiency minimises: Σ count · measured · ln(model / measured)².
// With `huber` > 0, a sample's |ln| beyond it counts linearly (Huber): a few
// ops far off the model (a library's slower path) pull a fit less.
double FitLoss(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs, double launch,
               const sim::Efficiency& e, double huber = 0);

// Error statistics of a model over samples, weighted by count.
// rms and median are weighted by measured time (count × median duration).
struct Residual {
  double rms_relative = 0;     // sqrt(mean((model − measured)/measured)²)
  double median_relative = 0;  // median of |model − measured| / measured
  double total_relative = 0;   // (Σ model − Σ measured) / Σ measured, each × count
};
Residual ComputeResidual(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs,
                         double launch, const sim::Efficiency& e);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_COMPUTE_FIT_H_
