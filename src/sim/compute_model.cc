#include "sim/compute_model.h"

#include <algorithm>

namespace shardscope::sim {

StatusOr<ComputeModel> ComputeModel::Create(const DeviceSpec& device, DType dtype,
                                            const Calibration& calibration) {
  ASSIGN_OR_RETURN(double peak, device.PeakFlops(dtype));
  RETURN_IF_ERROR(calibration.Validate());
  if (!(peak > 0) || !(device.memory_bandwidth > 0)) {
    return InvalidArgument("device '{}' needs a positive peak and memory bandwidth", device.name);
  }
  const double launch =
      calibration.launch_overhead >= 0 ? calibration.launch_overhead : device.launch_overhead;
  return ComputeModel(peak, device.memory_bandwidth, launch, calibration);
}

namespace {

// Rows the kernel tiles over: routed experts run one GEMM per expert, so the
// mean tokens per active expert; otherwise m.
double Rows(const Op& op) {
  double rows = static_cast<double>(op.m);
  if (!op.expert_tokens.empty()) {
    int64_t sum = 0, active = 0;
    for (int64_t t : op.expert_tokens) {
      sum += t;
      active += t > 0;
    }
    rows = active > 0 ? static_cast<double>(sum) / static_cast<double>(active) : 0;
  }
  return rows;
}

}  // namespace

const Efficiency& ComputeModel::For(const Op& op) const {
  const int k = static_cast<int>(op.kind);
  const double rows = Rows(op);
  return rows > 0 && rows <= 1 ? gemv_[k] : by_kind_[k];
}

double ComputeModel::FlopsEfficiency(const Op& op) const {
  const Efficiency& e = For(op);
  if (e.half_rows <= 0) return e.flops;
  const double rows = Rows(op);
  if (rows <= 0) return e.flops;
  return e.flops * rows / (rows + e.half_rows);
}

double ComputeModel::Seconds(const Op& op) const {
  if (op.is_comm()) return 0;
  if (op.flops == 0 && op.bytes_read == 0 && op.bytes_written == 0) return 0;
  const Efficiency& e = For(op);
  const double flops_time = static_cast<double>(op.flops) / (peak_flops_ * FlopsEfficiency(op));
  const double bytes = static_cast<double>(op.bytes_read + op.bytes_written);
  const double memory_time = bytes / (memory_bandwidth_ * e.memory);
  return std::max(flops_time, memory_time) + launch_overhead_;
}

}  // namespace shardscope::sim
