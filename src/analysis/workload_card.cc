#include "analysis/workload_card.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "cluster/cluster_yaml.h"
#include "config/experiment_json.h"
#include "core/dtype.h"
#include "core/yaml_reader.h"

namespace shardscope::analysis {
namespace {

using nlohmann::json;

// Lower-case letters and digits only: "NVIDIA_A100-SXM4" -> "nvidiaa100sxm4".
std::string Squash(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return out;
}

// Sets j[key] to an optional integer of `map` (>= min) when the card has it.
Status CopyInt(const YamlMap& map, std::string_view key, int64_t min, json* j,
               const std::string& out_key) {
  if (!map.Has(key)) return Status::Ok();
  int64_t v = 0;
  RETURN_IF_ERROR(map.OptionalAtLeast(key, min, &v));
  (*j)[out_key] = v;
  return Status::Ok();
}

// workload.model: name, architecture figures, dtype. The architecture sits under
// model_arch in the template and directly under model in some cards; both are read.
Status ReadModel(const YamlMap& model, json* meta) {
  json& m = (*meta)["model"];
  m = json::object();
  std::string family;
  RETURN_IF_ERROR(model.Optional("model_family", &family));
  if (!family.empty()) m["name"] = family;
  if (model.Has("moe")) {
    bool moe = false;
    RETURN_IF_ERROR(model.Optional("moe", &moe));
    m["moe"] = moe;
  }
  ASSIGN_OR_RETURN(YamlMap arch, model.Map("model_arch"));
  const YamlMap* sources[] = {&model, &arch};  // arch second: model_arch wins
  for (const YamlMap* source : sources) {
    RETURN_IF_ERROR(CopyInt(*source, "num_params", 1, &m, "num_params"));
    RETURN_IF_ERROR(CopyInt(*source, "num_params_embedding", 0, &m, "num_params_embedding"));
    RETURN_IF_ERROR(CopyInt(*source, "num_layers", 1, &m, "num_layers"));
    RETURN_IF_ERROR(CopyInt(*source, "num_heads", 1, &m, "num_heads"));
    RETURN_IF_ERROR(CopyInt(*source, "num_kv_heads", 1, &m, "num_kv_heads"));
    RETURN_IF_ERROR(CopyInt(*source, "head_dim", 1, &m, "head_dim"));
  }
  std::string precision;
  RETURN_IF_ERROR(model.Optional("precision", &precision));
  if (!precision.empty()) {
    std::string lower = precision;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    StatusOr<DType> dtype = ParseDType(lower);
    if (!dtype.ok()) return model.context().Child("precision").Error(dtype.status().message());
    (*meta)["workload"]["dtype"] = std::string(DTypeName(*dtype));
  }
  return Status::Ok();
}

// workload.data: batch size, prompt length (input_len, else seq_len), tokens to generate.
Status ReadData(const YamlMap& data, json* meta) {
  json& w = (*meta)["workload"];
  RETURN_IF_ERROR(CopyInt(data, "batch_size", 1, &w, "batch_size"));
  RETURN_IF_ERROR(CopyInt(data, "seq_len", 1, &w, "sequence_length"));
  RETURN_IF_ERROR(CopyInt(data, "input_len", 1, &w, "sequence_length"));
  RETURN_IF_ERROR(CopyInt(data, "output_len", 1, &w, "tokens_to_generate"));
  return Status::Ok();
}

// workload.hardware: the zoo cluster its model names, with the card's own figures over it.
Status ReadHardware(const YamlMap& hw, const std::string& hardware_dir, json* meta) {
  ASSIGN_OR_RETURN(YamlMap xpu, hw.Map("xpu_spec"));
  ASSIGN_OR_RETURN(YamlMap topo, hw.Map("network_topo"));
  std::string model;
  RETURN_IF_ERROR(xpu.Optional("model", &model));
  json& card = (*meta)["workload_card"];
  card["hardware_model"] = model.empty() ? json(nullptr) : json(model);
  json cluster = json::object();
  const std::string zoo = model.empty() ? "" : ZooNameForCardHardware(model);
  card["hardware_zoo"] = zoo.empty() ? json(nullptr) : json(zoo);
  if (!zoo.empty()) {
    StatusOr<ClusterSpec> spec = LoadZooCluster(zoo, hardware_dir);
    if (!spec.ok()) {
      return xpu.context().Child("model").Error(
          fmt::format("'{}' is zoo cluster '{}', which does not load: {}", model, zoo,
                      spec.status().message()));
    }
    cluster = ClusterToJson(*spec);
  } else if (!model.empty()) {
    cluster["device"]["name"] = model;
  }
  int64_t per_node = 0, total = 0;
  RETURN_IF_ERROR(xpu.OptionalAtLeast("count_per_node", 1, &per_node));
  RETURN_IF_ERROR(xpu.OptionalAtLeast("total_count", 1, &total));
  if (per_node > 0) {
    cluster["devices_per_node"] = per_node;
    // A node's GPUs share one NVLink/NVSwitch domain; a TPU slice's torus spans hosts.
    if (!cluster.contains("scale_up") || cluster["scale_up"].value("kind", "") != "torus") {
      cluster["scale_up"]["domain_size"] = per_node;
    }
    if (total > 0) cluster["num_nodes"] = (total + per_node - 1) / per_node;
  }
  if (total > 0) (*meta)["parallelism"]["world_size"] = total;
  double memory_gb = 0;
  RETURN_IF_ERROR(xpu.OptionalPositive("memory_gb", &memory_gb));
  if (memory_gb > 0) cluster["device"]["memory_bytes"] = memory_gb * 1e9;
  // bandwidth_gbps: Gbit/s per device and direction. The template lists scale-out, then
  // scale-up; cards in the wild swap them, and scale-up is always the faster, so with two
  // figures the larger is scale-up. One figure is scale-out.
  std::vector<double> gbps;
  RETURN_IF_ERROR(topo.Optional("bandwidth_gbps", &gbps));
  const YamlContext bw_ctx = topo.context().Child("bandwidth_gbps");
  if (gbps.size() > 2) {
    return bw_ctx.Error(
        fmt::format("expected one or two figures (scale-out, scale-up), got {}", gbps.size()));
  }
  for (double g : gbps) {
    if (!(g > 0)) return bw_ctx.Error(fmt::format("must be positive, got {}", g));
  }
  if (!gbps.empty()) {
    std::sort(gbps.begin(), gbps.end());
    cluster["scale_out"]["nic_bandwidth_per_device"] = gbps.front() * 1e9 / 8;
    if (gbps.size() == 2) cluster["scale_up"]["bandwidth_per_device"] = gbps.back() * 1e9 / 8;
  }
  if (!cluster.empty()) (*meta)["cluster"] = cluster;
  return Status::Ok();
}

// Model-executor: the parallel plan and the software that ran it.
Status ReadExecutor(const YamlMap& exec, json* meta) {
  ASSIGN_OR_RETURN(YamlMap plan, exec.Map("model_plan_parallelization"));
  json& p = (*meta)["parallelism"];
  RETURN_IF_ERROR(CopyInt(plan, "tp", 1, &p, "tp_size"));
  RETURN_IF_ERROR(CopyInt(plan, "pp", 1, &p, "pp_size"));
  RETURN_IF_ERROR(CopyInt(plan, "ep", 1, &p, "ep_size"));
  RETURN_IF_ERROR(CopyInt(plan, "cp", 1, &p, "seq_parallel_size"));
  int64_t dp = 0, replicate = 1, shard = 1;
  RETURN_IF_ERROR(plan.OptionalAtLeast("dp", 1, &dp));
  RETURN_IF_ERROR(plan.OptionalAtLeast("dp_replicate", 1, &replicate));
  RETURN_IF_ERROR(plan.OptionalAtLeast("dp_shard", 1, &shard));
  if (dp > 0) {
    p["dp_size"] = dp;
  } else if (plan.Has("dp_replicate") || plan.Has("dp_shard")) {
    p["dp_size"] = replicate * shard;
  }
  json& card = (*meta)["workload_card"];
  for (const char* section : {"framework", "communication_library"}) {
    ASSIGN_OR_RETURN(YamlMap m, exec.Map(section));
    std::string name, version;
    RETURN_IF_ERROR(m.Optional("name", &name));
    if (m.Has("version")) version = m.Get("version").Scalar();  // "0.19.0" or 2.4 alike
    if (!name.empty()) card[section] = version.empty() ? name : name + " " + version;
  }
  return Status::Ok();
}

void FillMissing(json* dst, const json& src) {
  for (const auto& [key, value] : src.items()) {
    auto it = dst->find(key);
    if (it == dst->end() || it->is_null()) {
      (*dst)[key] = value;
    } else if (it->is_object() && value.is_object()) {
      FillMissing(&*it, value);
    }
  }
}

bool HasRunField(const json& metadata, const char* key) {
  for (const json* base :
       {&metadata, metadata.contains("experiment") ? &metadata["experiment"] : nullptr}) {
    if (base == nullptr || !base->is_object()) continue;
    auto run = base->find("run");
    if (run != base->end() && run->is_object() && run->contains(key)) return true;
  }
  return false;
}

}  // namespace

std::string ZooNameForCardHardware(const std::string& model) {
  const std::string s = Squash(model);
  struct Match {
    const char* needle;
    const char* zoo;
  };
  static constexpr Match kMatches[] = {
      {"a100", "a100-sxm"},  {"h100", "h100-sxm"},     {"h200", "h200"},
      {"tpuv4", "tpu-v4"},   {"tpuv5e", "tpu-v5e"},    {"tpuv5lite", "tpu-v5e"},
      {"tpuv6e", "tpu-v6e"}, {"tpuv6lite", "tpu-v6e"}, {"trillium", "tpu-v6e"},
  };
  for (const Match& m : kMatches) {
    if (s.find(m.needle) != std::string::npos) return m.zoo;
  }
  return "";
}

StatusOr<nlohmann::json> WorkloadCardToMetadata(const YAML::Node& card, const std::string& file,
                                                const std::string& hardware_dir) {
  YamlContext ctx;
  ctx.file = file;
  ASSIGN_OR_RETURN(YamlMap root, YamlMap::From(card, ctx));
  ASSIGN_OR_RETURN(YamlMap workload, root.Map("workload"));
  ASSIGN_OR_RETURN(YamlMap model, workload.Map("model"));
  ASSIGN_OR_RETURN(YamlMap data, workload.Map("data"));
  ASSIGN_OR_RETURN(YamlMap hardware, workload.Map("hardware"));
  ASSIGN_OR_RETURN(YamlMap executor, root.Map("Model-executor"));
  json meta = json::object();
  meta["workload_card"] = {{"file", file}};
  std::string phase;
  RETURN_IF_ERROR(model.Optional("phase", &phase));
  if (!phase.empty()) meta["workload_card"]["phase"] = phase;
  RETURN_IF_ERROR(ReadModel(model, &meta));
  RETURN_IF_ERROR(ReadData(data, &meta));
  RETURN_IF_ERROR(
      ReadHardware(hardware, hardware_dir.empty() ? DefaultHardwareDir() : hardware_dir, &meta));
  RETURN_IF_ERROR(ReadExecutor(executor, &meta));
  ASSIGN_OR_RETURN(YamlMap source, root.Map("metric_source"));
  std::vector<std::string> traces;
  if (source.Has("traces")) {
    // A list of trace kinds; the template leaves an empty entry ("- ").
    const YAML::Node list = source.Get("traces");
    if (!list.IsSequence()) {
      return source.context().Child("traces").Error("expected a list of trace kinds");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].IsScalar()) traces.push_back(list[i].Scalar());
    }
    meta["workload_card"]["traces"] = traces;
  }
  for (const char* key : {"model", "workload", "parallelism"}) {
    if (meta.contains(key) && meta[key].empty()) meta.erase(key);
  }
  return meta;
}

StatusOr<nlohmann::json> ReadWorkloadCard(const std::string& path,
                                          const std::string& hardware_dir) {
  ASSIGN_OR_RETURN(YAML::Node card, LoadYamlFile(path));
  if (!card.IsMap()) {
    return InvalidArgument("{}: not a workload card (expected a YAML map with 'workload')", path);
  }
  return WorkloadCardToMetadata(card, path, hardware_dir);
}

void MergeMissingMetadata(nlohmann::json* metadata, const nlohmann::json& card) {
  if (!metadata->is_object()) *metadata = json::object();
  json fill = card;
  if (fill.contains("workload") && fill["workload"].is_object()) {
    for (const char* key : {"batch_size", "sequence_length"}) {
      if (HasRunField(*metadata, key)) fill["workload"].erase(key);
    }
  }
  auto experiment = metadata->find("experiment");
  json* target = experiment != metadata->end() && experiment->is_object() ? &*experiment : metadata;
  FillMissing(target, fill);
}

}  // namespace shardscope::analysis
