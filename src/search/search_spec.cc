#include "search/search_spec.h"

#include <algorithm>

#include "config/experiment_loader.h"
#include "core/enum_names.h"

namespace shardscope::search {

namespace {

constexpr auto kObjectiveNames = MakeEnumNames<Objective>({{Objective::kThroughput, "throughput"},
                                                           {Objective::kTtft, "ttft"},
                                                           {Objective::kTpot, "tpot"},
                                                           {Objective::kCost, "cost"}});

}  // namespace

std::string_view ObjectiveName(Objective o) { return kObjectiveNames.Name(o); }

StatusOr<Objective> ParseObjective(std::string_view name) {
  return kObjectiveNames.ParseOrError(name, "objective");
}

namespace {

Status ReadSizes(const YamlMap& map, std::string_view key, std::vector<int64_t>* out) {
  if (!map.Has(key)) return Status::Ok();
  RETURN_IF_ERROR(map.Optional(key, out));
  if (out->empty()) return map.context().Child(key).Error("expected a non-empty list");
  for (int64_t v : *out) {
    if (v < 1) {
      return map.context().Child(key).Error(fmt::format("sizes must be at least 1, got {}", v));
    }
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return Status::Ok();
}

}  // namespace

StatusOr<SearchSpec> SearchSpecFromYaml(const YAML::Node& node, const YamlContext& ctx) {
  SearchSpec s;
  if (!node.IsDefined() || node.IsNull()) return s;
  ASSIGN_OR_RETURN(YamlMap map, YamlMap::From(node, ctx));
  RETURN_IF_ERROR(map.CheckKeys({"tp", "pp", "sp", "ep", "dp", "sp_variants", "micro_batch_factors",
                                 "batch_sizes", "orders", "max_devices", "max_candidates",
                                 "objective", "slo", "gpu_hour_usd", "decode_steps", "top"}));
  RETURN_IF_ERROR(ReadSizes(map, "tp", &s.tp));
  RETURN_IF_ERROR(ReadSizes(map, "pp", &s.pp));
  RETURN_IF_ERROR(ReadSizes(map, "sp", &s.sp));
  RETURN_IF_ERROR(ReadSizes(map, "ep", &s.ep));
  RETURN_IF_ERROR(ReadSizes(map, "dp", &s.dp));
  RETURN_IF_ERROR(ReadSizes(map, "micro_batch_factors", &s.micro_batch_factors));
  RETURN_IF_ERROR(ReadSizes(map, "batch_sizes", &s.batch_sizes));
  if (map.Has("sp_variants")) {
    std::vector<std::string> names;
    RETURN_IF_ERROR(map.Optional("sp_variants", &names));
    if (names.empty()) return ctx.Child("sp_variants").Error("expected a non-empty list");
    s.sp_variants.clear();
    for (const auto& n : names) {
      auto v = ParseSpVariant(n);
      if (!v.ok()) return ctx.Child("sp_variants").Error(v.status().message());
      s.sp_variants.push_back(*v);
    }
  }
  if (map.Has("orders")) {
    std::string o;
    RETURN_IF_ERROR(map.Required("orders", &o));
    if (o == "default") {
      s.orders = OrderMode::kDefault;
    } else if (o == "innermost") {
      s.orders = OrderMode::kInnermost;
    } else if (o == "all") {
      s.orders = OrderMode::kAll;
    } else {
      return ctx.Child("orders").Error(
          fmt::format("unknown order mode '{}' (expected default, innermost or all)", o));
    }
  }
  RETURN_IF_ERROR(map.OptionalAtLeast("max_devices", 1, &s.max_devices));
  RETURN_IF_ERROR(map.OptionalAtLeast("max_candidates", 1, &s.max_candidates));
  RETURN_IF_ERROR(map.OptionalAtLeast("decode_steps", 1, &s.decode_steps));
  RETURN_IF_ERROR(map.OptionalAtLeast("top", 1, &s.top));
  RETURN_IF_ERROR(map.OptionalPositive("gpu_hour_usd", &s.gpu_hour_usd));
  if (map.Has("objective")) {
    std::string o;
    RETURN_IF_ERROR(map.Required("objective", &o));
    auto obj = ParseObjective(o);
    if (!obj.ok()) return ctx.Child("objective").Error(obj.status().message());
    s.objective = *obj;
  }
  if (map.Has("slo")) {
    ASSIGN_OR_RETURN(YamlMap slo, map.Map("slo"));
    RETURN_IF_ERROR(slo.CheckKeys({"ttft_ms", "tpot_ms"}));
    RETURN_IF_ERROR(slo.OptionalPositive("ttft_ms", &s.slo.ttft_ms));
    RETURN_IF_ERROR(slo.OptionalPositive("tpot_ms", &s.slo.tpot_ms));
  }
  return s;
}

StatusOr<SearchSplit> SplitSearches(const std::string& path) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path));
  SearchSplit split;
  if (!root.IsMap() || !root["experiments"].IsSequence()) {
    split.rest = root;  // the loader names the problem
    return split;
  }
  if (root["defaults"].IsMap() && root["defaults"]["search"].IsDefined()) {
    root["defaults"].remove("search");
  }
  YAML::Node kept(YAML::NodeType::Sequence);
  for (const YAML::Node& entry : root["experiments"]) {
    if (entry.IsMap() && entry["search"].IsDefined() && entry["name"].IsScalar()) {
      split.searches.push_back(entry["name"].Scalar());
    } else {
      kept.push_back(entry);
    }
  }
  if (kept.size() > 0) {
    root["experiments"] = kept;
    split.rest = root;
  }
  return split;
}

