// ComputeModel: how long one compute op takes on one device.
//   time = max(FLOPs / (peak · e_flops(shape)), bytes / (bandwidth · e_mem)) + launch
// with the efficiencies of the op's class from a Calibration (all ≤ 1, so the
// result never beats FLOPs / peak or bytes / bandwidth). An op with no FLOPs
// and no bytes (an empty micro-batch) takes no time. Immutable; thread-safe.
#ifndef SHARDSCOPE_SIM_COMPUTE_MODEL_H_
#define SHARDSCOPE_SIM_COMPUTE_MODEL_H_

#include <array>

#include "cluster/cluster.h"
#include "core/status.h"
#include "program/op.h"
#include "sim/calibration.h"

namespace shardscope::sim {

class ComputeModel {
 public:
  // Fails when the device lists no peak for `dtype` (or a wider type).
  static StatusOr<ComputeModel> Create(const DeviceSpec& device, DType dtype,
                                       const Calibration& calibration);

  // Seconds for a compute op (comm ops: 0; the network model times them).
  double Seconds(const Op& op) const;
  // The FLOP efficiency the op reaches given its shape.
  double FlopsEfficiency(const Op& op) const;

  double peak_flops() const { return peak_flops_; }
  double memory_bandwidth() const { return memory_bandwidth_; }
  double launch_overhead() const { return launch_overhead_; }

 private:
  ComputeModel(double peak, double bandwidth, double launch, Calibration calibration)
      : peak_flops_(peak),
        memory_bandwidth_(bandwidth),
        launch_overhead_(launch),
        calibration_(std::move(calibration)) {
    for (int k = 0; k < kNumKinds; ++k) {
      by_kind_[k] = calibration_.For(static_cast<OpKind>(k));
      gemv_[k] = calibration_.For(static_cast<OpKind>(k), 1.0);
    }
  }
  static constexpr int kNumKinds = static_cast<int>(OpKind::kComm) + 1;
  // The entry for the op's kind and shape regime (calibration_.For(kind, rows)).
  const Efficiency& For(const Op& op) const;

  double peak_flops_;
  double memory_bandwidth_;
  double launch_overhead_;
  Calibration calibration_;
  std::array<Efficiency, kNumKinds> by_kind_;  // calibration_.For, looked up once
  std::array<Efficiency, kNumKinds> gemv_;     // the same for one row (matrix-vector)
};

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COMPUTE_MODEL_H_
