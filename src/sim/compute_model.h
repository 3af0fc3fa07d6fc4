// ComputeModel: how long one compute op takes on one device. A roofline —
// max(FLOPs / (peak · e_flops(rows)), bytes / memory rate) + a fixed cost —
// with the efficiencies of the op's class from a Calibration, all ≤ 1, so no op
// beats its FLOPs at the peak or its bytes at the bandwidth; the calibration's
// optional terms only add time. The regimes (one row, small batches, cache-
// resident runs, a node's shared memory bus, asynchronous launches) are in
// docs/sim.md, "Compute model"; how the tables are fitted and how far they are
// from measured runs, docs/fidelity.md. Immutable; thread-safe.
#ifndef SHARDSCOPE_SIM_COMPUTE_MODEL_H_
#define SHARDSCOPE_SIM_COMPUTE_MODEL_H_

#include <algorithm>
#include <array>
#include <optional>

#include "cluster/cluster.h"
#include "config/precision.h"
#include "core/status.h"
#include "program/op.h"
#include "sim/calibration.h"

namespace shardscope::sim {

// Devices of one node that stream memory at the same time in `experiment`:
// its ranks on a node (at most devices_per_node), of which under pipelining only
// min(micro-batches, stages) / stages compute at once (a stage waits for its
// input otherwise; micro-batches beyond the requests per replica are empty).
int64_t ConcurrentDevicesPerNode(const Experiment& experiment);
// The same from the figures: world size, devices per node, pipeline stages,
// micro-batches (0: one per stage) and requests per dp × ep replica.
int64_t ConcurrentDevicesPerNode(int64_t world, int64_t devices_per_node, int64_t pp,
                                 int64_t micro_batches, int64_t requests_per_replica);

// The bytes/s each of `concurrent` devices gets of the node's shared memory
// bandwidth (cluster.node_memory_bandwidth / concurrent); 0 when the node
// does not share one.
double SharedBandwidthPerDevice(const ClusterSpec& cluster, int64_t concurrent);
// `cluster` with the calibration's measured node memory bandwidth, if it has one.
ClusterSpec NodeBandwidthCluster(ClusterSpec cluster, const Calibration& calibration);

// Whether every rank's weights and KV cache (plan/memory.h: the busiest rank)
// fit the device's last-level cache (DeviceSpec::l2_cache_bytes; 0: unknown,
// false), so that a step reads them from cache, not memory.
bool CacheResident(const Experiment& experiment);

class ComputeModel {
 public:
  // Fails when the device lists no peak for `dtype` or `head_dtype` (or a wider
  // type). `shared_bandwidth`: SharedBandwidthPerDevice, the cap on any op's
  // memory rate; 0 for none. `head_dtype`: the LM head's and embedding's
  // (Workload::lm_head_dtype); none: `dtype`. `cache_resident`: CacheResident
  // (bytes stream at calibration.cache_bandwidth when it is on).
  static StatusOr<ComputeModel> Create(const DeviceSpec& device, DType dtype,
                                       const Calibration& calibration, double shared_bandwidth = 0,
                                       std::optional<DType> head_dtype = std::nullopt,
                                       bool cache_resident = false);
  // The same under an experiment's dtype roles (PrecisionOf). Without a
  // `precision:` block (roles false) exactly the model above for its dtype and
  // LM head dtype. With one: the layer GEMMs run at the peak of their compute
  // dtype (Precision::GemmDType), FP8 ones at the device's fp8_gemm_efficiency
  // of it (block-scaled weights: on calibration.fp8_block_gemm's curve, where
  // it has one); the LM head at its dtype's; the router, MLA's absorbed decode
  // products, attention and every other op at the activations' (an FP8 KV
  // cache is dequantised in the attention kernel); the quantisation pass is
  // the Program's own op (kQuantize), paying calibration.terms.fp8_quant_fixed
  // (when set) as its fixed cost.
  static StatusOr<ComputeModel> Create(const DeviceSpec& device, const Precision& precision,
                                       const Calibration& calibration, double shared_bandwidth = 0,
                                       bool cache_resident = false);

  // The same model with no per-kernel launch overhead: kernels replayed from a
  // CUDA graph (the graph's replay is paid once per iteration by the caller).
  // Each op still pays its device-side fixed cost as a graph node: its class's
  // `replay` (Efficiency::replay; the GPU defaults' measured figures), or with
  // async_launch its class's launch (the fitted files' device-side cost).
  ComputeModel WithoutLaunch() const;
  // The roofline alone: no fixed cost of any kind per op (launch, replay, the
  // host's issue interval); min_kernel still floors an op. For differences of
  // op times in which every fixed cost cancels.
  ComputeModel WithoutFixedCosts() const;

  // Seconds for a compute op (comm ops: 0; the network model times them).
  double Seconds(const Op& op) const;
  // The same on a rank `scale` times as slow as the model (sim/rank_spread.h):
  // Seconds × scale, but a faster rank (scale < 1) no faster than the op's
  // FLOPs at the peak and its bytes at the device's (or the cache's) bandwidth.
  double Seconds(const Op& op, double scale) const;
  // The FLOP efficiency the op reaches given its shape.
  double FlopsEfficiency(const Op& op) const;

  double peak_flops() const { return peak_flops_; }
  // FLOP/s an op's FLOPs are measured against: its dtype's peak (for FP8 GEMMs
  // under roles, times the device's fp8_gemm_efficiency).
  double PeakFor(const Op& op) const {
    return op.role == OpRole::kNone ? kind_peak_[static_cast<size_t>(op.kind)]
                                    : role_peak_[static_cast<size_t>(op.role)];
  }
  double memory_bandwidth() const { return memory_bandwidth_; }
  double launch_overhead() const { return launch_overhead_; }
  double shared_bandwidth() const { return shared_bandwidth_; }
  // Bytes/s of a cache-resident working set; 0: bytes come from memory.
  double cache_bandwidth() const { return cache_bandwidth_; }

