#include "analysis/run_info.h"

#include <initializer_list>
#include <string_view>

namespace shardscope::analysis {
namespace {

// The value at `path` under `root` or under root["experiment"]; null if absent.
const nlohmann::json* Lookup(const nlohmann::json& root,
                             std::initializer_list<std::string_view> path) {
  for (const nlohmann::json* base : {&root, root.is_object() && root.contains("experiment")
                                                ? &root["experiment"]
                                                : static_cast<const nlohmann::json*>(nullptr)}) {
    if (base == nullptr) continue;
    const nlohmann::json* node = base;
    for (std::string_view key : path) {
      if (!node->is_object()) {
        node = nullptr;
        break;
      }
      auto it = node->find(std::string(key));
      if (it == node->end()) {
        node = nullptr;
        break;
      }
      node = &*it;
    }
    if (node != nullptr && !node->is_null()) return node;
  }
  return nullptr;
}

std::optional<double> Positive(const nlohmann::json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  double d = v->get<double>();
  if (!(d > 0)) return std::nullopt;
  return d;
}

std::optional<int64_t> PositiveInt(const nlohmann::json* v) {
  auto d = Positive(v);
  if (!d) return std::nullopt;
  return static_cast<int64_t>(*d);
}

}  // namespace

RunInfo RunInfo::FromMetadata(const nlohmann::json& m) {
  RunInfo info;
  info.batch_size = PositiveInt(Lookup(m, {"workload", "batch_size"}));
  if (!info.batch_size) info.batch_size = PositiveInt(Lookup(m, {"run", "batch_size"}));
  info.sequence_length = PositiveInt(Lookup(m, {"workload", "sequence_length"}));
  if (!info.sequence_length)
    info.sequence_length = PositiveInt(Lookup(m, {"run", "sequence_length"}));
  info.tokens_to_generate = PositiveInt(Lookup(m, {"workload", "tokens_to_generate"}));
  if (const auto* d = Lookup(m, {"workload", "dtype"}); d && d->is_string()) {
    info.dtype = d->get<std::string>();
  }
  if (const auto* peaks = Lookup(m, {"cluster", "device", "peak_flops"})) {
    if (peaks->is_number()) {
      info.peak_flops = Positive(peaks);
    } else if (peaks->is_object() && !info.dtype.empty() && peaks->contains(info.dtype)) {
      info.peak_flops = Positive(&(*peaks)[info.dtype]);
    }
  }
  info.memory_bandwidth = Positive(Lookup(m, {"cluster", "device", "memory_bandwidth"}));
  info.scale_up_bandwidth = Positive(Lookup(m, {"cluster", "scale_up", "bandwidth_per_device"}));
  info.scale_out_bandwidth =
      Positive(Lookup(m, {"cluster", "scale_out", "nic_bandwidth_per_device"}));
  info.scale_up_domain = PositiveInt(Lookup(m, {"cluster", "scale_up", "domain_size"}));
  if (!info.scale_up_domain) {
    if (auto dpn = PositiveInt(Lookup(m, {"cluster", "devices_per_node"})))
      info.scale_up_domain = dpn;
  }
  return info;
}

}  // namespace shardscope::analysis
