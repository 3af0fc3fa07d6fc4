#include "cluster/cluster_yaml.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace shardscope {
namespace {

// Unit conversions from YAML keys to SI base units.
constexpr double kTflops = 1e12;   // peak_tflops -> FLOP/s
constexpr double kGb = 1e9;        // *_gb -> bytes, *_gb_s -> bytes/s
constexpr double kMb = 1e6;        // *_mb -> bytes
constexpr double kGbit = 1e9 / 8;  // *_gbit_s -> bytes/s
constexpr double kUs = 1e-6;       // *_us -> seconds

Status OptionalNonNegative(const YamlMap& map, std::string_view key, double* out) {
  double v = *out;
  RETURN_IF_ERROR(map.Optional(key, &v));
  if (map.Has(key) && !(v >= 0)) {
    return map.context().Child(key).Error(fmt::format("must be zero or positive, got {}", v));
  }
  *out = v;
  return Status::Ok();
}

// Reads `key` in the YAML unit and stores it times `scale` into *out (left alone if absent).
Status ScaledPositive(const YamlMap& map, std::string_view key, double scale, bool required,
                      double* out) {
  if (required && !map.Has(key)) return map.context().Child(key).Error("is required but missing");
  double v = *out / scale;
  RETURN_IF_ERROR(map.OptionalPositive(key, &v));
  if (map.Has(key)) *out = v * scale;
  return Status::Ok();
}

Status ScaledNonNegative(const YamlMap& map, std::string_view key, double scale, double* out) {
  double v = *out / scale;
  RETURN_IF_ERROR(OptionalNonNegative(map, key, &v));
  if (map.Has(key)) *out = v * scale;
  return Status::Ok();
}

Status ReadDevice(const YamlMap& map, const std::string& cluster_name, DeviceSpec* device) {
  RETURN_IF_ERROR(map.CheckKeys({"name", "kind", "peak_tflops", "memory_gb", "datasheet_memory_gb",
                                 "memory_bandwidth_gb_s", "l2_cache_mb", "sram_mb",
                                 "launch_overhead_us", "fp8_gemm_efficiency"}));
  device->name = cluster_name;
  RETURN_IF_ERROR(map.Optional("name", &device->name));
  std::string kind;
  RETURN_IF_ERROR(map.Required("kind", &kind));
  auto parsed_kind = ParseDeviceKind(kind);
  if (!parsed_kind.ok()) return map.context().Child("kind").Error(parsed_kind.status().message());
  device->kind = *parsed_kind;

  if (!map.Has("peak_tflops"))
    return map.context().Child("peak_tflops").Error("is required but missing");
  ASSIGN_OR_RETURN(YamlMap peaks, map.Map("peak_tflops"));
  device->peak_flops.clear();
  for (const auto& kv : peaks.node()) {
    std::string key = kv.first.Scalar();
    YamlContext field = peaks.context().Child(key);
    auto dtype = ParseDType(key);
    if (!dtype.ok()) return field.Error(dtype.status().message());
    ASSIGN_OR_RETURN(double tflops, YamlDouble(kv.second, field));
    if (!(tflops > 0)) return field.Error(fmt::format("must be positive, got {}", tflops));
    device->peak_flops[*dtype] = tflops * kTflops;
  }
  if (device->peak_flops.empty()) return peaks.context().Error("must list at least one dtype");

  // memory_gb: the usable capacity (what the runtime reports); datasheet_memory_gb beside it.
  RETURN_IF_ERROR(ScaledPositive(map, "memory_gb", kGb, true, &device->memory_bytes));
  RETURN_IF_ERROR(
      ScaledNonNegative(map, "datasheet_memory_gb", kGb, &device->datasheet_memory_bytes));
  RETURN_IF_ERROR(
      ScaledPositive(map, "memory_bandwidth_gb_s", kGb, true, &device->memory_bandwidth));
  RETURN_IF_ERROR(ScaledNonNegative(map, "l2_cache_mb", kMb, &device->l2_cache_bytes));
  RETURN_IF_ERROR(ScaledNonNegative(map, "sram_mb", kMb, &device->sram_bytes));
  RETURN_IF_ERROR(ScaledNonNegative(map, "launch_overhead_us", kUs, &device->launch_overhead));
  RETURN_IF_ERROR(map.Optional("fp8_gemm_efficiency", &device->fp8_gemm_efficiency));
  if (!(device->fp8_gemm_efficiency > 0 && device->fp8_gemm_efficiency <= 1)) {
    return map.context()
        .Child("fp8_gemm_efficiency")
        .Error(fmt::format("must be in (0, 1], got {}", device->fp8_gemm_efficiency));
  }
  return Status::Ok();
}

Status ReadScaleUp(const YamlMap& map, int64_t devices_per_node, ScaleUpSpec* up) {
  RETURN_IF_ERROR(map.CheckKeys({"kind", "domain_size", "bandwidth_gb_s", "link_bandwidth_gb_s",
                                 "torus_dims", "wraparound", "latency_us"}));
  std::string kind = "none";
  RETURN_IF_ERROR(map.Optional("kind", &kind));
  auto parsed_kind = ParseScaleUpKind(kind);
  if (!parsed_kind.ok()) return map.context().Child("kind").Error(parsed_kind.status().message());
  up->kind = *parsed_kind;

  RETURN_IF_ERROR(map.Optional("torus_dims", &up->torus_dims));
  RETURN_IF_ERROR(map.Optional("wraparound", &up->wraparound));
  for (size_t i = 0; i < up->torus_dims.size(); ++i) {
    if (up->torus_dims[i] < 1) {
      return map.context()
          .Child("torus_dims")
          .Index(i)
          .Error(fmt::format("must be at least 1, got {}", up->torus_dims[i]));
    }
  }

  // Domain size: explicit, else the torus' chip count, else one node.
  switch (up->kind) {
    case ScaleUpKind::kNone:
      up->domain_size = 1;
      break;
    case ScaleUpKind::kSwitched:
      up->domain_size = devices_per_node;
      break;
    case ScaleUpKind::kTorus:
      up->domain_size = 1;
      for (int64_t d : up->torus_dims) up->domain_size *= d;
      break;
  }
  RETURN_IF_ERROR(map.OptionalAtLeast("domain_size", 1, &up->domain_size));

  RETURN_IF_ERROR(ScaledPositive(map, "link_bandwidth_gb_s", kGb, false, &up->link_bandwidth));
  if (up->kind == ScaleUpKind::kTorus) {
    up->bandwidth_per_device = up->link_bandwidth * static_cast<double>(up->TorusLinksPerDevice());
  }
  RETURN_IF_ERROR(ScaledPositive(map, "bandwidth_gb_s", kGb, false, &up->bandwidth_per_device));
  RETURN_IF_ERROR(ScaledNonNegative(map, "latency_us", kUs, &up->latency));
  return Status::Ok();
}

Status ReadScaleOut(const YamlMap& map, ScaleOutSpec* out) {
  RETURN_IF_ERROR(map.CheckKeys({"nic_gbit_s", "latency_us", "topology"}));
  RETURN_IF_ERROR(ScaledPositive(map, "nic_gbit_s", kGbit, false, &out->nic_bandwidth_per_device));
  RETURN_IF_ERROR(ScaledNonNegative(map, "latency_us", kUs, &out->latency));
  RETURN_IF_ERROR(map.Optional("topology", &out->topology));
  return Status::Ok();
}

// Shortest text that reads back as the same double ("989.4", not "989.39999999999998").
std::string Num(double v) { return fmt::format("{}", v); }

// A fraction of a link's bandwidth, in (0, 1].
Status Fraction(const YamlMap& map, std::string_view key, double* out) {
  RETURN_IF_ERROR(map.Optional(key, out));
  if (map.Has(key) && !(*out > 0 && *out <= 1)) {
    return map.context().Child(key).Error(fmt::format("must be in (0, 1], got {}", *out));
  }
  return Status::Ok();
}

Status ReadProtocol(const YamlMap& map, ProtocolCost* p) {
  RETURN_IF_ERROR(
      map.CheckKeys({"ring_base_latency_us", "tree_base_latency_us", "scale_up_step_us",
                     "scale_out_step_us", "scale_up_efficiency", "scale_out_efficiency"}));
  RETURN_IF_ERROR(ScaledNonNegative(map, "ring_base_latency_us", kUs, &p->ring_base_latency));
  RETURN_IF_ERROR(ScaledNonNegative(map, "tree_base_latency_us", kUs, &p->tree_base_latency));
  RETURN_IF_ERROR(ScaledNonNegative(map, "scale_up_step_us", kUs, &p->scale_up_step));
  RETURN_IF_ERROR(ScaledNonNegative(map, "scale_out_step_us", kUs, &p->scale_out_step));
  RETURN_IF_ERROR(Fraction(map, "scale_up_efficiency", &p->scale_up_efficiency));
  RETURN_IF_ERROR(Fraction(map, "scale_out_efficiency", &p->scale_out_efficiency));
  return Status::Ok();
}

Status ReadExchangeKernel(const YamlMap& map, ExchangeKernelCost* k) {
  RETURN_IF_ERROR(
      map.CheckKeys({"latency_us", "scale_up_efficiency", "scale_out_efficiency", "sm_share"}));
  RETURN_IF_ERROR(ScaledNonNegative(map, "latency_us", kUs, &k->latency));
  RETURN_IF_ERROR(Fraction(map, "scale_up_efficiency", &k->scale_up_efficiency));
  RETURN_IF_ERROR(Fraction(map, "scale_out_efficiency", &k->scale_out_efficiency));
  RETURN_IF_ERROR(OptionalNonNegative(map, "sm_share", &k->sm_share));
  if (k->sm_share >= 1) {
    return map.context()
        .Child("sm_share")
        .Error(fmt::format("must be at least 0 and below 1 (a fraction of the SMs), got {}",
                           k->sm_share));
  }
  return Status::Ok();
}

YAML::Node ExchangeKernelYaml(const ExchangeKernelCost& k) {
  YAML::Node n;
  n["latency_us"] = Num(k.latency / kUs);
  n["scale_up_efficiency"] = Num(k.scale_up_efficiency);
  n["scale_out_efficiency"] = Num(k.scale_out_efficiency);
  if (k.sm_share > 0) n["sm_share"] = Num(k.sm_share);
  return n;
}

// Reads a `collectives:` block.
StatusOr<CommTuning> CommTuningFromYaml(const YamlMap& map) {
  RETURN_IF_ERROR(
      map.CheckKeys({"ll", "ll128", "simple", "nvls", "nvls_base_latency_us", "nvls_efficiency",
                     "nvls_tree_step_us", "p2p_latency_us", "pipeline_fill_mb", "all_to_all"}));
  CommTuning t;
  t.modelled = true;
  for (CommProtocol p : {CommProtocol::kLL, CommProtocol::kLL128, CommProtocol::kSimple}) {
    const std::string_view name = CommProtocolName(p);
    if (!map.Has(name)) return map.context().Child(name).Error("is required but missing");
    ASSIGN_OR_RETURN(YamlMap sub, map.Map(name));
    RETURN_IF_ERROR(ReadProtocol(sub, &t.protocols[static_cast<int>(p)]));
  }
  RETURN_IF_ERROR(map.Optional("nvls", &t.nvls));
  RETURN_IF_ERROR(ScaledNonNegative(map, "nvls_base_latency_us", kUs, &t.nvls_base_latency));
  RETURN_IF_ERROR(Fraction(map, "nvls_efficiency", &t.nvls_efficiency));
  RETURN_IF_ERROR(ScaledNonNegative(map, "nvls_tree_step_us", kUs, &t.nvls_tree_step));
  RETURN_IF_ERROR(ScaledNonNegative(map, "p2p_latency_us", kUs, &t.p2p_latency));
  RETURN_IF_ERROR(ScaledNonNegative(map, "pipeline_fill_mb", kMb, &t.pipeline_fill_bytes));
  ASSIGN_OR_RETURN(YamlMap a2a, map.Map("all_to_all"));
  RETURN_IF_ERROR(a2a.CheckKeys({"normal", "low_latency"}));
  ASSIGN_OR_RETURN(YamlMap normal, a2a.Map("normal"));
  RETURN_IF_ERROR(ReadExchangeKernel(normal, &t.normal));
  ASSIGN_OR_RETURN(YamlMap low_latency, a2a.Map("low_latency"));
  RETURN_IF_ERROR(ReadExchangeKernel(low_latency, &t.low_latency));
  return t;
}

// The block as YAML; only for a tuned cluster.
YAML::Node CommTuningToYaml(const CommTuning& t) {
  YAML::Node root;
  for (CommProtocol p : {CommProtocol::kLL, CommProtocol::kLL128, CommProtocol::kSimple}) {
    const ProtocolCost& c = t.Of(p);
    YAML::Node n;
    n["ring_base_latency_us"] = Num(c.ring_base_latency / kUs);
    n["tree_base_latency_us"] = Num(c.tree_base_latency / kUs);
    n["scale_up_step_us"] = Num(c.scale_up_step / kUs);
    n["scale_out_step_us"] = Num(c.scale_out_step / kUs);
    n["scale_up_efficiency"] = Num(c.scale_up_efficiency);
    n["scale_out_efficiency"] = Num(c.scale_out_efficiency);
    root[std::string(CommProtocolName(p))] = n;
  }
  root["nvls"] = t.nvls;
  root["nvls_base_latency_us"] = Num(t.nvls_base_latency / kUs);
  root["nvls_efficiency"] = Num(t.nvls_efficiency);
  root["nvls_tree_step_us"] = Num(t.nvls_tree_step / kUs);
  root["p2p_latency_us"] = Num(t.p2p_latency / kUs);
  root["pipeline_fill_mb"] = Num(t.pipeline_fill_bytes / kMb);
  YAML::Node a2a;
  a2a["normal"] = ExchangeKernelYaml(t.normal);
  a2a["low_latency"] = ExchangeKernelYaml(t.low_latency);
  root["all_to_all"] = a2a;
  return root;
}

}  // namespace

