#include "sim/compute_model.h"

#include <algorithm>

#include "plan/memory.h"
#include "plan/placement.h"

namespace shardscope::sim {

int64_t ConcurrentDevicesPerNode(int64_t world, int64_t devices_per_node, int64_t pp,
                                 int64_t micro_batches, int64_t requests_per_replica) {
  const int64_t on_node = std::max<int64_t>(1, std::min(world, devices_per_node));
  if (pp <= 1) return on_node;
  const int64_t micro = std::min(micro_batches > 0 ? micro_batches : pp, requests_per_replica);
  const int64_t busy_stages = std::clamp<int64_t>(micro, 1, pp);
  return std::max<int64_t>(1, (on_node * busy_stages + pp - 1) / pp);
}

int64_t ConcurrentDevicesPerNode(const Experiment& e) {
  const ParallelSpec& p = e.parallel;
  const int64_t replicas = std::max<int64_t>(1, p.dp * p.ep);
  return ConcurrentDevicesPerNode(p.world_size(), e.cluster.devices_per_node, p.pp, p.micro_batches,
                                  (e.workload.batch_size + replicas - 1) / replicas);
}

double SharedBandwidthPerDevice(const ClusterSpec& cluster, int64_t concurrent) {
  if (!(cluster.node_memory_bandwidth > 0) || concurrent < 1) return 0;
  return cluster.node_memory_bandwidth / static_cast<double>(concurrent);
}

ClusterSpec NodeBandwidthCluster(ClusterSpec cluster, const Calibration& calibration) {
  if (calibration.node_memory_bandwidth > 0) {
    cluster.node_memory_bandwidth = calibration.node_memory_bandwidth;
  }
  return cluster;
}

bool CacheResident(const Experiment& experiment) {
  const double cache = experiment.cluster.device.l2_cache_bytes;
  if (!(cache > 0)) return false;
  StatusOr<Placement> placement = Placement::Create(experiment);
  if (!placement.ok()) return false;
  const MemoryPlan plan = PlanMemory(experiment, *placement);
  for (const RankMemory& r : plan.ranks) {
    if (r.weights + r.kv_cache > cache) return false;
  }
  return !plan.ranks.empty();
}

StatusOr<ComputeModel> ComputeModel::Create(const DeviceSpec& device, DType dtype,
                                            const Calibration& calibration, double shared_bandwidth,
                                            std::optional<DType> head_dtype, bool cache_resident) {
  ASSIGN_OR_RETURN(double peak, device.PeakFlops(dtype));
  const DType head = head_dtype.value_or(dtype);
  ASSIGN_OR_RETURN(double head_peak, device.PeakFlops(head));
  RETURN_IF_ERROR(calibration.Validate());
  if (!(peak > 0) || !(device.memory_bandwidth > 0)) {
    return InvalidArgument("device '{}' needs a positive peak and memory bandwidth", device.name);
  }
  const double launch =
      calibration.launch_overhead >= 0 ? calibration.launch_overhead : device.launch_overhead;
  ComputeModel model(peak, head_peak, dtype == DType::kFp8, head == DType::kFp8,
                     device.memory_bandwidth, launch, std::max(0.0, shared_bandwidth),
                     cache_resident ? calibration.cache_bandwidth : 0, device.launch_overhead,
                     calibration);
  model.SetPeaks(nullptr, peak, peak);
  return model;
}

StatusOr<ComputeModel> ComputeModel::Create(const DeviceSpec& device, const Precision& precision,
                                            const Calibration& calibration, double shared_bandwidth,
                                            bool cache_resident) {
  if (!precision.roles) {
    return Create(device, precision.gemm_inputs, calibration, shared_bandwidth, precision.lm_head,
                  cache_resident);
  }
  ASSIGN_OR_RETURN(ComputeModel model, Create(device, precision.activations, calibration,
                                              shared_bandwidth, precision.lm_head, cache_resident));
  const DType gemm = precision.GemmDType();
  ASSIGN_OR_RETURN(double gemm_peak, device.PeakFlops(gemm));
  // Block-scaled FP8 GEMMs run on their own measured curve of the FP8 peak.
  const bool block = gemm == DType::kFp8 && precision.weight_scales.kind == ScaleKind::kBlock &&
                     calibration.fp8_block_gemm.has_value();
  if (block) {
    const BlockScaledGemm& b = *calibration.fp8_block_gemm;
    model.block_fp8_ = true;
    const Efficiency& gemm_class = calibration.classes.at(OpClass::kGemm);
    model.block_ = Efficiency{b.flops, b.memory, b.half_rows, gemm_class.launch};
    model.block_.replay = gemm_class.replay;
    model.block_half_k_ = b.half_k;
  } else if (gemm == DType::kFp8) {
    gemm_peak *= device.fp8_gemm_efficiency;
  }
  // The Program carries the quantisation (kQuantize ops): no pass folded into GEMMs.
  model.fp8_ = model.head_fp8_ = false;
  model.roles_ = true;
  if (precision.QuantReadPasses() == 2) model.quant_fixed_ = calibration.terms.fp8_quant_fixed;
  model.SetPeaks(&precision, gemm_peak, model.peak_flops_);
  return model;
}

void ComputeModel::SetPeaks(const Precision* roles, double gemm_peak, double act_peak) {
  auto peak = [&](OpKind kind, OpRole role) {
    if (kind == OpKind::kLmHead) return head_peak_flops_;
    if (roles == nullptr) return peak_flops_;
    const bool layer_gemm = ClassOf(kind) == OpClass::kGemm && kind != OpKind::kRouter &&
                            role != OpRole::kAbsorbUk && role != OpRole::kAbsorbUv;
    return layer_gemm ? gemm_peak : act_peak;
  };
  for (int k = 0; k < kNumKinds; ++k) {
    kind_peak_[k] = peak(static_cast<OpKind>(k), OpRole::kNone);
  }
  for (size_t r = 0; r < role_peak_.size(); ++r) {
    const auto role = static_cast<OpRole>(r);
    const OpKind kind = RoleKind(role);
    role_peak_[r] = peak(kind, role);
    block_role_[r] = block_fp8_ && roles != nullptr && kind != OpKind::kLmHead &&
                     ClassOf(kind) == OpClass::kGemm && kind != OpKind::kRouter &&
                     role != OpRole::kAbsorbUk && role != OpRole::kAbsorbUv;
  }
}

ComputeModel ComputeModel::WithoutLaunch() const {
  ComputeModel m = *this;
  m.launch_overhead_ = 0;
  m.no_launch_ = true;
  return m;
}

ComputeModel ComputeModel::WithoutFixedCosts() const {
  ComputeModel m = WithoutLaunch();
  m.no_fixed_ = true;
  m.quant_fixed_ = 0;
  return m;
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

double ComputeModel::FlopsEfficiency(const Op& op) const {
  const double rows = Rows(op);
  return BlockScaled(op) ? BlockEfficiency(op, rows) : FlopsEfficiency(For(op.kind, rows), rows);
}

double ComputeModel::QuantSeconds(const Op& op) const {
  const double per_element = calibration_.terms.fp8_quant_bytes_per_element;
  if (per_element <= 0 || ClassOf(op.kind) != OpClass::kGemm || op.kind == OpKind::kRouter) {
    return 0;
  }
  if (!(op.kind == OpKind::kLmHead ? head_fp8_ : fp8_)) return 0;
  // A pass over the m × k input activations (amax, scale, cast) at the
  // elementwise rate, plus its fixed cost (one elementwise launch if not fitted).
  const Efficiency& elementwise = calibration_.classes.at(OpClass::kElementwise);
  const double elements = static_cast<double>(op.m) * static_cast<double>(op.k);
  const double fixed = no_fixed_                                ? 0
                       : calibration_.terms.fp8_quant_fixed > 0 ? calibration_.terms.fp8_quant_fixed
                                                                : Launch(elementwise);
  return elements > 0 ? elements * per_element / MemoryRate(elementwise) + fixed : 0;
}

double ComputeModel::Seconds(const Op& op) const {
  if (op.is_comm()) return 0;
  if (op.flops == 0 && op.bytes_read == 0 && op.bytes_written == 0) return 0;
  const double rows = Rows(op);  // once: it walks the op's expert counts
  const bool block = BlockScaled(op);
  const Efficiency& e = block ? block_ : For(op.kind, rows);
  const double peak = PeakFor(op);
  // From cache, only a kernel that packs its operands anyway pays the row ramp
  // (Efficiency::cache_ramp): the others' few rows were slow for want of bandwidth.
  const double efficiency = block ? BlockEfficiency(op, rows) : FlopsEfficiency(e, rows);
  const double flops_time = static_cast<double>(op.flops) / (peak * efficiency);
  const double bytes = static_cast<double>(op.bytes_read + op.bytes_written);
  const double memory_time = bytes / MemoryRate(e);
  // A dynamic per-tensor quantisation op pays the measured per-pass cost (a
  // memset, the amax and the cast kernels) where the calibration has it.
  const double fixed = op.kind == OpKind::kQuantize && quant_fixed_ > 0 ? quant_fixed_ : Launch(e);
  double t = std::max(flops_time, memory_time) + fixed + QuantSeconds(op);
  // Launched asynchronously, the host's issue interval shows only under
  // shorter kernels; replayed from a graph (WithoutLaunch) not at all.
  if (host_launch_ > 0 && !no_launch_) t = std::max(t, host_launch_);
  return std::max(t, calibration_.terms.min_kernel);
}

double ComputeModel::Seconds(const Op& op, double scale) const {
  const double t = Seconds(op);
  if (scale >= 1 || t == 0) return t * scale;
  const double peak = PeakFor(op);
  const double bandwidth = std::max(memory_bandwidth_, cache_bandwidth_);
  const double floor = std::max(static_cast<double>(op.flops) / peak,
                                static_cast<double>(op.bytes_read + op.bytes_written) / bandwidth);
  // (A class's own cache rate may pass the device figures: never above t.)
  return std::max(t * scale, std::min(t, std::max(floor, calibration_.terms.min_kernel)));
}

}  // namespace shardscope::sim
