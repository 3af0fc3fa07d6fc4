// Calibrate: fits the simulator's cost tables (sim::Calibration) from measured
// traces, for `shardscope calibrate`: per op class the compute model's
// efficiencies, row ramp and fixed cost (compute_fit.h), per collective and
// group size a latency and bandwidth line (comm_fit.h), and the overhead terms
// a trace shows. Classes with too few samples keep the defaults, saying why.
// What is fitted and how: docs/calibration.md, "From traces".
#ifndef SHARDSCOPE_CALIBRATE_CALIBRATE_H_
#define SHARDSCOPE_CALIBRATE_CALIBRATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/comm_fit.h"
#include "calibrate/compute_fit.h"
#include "calibrate/exchange_fit.h"
#include "calibrate/trace_samples.h"
#include "core/status.h"
#include "sim/calibration.h"

namespace shardscope::calibrate {

struct CalibrateOptions {
  // Zoo name or YAML file of the hardware the traces ran on; needed for
  // traces without ShardScope metadata (Kineto), and wins over the metadata.
  std::string hardware;
  std::string hardware_dir;  // zoo directory; empty: DefaultHardwareDir()
  int64_t min_samples = 5;   // measured ops (calls) below which a class is not fitted
  // Each op shape's time, from its measured ops: their median (robust to a
  // descheduled op: the typical op), or their mean (the expected op, to
  // compare with the mean of repeated runs on a host whose speed moves).
  bool shape_mean = false;
  // Microbenchmark logs (docs/calibration.md, "From nccl-tests and DeepEP"):
  // nccl-tests output, each with the collective the user named for a log that
  // cannot tell it (nullopt: none named), and DeepEP's test logs with the EP
  // size of those that do not print it (0: none given).
  struct NcclTestsInput {
    std::string path;
    std::optional<Collective> collective;
  };
  std::vector<NcclTestsInput> nccl_tests;
  std::vector<std::string> deepep;
  int64_t deepep_ranks = 0;
};

// One op class (or an op kind's override) after fitting.
struct ClassFit {
  std::string name;      // "gemm", "gemv", … or an op kind ("norm")
  bool is_kind = false;  // a per-kind override
  int64_t samples = 0;   // measured ops
  int64_t shapes = 0;    // distinct (FLOPs, bytes, rows)
  bool fitted = false;
  std::string why_not;     // when not fitted: too few samples, no device figures, …
  sim::Efficiency prior;   // the default
  sim::Efficiency result;  // fitted (== prior when not fitted)
  Residual prior_residual;
  Residual residual;
  int64_t flops_bound = 0, memory_bound = 0;
  std::string note;  // e.g. which term the data did not determine
};

struct CollectiveFit {
  Collective collective = Collective::kNone;  // kSend: send/recv pairs
  int32_t group_size = 0;
  int64_t samples = 0;  // calls
  int64_t sizes = 0;    // distinct message sizes
  LinkFit fit;
  double busbw = 0;        // bus bandwidth (nccl-tests factor × algbw)
  double link_bw = 0;      // the cluster's per-device link bandwidth, 0 unknown
  double wait = 0;         // median over calls of a member's wait for the latest (s); 0: none
  int64_t wait_calls = 0;  // calls whose members all appear in the traces
  std::string why_not;     // when not fitted
  std::string note;        // e.g. why it does not set network_efficiency
  // "nccl-tests": a microbenchmark's table (its rows are `samples`), whose line
  // is the collective's time (sim::MeasuredCollective::exact); "": traces.
  std::string source;
};

// An overhead term (sim::OverheadTerms) as far as the traces show it.
struct TermFit {
  TermFit(std::string name_, int64_t samples_ = 0) : name(std::move(name_)), samples(samples_) {}
  std::string name;  // its key in the file ("min_kernel_us")
  int64_t samples = 0;
  bool fitted = false;
  double seconds = 0;     // fitted value (a fraction where `fraction`)
  bool fraction = false;  // a ratio, written as is, not in µs
  std::string why_not;    // when not fitted
  std::string note;       // how it was taken
};

// The cache bandwidth (sim::Calibration::cache_bandwidth), fitted on the ops
// of ranks whose working set fit the device's last-level cache.
struct CacheFit {
  int64_t samples = 0;  // resident compute ops
  int64_t shapes = 0;
  bool fitted = false;
  double bandwidth = 0;     // bytes/s
  std::string why_not;      // when not fitted
  Residual prior_residual;  // with every byte from memory (the classes' efficiencies)
  Residual residual;        // with the fitted cache bandwidth
};

struct CalibrationResult {
  std::vector<std::string> files;
  std::vector<std::string> logs;  // nccl-tests and DeepEP logs
  bool shape_mean = false;        // CalibrateOptions::shape_mean
  std::string device;             // device name ("" unknown)
  DType dtype = DType::kBf16;
  DeviceRoofs roofs;  // zero when unknown
  bool launch_fitted = false;
  bool node_bandwidth_fitted = false;  // calibration.node_memory_bandwidth
  std::string node_bandwidth_why_not;  // runs shared a bus it could not be fitted from
  sim::Calibration calibration;        // defaults with the fitted entries
  std::vector<ClassFit> classes;
  std::vector<CollectiveFit> collectives;
  bool network_fitted = false;
  CacheFit cache;
  std::map<std::string, int64_t> unused;  // events not used: reason → count
  // min_kernel_us and iteration_overhead_us; the other terms (serving, CUDA
  // graphs, FP8 quantisation, cold start) are not visible in one trace: always
  // listed as not fitted, saying why.
  std::vector<TermFit> terms;
  // The cluster the fits used (--hardware, else the traces' metadata).
  std::optional<ClusterSpec> cluster;
  // The MoE exchange kernels from DeepEP's logs (calibration.exchange_*).
  bool exchange_fitted = false;
  DeepEpFit exchange;
};

// Reads the traces (none: only the microbenchmark logs of `options`) and the
// logs, and fits. Errors: CollectSamples's, the logs' readers', an unknown
// --hardware, DeepEP logs without a cluster, and FailedPrecondition when
// nothing at all could be fitted (the message says per class why).
StatusOr<CalibrationResult> Calibrate(const std::vector<std::string>& paths,
                                      const CalibrateOptions& options);

// The calibration file (YAML): fitted classes and kinds, launch overhead,
// network efficiency, and the per-collective fits (informational). Comments
// give each entry's samples and residual.
std::string CalibrationYaml(const CalibrationResult& result);

// A table for people: per class and collective, samples, fitted values and
// the residual before (defaults) and after; classes not fitted and why.
std::string CalibrationSummary(const CalibrationResult& result);

// FailedPrecondition naming the file when it exists and `force` is false:
// checked before a fit as well as by WriteNewFile.
Status CheckNewFile(const std::string& path, bool force);

// Writes `text` to `path`; fails (FailedPrecondition) when the file exists
// and `force` is false, naming the file.
Status WriteNewFile(const std::string& path, const std::string& text, bool force);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_CALIBRATE_H_
