// ClusterSpec: the devices and networks an experiment runs (or is simulated) on.
// Built from the zoo (configs/hardware/*.yaml) or inline in an experiment; any
// figure may be overridden with a measured one. Plain value type. All figures
// in SI base units: FLOP/s, bytes, bytes/s (one direction), seconds.
#ifndef SHARDSCOPE_CLUSTER_CLUSTER_H_
#define SHARDSCOPE_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/comm_tuning.h"
#include "core/dtype.h"
#include "core/status.h"

namespace shardscope {

enum class DeviceKind { kGpu, kTpu, kCpu };

struct DeviceSpec {
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  DeviceKind kind = DeviceKind::kGpu;
  std::map<DType, double> peak_flops;  // dense (no sparsity) peak per dtype
  // Usable HBM / DRAM capacity: what the runtime reports (nvidia-smi's total,
  // e.g. 81,559 MiB on an H100 80GB), the figure engines size their KV cache
  // from (times gpu_memory_utilization). Memory fits and KV budgets use it.
  double memory_bytes = 0;
  double datasheet_memory_bytes = 0;  // the datasheet's capacity (0: not given), shown beside it
  double memory_bandwidth = 0;        // bytes/s
  double l2_cache_bytes = 0;          // last-level on-chip cache
  double sram_bytes = 0;              // per-SM shared memory / VMEM, total
  double launch_overhead = 0;         // seconds per kernel/op launch
  // FP8 GEMMs' FLOP efficiency of the FP8 peak relative to BF16 GEMMs' of the
  // BF16 peak (measured: cuBLASLt FP8 vs BF16 throughput; 1: the same fraction).
  // Applied to GEMMs whose both operands are FP8 under an experiment's
  // `precision:` roles (config/precision.h).
  double fp8_gemm_efficiency = 1.0;

  // Peak FLOP/s for dtype; falls back to the nearest wider type the device lists
  // (fp8/int8 -> bf16 -> fp16 -> fp32; bf16, fp16 and tf32 -> fp32). Errors, naming
  // the device and the dtype, when neither dtype nor any wider one is listed, or
  // when dtype is not a compute dtype.
  StatusOr<double> PeakFlops(DType dtype) const;
};

// The dtypes DeviceSpec::PeakFlops tries for dtype, in order (dtype first);
// none for the data-plane element types (int32, int64, uint8).
std::vector<DType> PeakFlopsFallback(DType dtype);

enum class ScaleUpKind {
  kNone,      // devices of a node talk through the scale-out network (or PCIe)
  kSwitched,  // NVLink through NVSwitch: every device one hop from every other
  kTorus,     // TPU ICI: a 1-, 2- or 3-D torus (or mesh) of direct links
};

// The fast domain (a node of 8 H100s, a TPU slice).
struct ScaleUpSpec {
  ScaleUpKind kind = ScaleUpKind::kNone;
  int64_t domain_size = 1;          // devices in one domain
  double bandwidth_per_device = 0;  // bytes/s one direction, a device into the domain
  double link_bandwidth = 0;        // torus: bytes/s one direction per link
  std::vector<int64_t> torus_dims;  // torus: e.g. {2, 2, 1}
  bool wraparound = true;           // torus: false = mesh
  double latency = 0;               // seconds per hop

  // Torus: links one chip in the interior of the slice drives (a dimension of size 1
  // adds none, of size 2 one, or two with wraparound, of size >= 3 two). 0 otherwise.
  int64_t TorusLinksPerDevice() const;
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
  // How the collective library uses the links (the YAML's `collectives:`).
  CommTuning collectives;
  // Bytes/s all devices of one node draw from memory together, when they share
  // it (the cores of a CPU host share its DRAM bus); 0: each device has its own
  // memory (GPUs, TPUs). Each of c devices streaming at once gets at most 1/c.
  double node_memory_bandwidth = 0;

  int64_t num_devices() const { return num_nodes * devices_per_node; }
  int64_t num_domains() const { return num_devices() / scale_up.domain_size; }

  // Checks every figure (positive where it must be, torus dims product == domain
  // size, domains tile the devices and nodes). Errors name the cluster and the
  // field by its YAML name, e.g. "field 'scale_up.torus_dims'".
  Status Validate() const;
  // Same, with field names under field_prefix ("cluster" -> "cluster.nodes").
  Status Validate(std::string_view field_prefix) const;

  // Topology queries. Devices are numbered 0..num_devices()-1, node-major
  // (device d sits on node d / devices_per_node); scale-up domains are
  // consecutive blocks of domain_size devices. Out-of-range devices abort.
  int64_t NodeOf(int64_t device) const;
  int64_t DomainOf(int64_t device) const;
  bool SameNode(int64_t a, int64_t b) const;
  // True when a != b talk over the scale-up domain (never for kind none).
  bool SameScaleUpDomain(int64_t a, int64_t b) const;
  // Torus: coordinates of device inside its slice, dimension 0 fastest.
  std::vector<int64_t> TorusCoords(int64_t device) const;
  // Scale-up hops from a to b: 0 for a == b, 1 through a switch, the torus
  // distance (shortest way round with wraparound) in a torus, -1 when the two
  // devices are not in one scale-up domain.
  int64_t ScaleUpHops(int64_t a, int64_t b) const;
  // Bytes/s one direction for a point-to-point transfer from a to b:
  // same domain: switched -> scale_up.bandwidth_per_device, torus ->
  // scale_up.link_bandwidth (one route); otherwise the NIC
  // (scale_out.nic_bandwidth_per_device). a == b: the device memory bandwidth.
  double LinkBandwidthBetween(int64_t a, int64_t b) const;
  // Seconds for a minimal message from a to b: 0 for a == b, hops x
  // scale_up.latency inside a domain, scale_out.latency otherwise.
  double LatencyBetween(int64_t a, int64_t b) const;
};

std::string_view DeviceKindName(DeviceKind kind);    // "gpu", "tpu", "cpu"
std::string_view ScaleUpKindName(ScaleUpKind kind);  // "none", "switched", "torus"
// Accepts the names above; scale-up also "nvswitch" and "nvlink" (switched), "ici" (torus).
StatusOr<DeviceKind> ParseDeviceKind(std::string_view name);
StatusOr<ScaleUpKind> ParseScaleUpKind(std::string_view name);
// Scale-out topologies the network model knows: "rail-optimized-fat-tree",
// "fat-tree", "dcn" (TPU data-centre network), "shared-memory" (ranks on one host).
const std::vector<std::string>& KnownScaleOutTopologies();

}  // namespace shardscope

#endif  // SHARDSCOPE_CLUSTER_CLUSTER_H_
