#include "cluster/cluster.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/enum_names.h"

namespace shardscope {
namespace {

// Errors name the field by its YAML key and show the value in that key's unit,
// so a message points at the line the user wrote.
class Checker {
 public:
  Checker(const ClusterSpec& c, std::string_view prefix) : name_(c.name), prefix_(prefix) {}

  Status Error(std::string_view field, std::string_view problem) const {
    return InvalidArgument("cluster '{}': field '{}{}{}': {}", name_, prefix_,
                           prefix_.empty() ? "" : ".", field, problem);
  }
  // value is in SI units; scale converts it to the YAML key's unit.
  Status Positive(std::string_view field, double value, double scale) const {
    if (value > 0 && std::isfinite(value)) return Status::Ok();
    return Error(field, fmt::format("must be positive, got {}", value / scale));
  }
  Status NonNegative(std::string_view field, double value, double scale) const {
    if (value >= 0 && std::isfinite(value)) return Status::Ok();
    return Error(field, fmt::format("must be zero or positive, got {}", value / scale));
  }

 private:
  std::string name_;
  std::string prefix_;
};

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string out;
  for (int64_t x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return "[" + out + "]";
}

}  // namespace

std::vector<DType> PeakFlopsFallback(DType dtype) {
  switch (dtype) {
    case DType::kFp8:
      return {DType::kFp8, DType::kBf16, DType::kFp16, DType::kFp32};
    case DType::kInt8:
      return {DType::kInt8, DType::kBf16, DType::kFp16, DType::kFp32};
    case DType::kBf16:
      return {DType::kBf16, DType::kFp32};
    case DType::kFp16:
      return {DType::kFp16, DType::kFp32};
    case DType::kTf32:
      return {DType::kTf32, DType::kFp32};
    case DType::kFp32:
      return {DType::kFp32};
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint8:
      return {};  // data-plane element types: nothing computes in them
  }
  return {dtype};
}

StatusOr<double> DeviceSpec::PeakFlops(DType dtype) const {
  if (!IsComputeDType(dtype)) {
    return InvalidArgument("device '{}': {} is not a compute dtype and has no peak FLOP/s", name,
                           DTypeName(dtype));
  }
  for (DType d : PeakFlopsFallback(dtype)) {
    auto it = peak_flops.find(d);
    if (it != peak_flops.end()) return it->second;
  }
  std::string listed;
  for (const auto& [d, flops] : peak_flops)
    listed += (listed.empty() ? "" : ", ") + std::string(DTypeName(d));
  return InvalidArgument(
      "device '{}': no peak FLOP/s for {} or any wider dtype (the device lists: {}); add "
      "device.peak_tflops.{}",
      name, DTypeName(dtype), listed.empty() ? "none" : listed, DTypeName(dtype));
}

int64_t ScaleUpSpec::TorusLinksPerDevice() const {
  if (kind != ScaleUpKind::kTorus) return 0;
  int64_t links = 0;
  for (int64_t size : torus_dims) {
    if (size == 2) links += wraparound ? 2 : 1;
    if (size >= 3) links += 2;
  }
  return links;
}

Status ClusterSpec::Validate() const { return Validate(""); }

Status ClusterSpec::Validate(std::string_view field_prefix) const {
  Checker check(*this, field_prefix);
  if (name.empty()) return check.Error("name", "must not be empty");

  // Device.
  if (device.peak_flops.empty())
    return check.Error("device.peak_tflops", "must list at least one dtype");
  for (const auto& [dtype, flops] : device.peak_flops) {
    RETURN_IF_ERROR(
        check.Positive(fmt::format("device.peak_tflops.{}", DTypeName(dtype)), flops, 1e12));
  }
  RETURN_IF_ERROR(check.Positive("device.memory_gb", device.memory_bytes, 1e9));
  RETURN_IF_ERROR(
      check.NonNegative("device.datasheet_memory_gb", device.datasheet_memory_bytes, 1e9));
  RETURN_IF_ERROR(check.Positive("device.memory_bandwidth_gb_s", device.memory_bandwidth, 1e9));
  RETURN_IF_ERROR(check.NonNegative("device.l2_cache_mb", device.l2_cache_bytes, 1e6));
  RETURN_IF_ERROR(check.NonNegative("device.sram_mb", device.sram_bytes, 1e6));
  RETURN_IF_ERROR(check.NonNegative("device.launch_overhead_us", device.launch_overhead, 1e-6));

  // Shape.
  if (num_nodes < 1)
    return check.Error("nodes", fmt::format("must be at least 1, got {}", num_nodes));
  if (devices_per_node < 1) {
    return check.Error("devices_per_node",
                       fmt::format("must be at least 1, got {}", devices_per_node));
  }

  if (collectives.nvls && scale_up.kind != ScaleUpKind::kSwitched) {
    return check.Error("collectives.nvls",
                       fmt::format("needs scale_up.kind switched (NVSwitch), not {}",
                                   ScaleUpKindName(scale_up.kind)));
  }

  // Scale-up domain.
  const int64_t domain = scale_up.domain_size;
  if (domain < 1)
    return check.Error("scale_up.domain_size", fmt::format("must be at least 1, got {}", domain));
  if (scale_up.kind == ScaleUpKind::kNone && domain != 1) {
    return check.Error("scale_up.domain_size",
                       fmt::format("must be 1 when scale_up.kind is none, got {}", domain));
  }
  if (scale_up.kind == ScaleUpKind::kTorus) {
    if (scale_up.torus_dims.empty())
      return check.Error("scale_up.torus_dims", "is required when scale_up.kind is torus");
    int64_t product = 1;
    for (int64_t d : scale_up.torus_dims) {
      if (d < 1) {
        return check.Error("scale_up.torus_dims",
                           fmt::format("every dimension must be at least 1, got {}",
                                       JoinInts(scale_up.torus_dims)));
      }
      product *= d;
    }
    if (product != domain) {
      return check.Error("scale_up.torus_dims",
                         fmt::format("product of {} is {}, but scale_up.domain_size is {}",
                                     JoinInts(scale_up.torus_dims), product, domain));
    }
    if (domain > 1)
      RETURN_IF_ERROR(check.Positive("scale_up.link_bandwidth_gb_s", scale_up.link_bandwidth, 1e9));
  } else if (!scale_up.torus_dims.empty()) {
    return check.Error(
        "scale_up.torus_dims",
        fmt::format("only applies to scale_up.kind torus, not {}", ScaleUpKindName(scale_up.kind)));
  }
  if (domain > 1)
    RETURN_IF_ERROR(check.Positive("scale_up.bandwidth_gb_s", scale_up.bandwidth_per_device, 1e9));
  RETURN_IF_ERROR(check.NonNegative("scale_up.latency_us", scale_up.latency, 1e-6));
  if (num_devices() % domain != 0) {
    return check.Error("scale_up.domain_size",
                       fmt::format("{} does not divide the {} devices ({} nodes x {})", domain,
                                   num_devices(), num_nodes, devices_per_node));
  }
  if (domain % devices_per_node != 0 && devices_per_node % domain != 0) {
    return check.Error("scale_up.domain_size",
                       fmt::format("{} must be a multiple or a divisor of devices_per_node ({}): "
                                   "a domain spans whole nodes or sits inside one",
                                   domain, devices_per_node));
  }

  // Scale-out network: needed as soon as two devices are in different domains.
  if (num_domains() > 1) {
    RETURN_IF_ERROR(
        check.Positive("scale_out.nic_gbit_s", scale_out.nic_bandwidth_per_device, 1e9 / 8));
  } else {
    RETURN_IF_ERROR(
        check.NonNegative("scale_out.nic_gbit_s", scale_out.nic_bandwidth_per_device, 1e9 / 8));
  }
  RETURN_IF_ERROR(check.NonNegative("scale_out.latency_us", scale_out.latency, 1e-6));
  bool known = false;
  for (const auto& t : KnownScaleOutTopologies()) known = known || t == scale_out.topology;
  if (!known) {
    std::string list;
    for (const auto& t : KnownScaleOutTopologies()) list += (list.empty() ? "" : ", ") + t;
    return check.Error("scale_out.topology",
                       fmt::format("unknown topology '{}' (known: {})", scale_out.topology, list));
  }
  return Status::Ok();
}

int64_t ClusterSpec::NodeOf(int64_t device) const {
  assert(device >= 0 && device < num_devices());
  return device / devices_per_node;
}

int64_t ClusterSpec::DomainOf(int64_t device) const {
  assert(device >= 0 && device < num_devices());
  return device / scale_up.domain_size;
}

bool ClusterSpec::SameNode(int64_t a, int64_t b) const { return NodeOf(a) == NodeOf(b); }

bool ClusterSpec::SameScaleUpDomain(int64_t a, int64_t b) const {
  return a != b && scale_up.kind != ScaleUpKind::kNone && scale_up.domain_size > 1 &&
         DomainOf(a) == DomainOf(b);
}

std::vector<int64_t> ClusterSpec::TorusCoords(int64_t device) const {
  assert(device >= 0 && device < num_devices());
  int64_t local = device % scale_up.domain_size;
  std::vector<int64_t> coords;
  for (int64_t size : scale_up.torus_dims) {
    coords.push_back(local % size);
    local /= size;
  }
  return coords;
}

int64_t ClusterSpec::ScaleUpHops(int64_t a, int64_t b) const {
  if (a == b) return 0;
  if (!SameScaleUpDomain(a, b)) return -1;
  if (scale_up.kind != ScaleUpKind::kTorus) return 1;
  std::vector<int64_t> ca = TorusCoords(a), cb = TorusCoords(b);
  int64_t hops = 0;
  for (size_t i = 0; i < ca.size(); ++i) {
    int64_t d = std::llabs(ca[i] - cb[i]);
    if (scale_up.wraparound) d = std::min(d, scale_up.torus_dims[i] - d);
    hops += d;
  }
  return hops;
}

double ClusterSpec::LinkBandwidthBetween(int64_t a, int64_t b) const {
  if (a == b) return device.memory_bandwidth;
  if (SameScaleUpDomain(a, b)) {
    return scale_up.kind == ScaleUpKind::kTorus ? scale_up.link_bandwidth
                                                : scale_up.bandwidth_per_device;
  }
  return scale_out.nic_bandwidth_per_device;
}

double ClusterSpec::LatencyBetween(int64_t a, int64_t b) const {
  if (a == b) return 0;
  if (SameScaleUpDomain(a, b)) return static_cast<double>(ScaleUpHops(a, b)) * scale_up.latency;
  return scale_out.latency;
}

namespace {

constexpr auto kDeviceKindNames = MakeEnumNames<DeviceKind>(
    {{DeviceKind::kGpu, "gpu"}, {DeviceKind::kTpu, "tpu"}, {DeviceKind::kCpu, "cpu"}});
// The names first, then the aliases the parser accepts.
constexpr auto kScaleUpKindNames = MakeEnumNames<ScaleUpKind>({{ScaleUpKind::kNone, "none"},
                                                               {ScaleUpKind::kSwitched, "switched"},
                                                               {ScaleUpKind::kTorus, "torus"},
                                                               {ScaleUpKind::kSwitched, "nvswitch"},
                                                               {ScaleUpKind::kSwitched, "nvlink"},
                                                               {ScaleUpKind::kTorus, "ici"}});

}  // namespace

std::string_view DeviceKindName(DeviceKind kind) { return kDeviceKindNames.Name(kind); }

std::string_view ScaleUpKindName(ScaleUpKind kind) { return kScaleUpKindNames.Name(kind); }

StatusOr<DeviceKind> ParseDeviceKind(std::string_view name) {
  return kDeviceKindNames.ParseOrError(name, "device kind");
}

StatusOr<ScaleUpKind> ParseScaleUpKind(std::string_view name) {
  if (std::optional<ScaleUpKind> kind = kScaleUpKindNames.Parse(name)) return *kind;
  return InvalidArgument(
      "unknown scale-up kind '{}' (expected none, switched (nvswitch, nvlink) or torus (ici))",
      name);
}

const std::vector<std::string>& KnownScaleOutTopologies() {
  static const std::vector<std::string> kTopologies = {"rail-optimized-fat-tree", "fat-tree", "dcn",
                                                       "shared-memory"};
  return kTopologies;
}

}  // namespace shardscope
