// The prompts of a real run: `prompts:` in an experiment, either a list of
// token-id lists or the path of a file of them (relative to the experiments
// file; one prompt per line, as a JSON array `[1, 2, 3]` or as integers
// separated by spaces or commas; blank lines and lines starting with '#' are
// skipped). The fixed-batch executor prefills every request together, so all
// prompts must have the same length. docs/configuration.md, "Prompts".
#ifndef SHARDSCOPE_CONFIG_PROMPTS_H_
#define SHARDSCOPE_CONFIG_PROMPTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shardscope {

class YamlMap;  // core/yaml_reader.h

using Prompts = std::vector<std::vector<int32_t>>;

// Reads `prompts:` of `exp` (absent: empty). Token ids must lie in
// [0, vocab_size); errors name the file, the experiment, the field and, for a
// file, the line.
StatusOr<Prompts> ReadPrompts(const YamlMap& exp, const std::string& config_path,
                              int64_t vocab_size);

// Parses the text of a prompts file; `name` is used in messages.
StatusOr<Prompts> ParsePromptsText(const std::string& text, const std::string& name,
                                   int64_t vocab_size);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_PROMPTS_H_
