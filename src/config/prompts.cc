#include "config/prompts.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/small_file.h"
#include "core/yaml_reader.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

Status CheckToken(int64_t id, int64_t vocab_size, const std::string& where) {
  if (id < 0 || id >= vocab_size) {
    return InvalidArgument("{}: token id {} is outside the model's vocabulary [0, {})", where, id,
                           vocab_size);
  }
  return Status::Ok();
}

// One line of a prompts file: "[1, 2, 3]" or "1 2 3" or "1,2,3".
StatusOr<std::vector<int32_t>> ParseLine(std::string_view line, const std::string& where,
                                         int64_t vocab_size) {
  size_t b = line.find_first_not_of(" \t\r");
  size_t e = line.find_last_not_of(" \t\r");
  line = line.substr(b, e - b + 1);
  if (line.front() == '[') {
    if (line.back() != ']') return InvalidArgument("{}: '[' without a closing ']'", where);
    line = line.substr(1, line.size() - 2);
  }
  std::vector<int32_t> out;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r') {
      ++i;
      continue;
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + line.size(), v);
    if (ec != std::errc() || ptr == line.data() + i) {
      return InvalidArgument("{}: expected token ids (integers), got '{}'", where,
                             line.substr(i, line.find_first_of(" ,\t", i) - i));
    }
    RETURN_IF_ERROR(CheckToken(v, vocab_size, where));
    out.push_back(static_cast<int32_t>(v));
    i = static_cast<size_t>(ptr - line.data());
  }
  if (out.empty()) return InvalidArgument("{}: an empty prompt", where);
  return out;
}

StatusOr<Prompts> ReadPromptsFile(const YamlContext& ctx, const std::string& value,
                                  const std::string& config_path, int64_t vocab_size) {
  fs::path p(value);
  if (p.is_relative()) p = fs::path(config_path).parent_path() / p;
  StatusOr<std::string> text = ReadSmallFile(p.string(), "the prompts file");
  if (!text.ok()) {
    return ctx.Error(
        fmt::format("cannot read the prompts file {}: {}", p.string(), text.status().message()));
  }
  auto prompts = ParsePromptsText(*text, p.string(), vocab_size);
  if (!prompts.ok()) return ctx.Error(prompts.status().message());
  return prompts;
}

}  // namespace

StatusOr<Prompts> ParsePromptsText(const std::string& text, const std::string& name,
                                   int64_t vocab_size) {
  Prompts out;
  std::istringstream in(text);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                     ParseLine(line, fmt::format("{}:{}", name, n), vocab_size));
    out.push_back(std::move(prompt));
  }
  if (out.empty()) return InvalidArgument("{}: no prompts in the file", name);
  return out;
}

StatusOr<Prompts> ReadPrompts(const YamlMap& exp, const std::string& config_path,
                              int64_t vocab_size) {
  if (!exp.Has("prompts")) return Prompts{};
  const YAML::Node node = exp.Get("prompts");
  const YamlContext ctx = exp.context().Child("prompts");
  if (node.IsScalar()) {
    return ReadPromptsFile(ctx, node.Scalar(), config_path, vocab_size);
  }
  if (!node.IsSequence() || node.size() == 0) {
    return ctx.Error("expected a list of token-id lists or the path of a prompts file");
  }
  Prompts out;
  for (size_t i = 0; i < node.size(); ++i) {
    const YamlContext item = ctx.Index(i);
    if (!node[i].IsSequence() || node[i].size() == 0) {
      return item.Error("expected a non-empty list of token ids");
    }
    std::vector<int32_t> prompt;
    for (size_t j = 0; j < node[i].size(); ++j) {
      ASSIGN_OR_RETURN(int64_t id, YamlInt(node[i][j], item.Index(j)));
      if (id < 0 || id >= vocab_size) {
        return item.Index(j).Error(
            fmt::format("token id {} is outside the model's vocabulary [0, {})", id, vocab_size));
      }
      prompt.push_back(static_cast<int32_t>(id));
    }
    out.push_back(std::move(prompt));
  }
  return out;
}

}  // namespace shardscope
