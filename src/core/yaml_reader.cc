#include "core/yaml_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/checked_int.h"
#include "core/small_file.h"

namespace shardscope {
namespace {

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    default:
      return "an undefined value";
  }
}

// Scalar text without YAML-1.1 digit separators ("100_000").
std::string Digits(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(c);
  return out;
}

}  // namespace

YamlContext YamlContext::Child(std::string_view key) const {
  YamlContext c = *this;
  c.path = path.empty() ? std::string(key) : path + "." + std::string(key);
  return c;
}

YamlContext YamlContext::Index(size_t i) const {
  YamlContext c = *this;
  c.path = fmt::format("{}[{}]", path, i);
  return c;
}

std::string YamlContext::Where() const {
  std::string out = file;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ": ";
    out += part;
  };
  if (!experiment.empty()) add(fmt::format("experiment '{}'", experiment));
  if (!path.empty()) add(fmt::format("field '{}'", path));
  return out;
}

Status YamlContext::Error(std::string_view problem) const {
  std::string where = Where();
  return InvalidArgument("{}{}{}", where, where.empty() ? "" : ": ", problem);
}

namespace {

// yaml-cpp keeps both pairs of a repeated key and node["key"] finds the first, so
// "batch_size: 1 … batch_size: 4" silently meant 1: an error naming both lines.
Status CheckDuplicateKeys(const YAML::Node& node, const std::string& name) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) RETURN_IF_ERROR(CheckDuplicateKeys(item, name));
  } else if (node.IsMap()) {
    std::map<std::string, int> first_line;
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) {
        const int line = kv.first.Mark().line + 1;
        auto [it, fresh] = first_line.emplace(kv.first.Scalar(), line);
        if (!fresh) {
          return InvalidArgument("{}: line {}: duplicate key '{}' (first on line {})", name, line,
                                 kv.first.Scalar(), it->second);
        }
      }
      RETURN_IF_ERROR(CheckDuplicateKeys(kv.second, name));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<YAML::Node> LoadYamlFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument("{}: is a directory, not a YAML file", path);
  }
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  return ParseYaml(text, path);
}

StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    RETURN_IF_ERROR(CheckDuplicateKeys(root, name));
    return root;
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: malformed YAML at line {}, column {}: {}", name, e.mark.line + 1,
                           e.mark.column + 1, e.msg);
  }
}

YAML::Node MergeYaml(const YAML::Node& base, const YAML::Node& overlay) {
  if (!overlay.IsDefined() || overlay.IsNull()) return YAML::Clone(base);
  if (!base.IsMap() || !overlay.IsMap()) return YAML::Clone(overlay);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : overlay) {
    std::string key = kv.first.Scalar();
    out[key] = out[key].IsDefined() ? MergeYaml(out[key], kv.second) : YAML::Clone(kv.second);
  }
  return out;
}

StatusOr<int64_t> YamlInt(const YAML::Node& node, const YamlContext& ctx) {
  if (!node.IsScalar()) return ctx.Error("expected an integer, got " + Describe(node));
  std::string s = Digits(node.Scalar());
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0' && errno == 0) return static_cast<int64_t>(v);
  // Accept integral values written in floating-point form, e.g. 1e5.
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') {
    if (const std::optional<int64_t> n = WholeToInt64(d)) return *n;
  }
  return ctx.Error("expected an integer, got " + Describe(node));
}

StatusOr<double> YamlDouble(const YAML::Node& node, const YamlContext& ctx) {
  if (!node.IsScalar()) return ctx.Error("expected a number, got " + Describe(node));
  std::string s = Digits(node.Scalar());
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(d))
    return ctx.Error("expected a number, got " + Describe(node));
  return d;
}

StatusOr<std::string> YamlString(const YAML::Node& node, const YamlContext& ctx) {
  if (!node.IsScalar()) return ctx.Error("expected a string, got " + Describe(node));
  return node.Scalar();
}

StatusOr<bool> YamlBool(const YAML::Node& node, const YamlContext& ctx) {
  bool b = false;
  if (node.IsScalar() && YAML::convert<bool>::decode(node, b)) return b;
  return ctx.Error("expected true or false, got " + Describe(node));
}

