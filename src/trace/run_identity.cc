#include "trace/run_identity.h"

#include <fmt/format.h>

#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "core/units.h"
#include "trace/json_path.h"

namespace shardscope::trace {
namespace {

using Path = std::initializer_list<const char*>;

std::string Dotted(Path path) {
  std::string out;
  for (const char* key : path) out += (out.empty() ? "" : ".") + std::string(key);
  return out;
}

// The first of `paths` present in `m`, as a string.
Status FirstString(const nlohmann::json& m, std::string_view source,
                   std::initializer_list<Path> paths, std::string* out) {
  for (Path path : paths) {
    const nlohmann::json* j = JsonAt(m, path);
    if (j == nullptr) continue;
    if (!j->is_string()) {
      return InvalidArgument("{}: metadata field '{}' is a JSON {}, expected a string", source,
                             Dotted(path), j->type_name());
    }
    *out = j->get<std::string>();
    return Status::Ok();
  }
  return Status::Ok();
}

Status FirstInt(const nlohmann::json& m, std::string_view source, std::initializer_list<Path> paths,
                std::optional<int64_t>* out) {
  for (Path path : paths) {
    const nlohmann::json* j = JsonAt(m, path);
    if (j == nullptr) continue;
    if (!j->is_number_integer()) {
      return InvalidArgument(
          "{}: metadata field '{}' is {}, expected an integer", source, Dotted(path),
          j->is_number() ? "a fraction" : fmt::format("a JSON {}", j->type_name()));
    }
    *out = j->get<int64_t>();
    return Status::Ok();
  }
  return Status::Ok();
}

// The nodes the run's ranks occupy (not the cluster's size): the distinct nodes of
// plan.rank_to_device (global device indices), else ranks placed in order.
Status NodesUsed(const nlohmann::json& m, std::string_view source,
                 const std::optional<int64_t>& ranks, std::optional<int64_t>* nodes) {
  std::optional<int64_t> per_node;
  RETURN_IF_ERROR(FirstInt(
      m, source, {{"cluster", "devices_per_node"}, {"experiment", "cluster", "devices_per_node"}},
      &per_node));
  if (!per_node || *per_node < 1) return Status::Ok();
  if (const nlohmann::json* devices = JsonAt(m, {"plan", "rank_to_device"})) {
    if (!devices->is_array()) {
      return InvalidArgument(
          "{}: metadata field 'plan.rank_to_device' is a JSON {}, expected an "
          "array of device indices",
          source, devices->type_name());
    }
    std::set<int64_t> used;
    for (const nlohmann::json& d : *devices) {
      if (!d.is_number_integer()) {
        return InvalidArgument(
            "{}: metadata field 'plan.rank_to_device' holds a JSON {}, "
            "expected device indices",
            source, d.type_name());
      }
      used.insert(d.get<int64_t>() / *per_node);
    }
    if (!used.empty()) *nodes = static_cast<int64_t>(used.size());
    return Status::Ok();
  }
  if (ranks && *ranks > 0) *nodes = (*ranks + *per_node - 1) / *per_node;
  return Status::Ok();
}

}  // namespace

bool RunIdentity::empty() const {
  return experiment.empty() && sweep.empty() && hardware.empty() && dtype.empty() &&
         backend.empty() && !nodes && !ranks;
}

bool IdentityFilter::empty() const {
  return experiment.empty() && hardware.empty() && dtype.empty() && backend.empty();
}

bool IdentityFilter::Matches(const RunIdentity& id) const {
  if (!experiment.empty() && experiment != id.experiment && experiment != id.sweep) return false;
  if (!hardware.empty() && hardware != id.hardware) return false;
  if (!dtype.empty() && dtype != id.dtype) return false;
  if (!backend.empty() && backend != id.backend) return false;
  return true;
}

StatusOr<RunIdentity> RunIdentityFromMetadata(const nlohmann::json& m, std::string_view source) {
  RunIdentity id;
  RETURN_IF_ERROR(
      FirstString(m, source, {{"run", "experiment"}, {"experiment", "name"}}, &id.experiment));
  RETURN_IF_ERROR(FirstString(m, source, {{"run", "sweep"}, {"experiment", "sweep"}}, &id.sweep));
  RETURN_IF_ERROR(FirstString(
      m, source, {{"run", "hardware"}, {"experiment", "cluster", "name"}, {"cluster", "name"}},
      &id.hardware));
  RETURN_IF_ERROR(FirstString(
      m, source, {{"run", "dtype"}, {"experiment", "workload", "dtype"}, {"workload", "dtype"}},
      &id.dtype));
  RETURN_IF_ERROR(FirstString(
      m, source, {{"run", "backend"}, {"backend"}, {"experiment", "backend"}}, &id.backend));
  // An experiment that is no sweep's records its own name as the sweep.
  if (id.sweep == id.experiment) id.sweep.clear();
  RETURN_IF_ERROR(FirstInt(
      m, source,
      {{"run", "ranks"}, {"plan", "world_size"}, {"experiment", "parallelism", "world_size"}},
      &id.ranks));
  RETURN_IF_ERROR(FirstInt(m, source, {{"run", "nodes"}}, &id.nodes));
  if (!id.nodes) RETURN_IF_ERROR(NodesUsed(m, source, id.ranks, &id.nodes));
  return id;
}

StatusOr<RunIdentity> ReadRunIdentity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("{}: cannot open the run's metadata", path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("{}: cannot read the run's metadata", path);
  const std::string text = ss.str();
  if (text.empty()) return RunIdentity{};  // reserved, not yet written
  nlohmann::json m = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded()) return InvalidArgument("{}: the run's metadata is not valid JSON", path);
  if (!m.is_object()) return InvalidArgument("{}: the run's metadata is not a JSON object", path);
  return RunIdentityFromMetadata(m, path);
}

nlohmann::ordered_json RunIdentityJson(const RunIdentity& id) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put("experiment", id.experiment);
  put("sweep", id.sweep);
  put("hardware", id.hardware);
  put("dtype", id.dtype);
  put("backend", id.backend);
  if (id.nodes) j["nodes"] = *id.nodes;
  if (id.ranks) j["ranks"] = *id.ranks;
  return j;
}

std::string NodesAndRanks(const RunIdentity& id) {
  std::string out;
  if (id.nodes) out = FormatCount(*id.nodes, "node");
  if (id.ranks) out += (out.empty() ? "" : " · ") + FormatCount(*id.ranks, "rank");
  return out;
}

}  // namespace shardscope::trace
