// Typed reading of YAML maps with errors that name the file, the experiment and
// the dotted path of the field (e.g. "configs/experiments.yaml: experiment
// 'tp8': field 'parallelism.tp_size': expected an integer, got 'eight'").
// yaml-cpp exceptions never escape: they become a Status here.
#ifndef SHARDSCOPE_CORE_YAML_READER_H_
#define SHARDSCOPE_CORE_YAML_READER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shardscope {

// Where a YAML node came from, for error messages.
struct YamlContext {
  std::string file;        // source file ("" when built in memory)
  std::string experiment;  // experiment name ("" outside experiments)
  std::string path;        // dotted path of the node ("" at the root)

  YamlContext Child(std::string_view key) const;
  YamlContext Index(size_t i) const;
  // "file: experiment 'x': field 'a.b'" (parts that are empty are left out).
  std::string Where() const;
  Status Error(std::string_view problem) const;
};

// Parses a YAML file; a missing, unreadable or malformed file is an error that names it.
StatusOr<YAML::Node> LoadYamlFile(const std::string& path);
// Parses YAML text (tests, inline snippets); `name` is used in messages.
StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& name);

// Returns base with every key of overlay set over it, maps merged recursively,
// anything else replaced. Neither input is modified.
YAML::Node MergeYaml(const YAML::Node& base, const YAML::Node& overlay);

// A view of one YAML map. All getters leave *out unchanged when an optional key
// is absent and return an error naming the field when the value has the wrong type.
class YamlMap {
 public:
  // Fails unless node is a map (or null, treated as an empty map).
  static StatusOr<YamlMap> From(const YAML::Node& node, YamlContext ctx);

  bool Has(std::string_view key) const;
  const YAML::Node& node() const { return node_; }
  const YamlContext& context() const { return ctx_; }
  YAML::Node Get(std::string_view key) const;

  Status Required(std::string_view key, std::string* out) const;
  Status Required(std::string_view key, int64_t* out) const;
  Status Required(std::string_view key, double* out) const;
  Status Optional(std::string_view key, std::string* out) const;
  Status Optional(std::string_view key, int64_t* out) const;
  Status Optional(std::string_view key, double* out) const;
  Status Optional(std::string_view key, bool* out) const;
  Status Optional(std::string_view key, std::vector<int64_t>* out) const;
  Status Optional(std::string_view key, std::vector<double>* out) const;
  Status Optional(std::string_view key, std::vector<std::string>* out) const;

  // Integer that must be >= min (e.g. 1 for sizes, 0 for counts).
  Status RequiredAtLeast(std::string_view key, int64_t min, int64_t* out) const;
  Status OptionalAtLeast(std::string_view key, int64_t min, int64_t* out) const;
  // Number that must be > 0.
  Status OptionalPositive(std::string_view key, double* out) const;

  // A sub-map; absent keys give an empty map.
  StatusOr<YamlMap> Map(std::string_view key) const;

  // Errors on the first key not in `known` (catches typos such as "tp_szie").
  Status CheckKeys(std::initializer_list<std::string_view> known) const;
  Status CheckKeys(const std::vector<std::string>& known) const;

 private:
  YamlMap(YAML::Node node, YamlContext ctx) : node_(std::move(node)), ctx_(std::move(ctx)) {}
  Status Missing(std::string_view key) const;

  YAML::Node node_;
  YamlContext ctx_;
};

// Scalar conversions with field-naming errors (also used on sequence items).
StatusOr<int64_t> YamlInt(const YAML::Node& node, const YamlContext& ctx);
StatusOr<double> YamlDouble(const YAML::Node& node, const YamlContext& ctx);
StatusOr<std::string> YamlString(const YAML::Node& node, const YamlContext& ctx);
StatusOr<bool> YamlBool(const YAML::Node& node, const YamlContext& ctx);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_YAML_READER_H_