StatusOr<ClusterSpec> ClusterFromYaml(const YAML::Node& node, const YamlContext& ctx) {
  ASSIGN_OR_RETURN(YamlMap top, YamlMap::From(node, ctx));
  RETURN_IF_ERROR(top.CheckKeys({"name", "device", "nodes", "devices_per_node", "scale_up",
                                 "scale_out", "node_memory_bandwidth_gb_s", "collectives"}));
  ClusterSpec c;
  RETURN_IF_ERROR(top.Required("name", &c.name));
  if (!top.Has("device")) return ctx.Child("device").Error("is required but missing");
  ASSIGN_OR_RETURN(YamlMap device, top.Map("device"));
  RETURN_IF_ERROR(ReadDevice(device, c.name, &c.device));
  RETURN_IF_ERROR(top.OptionalAtLeast("nodes", 1, &c.num_nodes));
  RETURN_IF_ERROR(top.OptionalAtLeast("devices_per_node", 1, &c.devices_per_node));
  RETURN_IF_ERROR(
      ScaledPositive(top, "node_memory_bandwidth_gb_s", kGb, false, &c.node_memory_bandwidth));
  ASSIGN_OR_RETURN(YamlMap scale_up, top.Map("scale_up"));
  RETURN_IF_ERROR(ReadScaleUp(scale_up, c.devices_per_node, &c.scale_up));
  ASSIGN_OR_RETURN(YamlMap scale_out, top.Map("scale_out"));
  RETURN_IF_ERROR(ReadScaleOut(scale_out, &c.scale_out));
  if (top.Has("collectives")) {
    ASSIGN_OR_RETURN(YamlMap collectives, top.Map("collectives"));
    ASSIGN_OR_RETURN(c.collectives, CommTuningFromYaml(collectives));
  }

  Status valid = c.Validate(ctx.path);
  if (!valid.ok()) {
    std::string where = YamlContext{ctx.file, ctx.experiment, ""}.Where();
    return where.empty() ? valid : valid.WithPrefix(where);
  }
  return c;
}