StatusOr<SearchInput> LoadSearchInput(const std::string& path, const std::string& name) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path));
  YamlContext file_ctx{path, "", ""};
  if (!root.IsMap() || !root["experiments"].IsDefined() || !root["experiments"].IsSequence()) {
    return file_ctx.Child("experiments").Error("expected a non-empty list of experiments");
  }
  // The search blocks are this command's; the loader knows only experiments.
  YAML::Node defaults_search;
  if (root["defaults"].IsDefined() && root["defaults"].IsMap() &&
      root["defaults"]["search"].IsDefined()) {
    defaults_search = YAML::Clone(root["defaults"]["search"]);
    root["defaults"].remove("search");
  }
  YAML::Node list = root["experiments"];
  std::vector<YAML::Node> searches(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsMap()) continue;  // the loader names the problem
    if (list[i]["search"].IsDefined()) {
      searches[i] = YAML::Clone(list[i]["search"]);
      list[i].remove("search");
    }
    if (!list[i]["parallelism"].IsDefined())
      list[i]["parallelism"] = YAML::Node(YAML::NodeType::Map);
  }
  LoaderOptions only;
  only.only = name;  // the other entries are not resolved
  ASSIGN_OR_RETURN(std::vector<Experiment> selected, ExperimentsFromYaml(root, path, only));
  if (selected.size() != 1) {
    return InvalidArgument(
        "{}: experiment '{}' is a sweep of {} experiments; search takes one (name one of its "
        "expansions, e.g. '{}')",
        path, name, selected.size(), selected.front().name);
  }
  SearchInput in;
  in.experiment = std::move(selected.front());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsMap() || !list[i]["name"].IsDefined() ||
        list[i]["name"].Scalar() != in.experiment.sweep_name) {
      continue;
    }
    YAML::Node defaults = root["defaults"].IsDefined() && root["defaults"].IsMap()
                              ? root["defaults"]
                              : YAML::Node(YAML::NodeType::Map);
    in.experiment_yaml = MergeYaml(defaults, list[i]);
    YAML::Node block = searches[i];
    if (defaults_search.IsDefined() && defaults_search.IsMap()) {
      block = block.IsDefined() ? MergeYaml(defaults_search, block) : defaults_search;
    }
    YamlContext ctx{path, in.experiment.name, "search"};
    ASSIGN_OR_RETURN(in.spec, SearchSpecFromYaml(block, ctx));
  }
  return in;
}

}  // namespace shardscope::search