StatusOr<YamlMap> YamlMap::From(const YAML::Node& node, YamlContext ctx) {
  if (!node.IsDefined() || node.IsNull()) return YamlMap(YAML::Node(YAML::NodeType::Map), ctx);
  if (!node.IsMap()) return ctx.Error("expected a map, got " + Describe(node));
  return YamlMap(node, std::move(ctx));
}

bool YamlMap::Has(std::string_view key) const {
  YAML::Node n = node_[std::string(key)];
  return n.IsDefined() && !n.IsNull();
}

YAML::Node YamlMap::Get(std::string_view key) const { return node_[std::string(key)]; }

Status YamlMap::Missing(std::string_view key) const {
  return ctx_.Child(key).Error("is required but missing");
}

#define SHARDSCOPE_YAML_GETTER(Type, Convert)                       \
  Status YamlMap::Required(std::string_view key, Type* out) const { \
    if (!Has(key)) return Missing(key);                             \
    return Optional(key, out);                                      \
  }                                                                 \
  Status YamlMap::Optional(std::string_view key, Type* out) const { \
    if (!Has(key)) return Status::Ok();                             \
    ASSIGN_OR_RETURN(*out, Convert(Get(key), ctx_.Child(key)));     \
    return Status::Ok();                                            \
  }

SHARDSCOPE_YAML_GETTER(std::string, YamlString)
SHARDSCOPE_YAML_GETTER(int64_t, YamlInt)
SHARDSCOPE_YAML_GETTER(double, YamlDouble)
#undef SHARDSCOPE_YAML_GETTER

Status YamlMap::Optional(std::string_view key, bool* out) const {
  if (!Has(key)) return Status::Ok();
  ASSIGN_OR_RETURN(*out, YamlBool(Get(key), ctx_.Child(key)));
  return Status::Ok();
}

namespace {

template <typename T, typename Convert>
Status ReadList(const YAML::Node& node, const YamlContext& ctx, Convert convert,
                std::vector<T>* out) {
  if (!node.IsSequence()) return ctx.Error("expected a list, got " + Describe(node));
  std::vector<T> values;
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(T v, convert(node[i], ctx.Index(i)));
    values.push_back(std::move(v));
  }
  *out = std::move(values);
  return Status::Ok();
}

}  // namespace

Status YamlMap::Optional(std::string_view key, std::vector<int64_t>* out) const {
  if (!Has(key)) return Status::Ok();
  return ReadList<int64_t>(Get(key), ctx_.Child(key), YamlInt, out);
}

Status YamlMap::Optional(std::string_view key, std::vector<double>* out) const {
  if (!Has(key)) return Status::Ok();
  return ReadList<double>(Get(key), ctx_.Child(key), YamlDouble, out);
}

Status YamlMap::Optional(std::string_view key, std::vector<std::string>* out) const {
  if (!Has(key)) return Status::Ok();
  return ReadList<std::string>(Get(key), ctx_.Child(key), YamlString, out);
}

Status YamlMap::RequiredAtLeast(std::string_view key, int64_t min, int64_t* out) const {
  if (!Has(key)) return Missing(key);
  return OptionalAtLeast(key, min, out);
}

Status YamlMap::OptionalAtLeast(std::string_view key, int64_t min, int64_t* out) const {
  int64_t v = *out;
  RETURN_IF_ERROR(Optional(key, &v));
  if (Has(key) && v < min)
    return ctx_.Child(key).Error(fmt::format("must be at least {}, got {}", min, v));
  *out = v;
  return Status::Ok();
}

Status YamlMap::OptionalPositive(std::string_view key, double* out) const {
  double v = *out;
  RETURN_IF_ERROR(Optional(key, &v));
  if (Has(key) && !(v > 0))
    return ctx_.Child(key).Error(fmt::format("must be positive, got {}", v));
  *out = v;
  return Status::Ok();
}

StatusOr<YamlMap> YamlMap::Map(std::string_view key) const {
  return From(Get(key), ctx_.Child(key));
}

Status YamlMap::CheckKeys(std::initializer_list<std::string_view> known) const {
  return CheckKeys(std::vector<std::string>(known.begin(), known.end()));
}

Status YamlMap::CheckKeys(const std::vector<std::string>& known) const {
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    bool found = false;
    for (const auto& k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return ctx_.Child(key).Error("unknown field (known fields: " + list + ")");
    }
  }
  return Status::Ok();
}

}  // namespace shardscope