 private:
  ComputeModel(double peak, double head_peak, bool fp8, bool head_fp8, double bandwidth,
               double launch, double shared, double cache, double host_launch,
               Calibration calibration)
      : peak_flops_(peak),
        head_peak_flops_(head_peak),
        fp8_(fp8),
        head_fp8_(head_fp8),
        memory_bandwidth_(bandwidth),
        launch_overhead_(launch),
        shared_bandwidth_(shared),
        cache_bandwidth_(cache),
        host_launch_(calibration.terms.async_launch ? host_launch : 0),
        small_rows_(calibration.small_gemm_rows),
        calibration_(std::move(calibration)) {
    for (int k = 0; k < kNumKinds; ++k) {
      by_kind_[k] = calibration_.For(static_cast<OpKind>(k));
      gemv_[k] = calibration_.For(static_cast<OpKind>(k), 1.0);
      small_[k] = small_rows_ >= 2 ? calibration_.For(static_cast<OpKind>(k), 2.0) : by_kind_[k];
    }
  }
  static constexpr int kNumKinds = static_cast<int>(OpKind::kComm) + 1;
  // The helpers of Seconds are defined here to be inlined: the simulator's
  // engine calls it once per compute op of every run.
  // The entry for the kind and shape regime (calibration_.For(kind, rows)).
  const Efficiency& For(OpKind kind, double rows) const {
    const int k = static_cast<int>(kind);
    if (!(rows > 0)) return by_kind_[k];
    return rows <= 1 ? gemv_[k] : rows <= small_rows_ ? small_[k] : by_kind_[k];
  }
  // Its FLOP efficiency over `rows` rows (Rows(op) in compute_model.cc), from
  // the cache where the run is cache-resident.
  double FlopsEfficiency(const Efficiency& e, double rows) const {
    return FlopsEfficiencyAt(e, rows, cache_bandwidth_ > 0, e.cache_ramp);
  }
  // Whether `op` is a layer GEMM on the block-scaled FP8 curve
  // (Calibration::fp8_block_gemm).
  bool BlockScaled(const Op& op) const {
    return block_fp8_ && op.role != OpRole::kNone && block_role_[static_cast<size_t>(op.role)];
  }
  // The curve's FLOP efficiency: the row ramp times the K ramp.
  double BlockEfficiency(const Op& op, double rows) const {
    const double k = static_cast<double>(op.k);
    return FlopsEfficiency(block_, rows) *
           (block_half_k_ > 0 && k > 0 ? k / (k + block_half_k_) : 1);
  }

  // Bytes/s an op of efficiency `e` moves data at.
  double MemoryRate(const Efficiency& e) const {
    if (cache_bandwidth_ > 0) return e.cache > 0 ? e.cache : cache_bandwidth_;
    double rate = memory_bandwidth_ * e.memory;
    if (shared_bandwidth_ > 0) rate = std::min(rate, shared_bandwidth_);
    return rate;
  }
  // Seconds of fixed cost per op of efficiency `e`: its class's launch, else the model's.
  // Replayed from a graph (no_launch_): its class's device-side cost as a graph
  // node (`replay`); with asynchronous launches the class's launch is that cost.
  double Launch(const Efficiency& e) const {
    if (no_fixed_) return 0;
    if (no_launch_ && host_launch_ == 0) return e.replay > 0 ? e.replay : 0;
    return e.launch >= 0 ? e.launch : launch_overhead_;
  }
  // Seconds of the quantisation and scaling ops before an FP8 GEMM (0: none).
  double QuantSeconds(const Op& op) const;
  // Fills kind_peak_ and role_peak_: the legacy split (the LM head at its
  // peak, everything else at peak_flops_) or, with `roles`, by dtype role.
  void SetPeaks(const Precision* roles, double gemm_peak, double act_peak);

  double peak_flops_;
  double head_peak_flops_;  // the LM head's
  bool fp8_, head_fp8_;     // GEMMs (the LM head's) run in FP8: quantised inputs
  double memory_bandwidth_;
  double launch_overhead_;
  double shared_bandwidth_;  // 0: no shared bus
  double cache_bandwidth_;   // 0: not cache-resident
  double host_launch_;       // async_launch: an op's floor, the host's issue interval; else 0
  bool no_launch_ = false;   // WithoutLaunch: no host launch per op (graph replay)
  bool no_fixed_ = false;    // WithoutFixedCosts: no fixed cost per op at all
  double small_rows_;        // Calibration::small_gemm_rows
  Calibration calibration_;
  bool roles_ = false;      // peaks by dtype role; quantisation in the Program
  double quant_fixed_ = 0;  // s per kQuantize op instead of its class's launch; 0: the launch
  std::array<double, kNumKinds> kind_peak_{};  // FLOP/s by kind (hand-built ops, no role)
  std::array<double, 256> role_peak_{};        // FLOP/s by role (OpRole is 8-bit)
  std::array<Efficiency, kNumKinds> by_kind_;  // calibration_.For, looked up once
  std::array<Efficiency, kNumKinds> gemv_;     // the same for one row (matrix-vector)
  std::array<Efficiency, kNumKinds> small_;    // for 2 to small_rows_ rows
  // Block-scaled FP8 layer GEMMs (Calibration::fp8_block_gemm; roles only):
  // their efficiency (the GEMM class's launch), K ramp and roles.
  bool block_fp8_ = false;
  Efficiency block_;
  double block_half_k_ = 0;
  std::array<bool, 256> block_role_{};
};

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COMPUTE_MODEL_H_
