// ClusterSpec: the devices and networks an experiment runs (or is simulated) on.
// Built from the zoo (configs/hardware/*.yaml) or inline in an experiment; any
// figure may be overridden with a measured one. Plain value type. All figures
// in SI base units: FLOP/s, bytes, bytes/s (one direction), seconds.
#ifndef SHARDSCOPE_CLUSTER_CLUSTER_H_
#define SHARDSCOPE_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace shardscope {

enum class DeviceKind { kGpu, kTpu, kCpu };

struct DeviceSpec {
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  DeviceKind kind = DeviceKind::kGpu;
  std::map<DType, double> peak_flops;  // dense (no sparsity) peak per dtype
  double memory_bytes = 0;             // HBM / DRAM capacity
  double memory_bandwidth = 0;         // bytes/s
  double l2_cache_bytes = 0;           // last-level on-chip cache
  double sram_bytes = 0;               // per-SM shared memory / VMEM, total
  double launch_overhead = 0;          // seconds per kernel/op launch

  // Peak FLOP/s for dtype; falls back to the nearest wider type the device lists.
  StatusOr<double> PeakFlops(DType dtype) const;
};

enum class ScaleUpKind {
  kNone,      // devices of a node talk through the scale-out network (or PCIe)
  kSwitched,  // NVLink through NVSwitch: every device one hop from every other
  kTorus,     // TPU ICI: a 1-, 2- or 3-D torus (or mesh) of direct links
};

// The fast domain (a node of 8 H100s, a TPU slice).
struct ScaleUpSpec {
  ScaleUpKind kind = ScaleUpKind::kNone;
  int64_t domain_size = 1;             // devices in one domain
  double bandwidth_per_device = 0;     // bytes/s one direction, a device into the domain
  double link_bandwidth = 0;           // torus: bytes/s one direction per link
  std::vector<int64_t> torus_dims;     // torus: e.g. {2, 2, 1}
  bool wraparound = true;              // torus: false = mesh
  double latency = 0;                  // seconds per hop
};

// The network between scale-up domains (rail-optimised fat tree of NICs).
struct ScaleOutSpec {
  double nic_bandwidth_per_device = 0;  // bytes/s one direction
  double latency = 0;                   // seconds end to end
  std::string topology = "rail-optimized-fat-tree";
};

struct ClusterSpec {
  std::string name;
  DeviceSpec device;
  int64_t num_nodes = 1;
  int64_t devices_per_node = 1;
  ScaleUpSpec scale_up;
  ScaleOutSpec scale_out;

  int64_t num_devices() const { return num_nodes * devices_per_node; }
  Status Validate() const;
};

std::string_view DeviceKindName(DeviceKind kind);
std::string_view ScaleUpKindName(ScaleUpKind kind);

}  // namespace shardscope

#endif  // SHARDSCOPE_CLUSTER_CLUSTER_H_
