#include "analysis/run_info.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <string_view>

#include "core/checked_int.h"

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

// The dotted name of `path`, for messages.
std::string Dotted(std::initializer_list<std::string_view> path) {
  std::string out;
  for (std::string_view key : path) {
    if (!out.empty()) out += '.';
    out += key;
  }
  return out;
}

// Reads metadata fields, noting each present one that cannot be used.
class Reader {
 public:
  Reader(const nlohmann::json& m, RunInfo* info) : m_(m), info_(info) {}

  // A positive finite number at `path`; absent (null) is quietly empty.
  std::optional<double> Positive(std::initializer_list<std::string_view> path) {
    return Positive(Lookup(m_, path), path);
  }
  std::optional<double> Positive(const nlohmann::json* v,
                                 std::initializer_list<std::string_view> path) {
    if (v == nullptr) return std::nullopt;
    if (v->is_number()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d > 0) return d;
    }
    Unusable(path, *v, "not a positive number");
    return std::nullopt;
  }

  // A whole number from 1 to 2^53 at `path` (beyond 2^53 a double no longer holds
  // every whole number, and no batch, sequence or domain is that large).
  std::optional<int64_t> PositiveInt(std::initializer_list<std::string_view> path) {
    const nlohmann::json* v = Lookup(m_, path);
    if (v == nullptr) return std::nullopt;
    constexpr int64_t kMax = int64_t{1} << 53;
    if (const std::optional<int64_t> n = JsonToInt64(*v); n && *n >= 1 && *n <= kMax) return n;
    Unusable(path, *v, "not a whole number from 1 to 2^53");
    return std::nullopt;
  }

 private:
  void Unusable(std::initializer_list<std::string_view> path, const nlohmann::json& v,
                const char* why) {
    const std::string field = Dotted(path);
    info_->unusable.emplace(field, fmt::format("metadata's {} is {}, {}", field, v.dump(), why));
  }

  const nlohmann::json& m_;
  RunInfo* info_;
};

}  // namespace

std::string RunInfo::WhyNot(std::initializer_list<std::string_view> fields,
                            std::string lacks) const {
  std::string out;
  for (std::string_view f : fields) {
    auto it = unusable.find(std::string(f));
    if (it == unusable.end()) continue;
    out += (out.empty() ? "" : "; ") + it->second;
  }
  return out.empty() ? lacks : out;
}

RunInfo RunInfo::FromMetadata(const nlohmann::json& m) {
  RunInfo info;
  Reader r(m, &info);
  info.batch_size = r.PositiveInt({"workload", "batch_size"});
  if (!info.batch_size) info.batch_size = r.PositiveInt({"run", "batch_size"});
  info.sequence_length = r.PositiveInt({"workload", "sequence_length"});
  if (!info.sequence_length) info.sequence_length = r.PositiveInt({"run", "sequence_length"});
  info.tokens_to_generate = r.PositiveInt({"workload", "tokens_to_generate"});
  // A usable run.* value makes an unusable workload.* one moot (and the other way round).
  if (info.batch_size) {
    info.unusable.erase("workload.batch_size");
    info.unusable.erase("run.batch_size");
  }
  if (info.sequence_length) {
    info.unusable.erase("workload.sequence_length");
    info.unusable.erase("run.sequence_length");
  }
  if (const auto* d = Lookup(m, {"workload", "dtype"}); d && d->is_string()) {
    info.dtype = d->get<std::string>();
  }
  if (const auto* peaks = Lookup(m, {"cluster", "device", "peak_flops"})) {
    if (peaks->is_number()) {
      info.peak_flops = r.Positive(peaks, {"cluster", "device", "peak_flops"});
    } else if (peaks->is_object() && !info.dtype.empty() && peaks->contains(info.dtype)) {
      info.peak_flops = r.Positive(&(*peaks)[info.dtype], {"cluster", "device", "peak_flops"});
    }
  }
  info.memory_bandwidth = r.Positive({"cluster", "device", "memory_bandwidth"});
  info.scale_up_bandwidth = r.Positive({"cluster", "scale_up", "bandwidth_per_device"});
  info.scale_out_bandwidth = r.Positive({"cluster", "scale_out", "nic_bandwidth_per_device"});
  info.scale_up_domain = r.PositiveInt({"cluster", "scale_up", "domain_size"});
  if (!info.scale_up_domain) {
    if (auto dpn = r.PositiveInt({"cluster", "devices_per_node"})) {
      info.scale_up_domain = dpn;
      info.unusable.erase("cluster.scale_up.domain_size");
    }
  }
  return info;
}

}  // namespace shardscope::analysis