StatusOr<ClusterSpec> LoadClusterFile(const std::string& path) {
  ASSIGN_OR_RETURN(YAML::Node node, LoadYamlFile(path));
  return ClusterFromYaml(node, YamlContext{path, "", ""});
}

YAML::Node ClusterToYaml(const ClusterSpec& c) {
  YAML::Node root;
  root["name"] = c.name;
  YAML::Node device;
  device["name"] = c.device.name;
  device["kind"] = std::string(DeviceKindName(c.device.kind));
  YAML::Node peaks;
  for (const auto& [dtype, flops] : c.device.peak_flops)
    peaks[std::string(DTypeName(dtype))] = Num(flops / kTflops);
  device["peak_tflops"] = peaks;
  device["memory_gb"] = Num(c.device.memory_bytes / kGb);
  if (c.device.datasheet_memory_bytes > 0)
    device["datasheet_memory_gb"] = Num(c.device.datasheet_memory_bytes / kGb);
  device["memory_bandwidth_gb_s"] = Num(c.device.memory_bandwidth / kGb);
  device["l2_cache_mb"] = Num(c.device.l2_cache_bytes / kMb);
  device["sram_mb"] = Num(c.device.sram_bytes / kMb);
  device["launch_overhead_us"] = Num(c.device.launch_overhead / kUs);
  if (c.device.fp8_gemm_efficiency != 1.0) {
    device["fp8_gemm_efficiency"] = Num(c.device.fp8_gemm_efficiency);
  }
  root["device"] = device;
  root["nodes"] = c.num_nodes;
  root["devices_per_node"] = c.devices_per_node;
  if (c.node_memory_bandwidth > 0) {
    root["node_memory_bandwidth_gb_s"] = Num(c.node_memory_bandwidth / kGb);
  }

  YAML::Node up;
  up["kind"] = std::string(ScaleUpKindName(c.scale_up.kind));
  up["domain_size"] = c.scale_up.domain_size;
  if (c.scale_up.bandwidth_per_device > 0)
    up["bandwidth_gb_s"] = Num(c.scale_up.bandwidth_per_device / kGb);
  if (c.scale_up.kind == ScaleUpKind::kTorus) {
    if (c.scale_up.link_bandwidth > 0)
      up["link_bandwidth_gb_s"] = Num(c.scale_up.link_bandwidth / kGb);
    YAML::Node dims(YAML::NodeType::Sequence);
    for (int64_t d : c.scale_up.torus_dims) dims.push_back(d);
    dims.SetStyle(YAML::EmitterStyle::Flow);
    up["torus_dims"] = dims;
    up["wraparound"] = c.scale_up.wraparound;
  }
  up["latency_us"] = Num(c.scale_up.latency / kUs);
  root["scale_up"] = up;

  YAML::Node out;
  if (c.scale_out.nic_bandwidth_per_device > 0)
    out["nic_gbit_s"] = Num(c.scale_out.nic_bandwidth_per_device / kGbit);
  out["latency_us"] = Num(c.scale_out.latency / kUs);
  out["topology"] = c.scale_out.topology;
  root["scale_out"] = out;
  if (c.collectives.modelled) root["collectives"] = CommTuningToYaml(c.collectives);
  return root;
}

std::string DefaultHardwareDir() {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware";
}

std::vector<std::string> ListZooClusters(const std::string& hardware_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(hardware_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".yaml" && it->is_regular_file(ec)) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::string> ZooClusterPath(const std::string& name, const std::string& hardware_dir) {
  std::string path = hardware_dir + "/" + name + ".yaml";
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  std::string list;
  for (const auto& n : ListZooClusters(hardware_dir)) list += (list.empty() ? "" : ", ") + n;
  return NotFound("unknown cluster '{}': no {} (the zoo in {} has: {})", name, path, hardware_dir,
                  list.empty() ? "nothing" : list);
}

StatusOr<ClusterSpec> LoadZooCluster(const std::string& name, const std::string& hardware_dir) {
  ASSIGN_OR_RETURN(std::string path, ZooClusterPath(name, hardware_dir));
  return LoadClusterFile(path);
}

StatusOr<ClusterSpec> LoadClusterArg(const std::string& name_or_file) {
  std::error_code ec;
  if (std::filesystem::exists(name_or_file, ec)) return LoadClusterFile(name_or_file);
  return LoadZooCluster(name_or_file, DefaultHardwareDir());
}

}  // namespace shardscope
