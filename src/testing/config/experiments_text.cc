#include "testing/config/experiments_text.h"

#include "core/yaml_reader.h"

namespace shardscope::testing {

StatusOr<std::vector<Experiment>> LoadExperimentsText(const std::string& yaml,
                                                      const std::string& path,
                                                      const LoaderOptions& options) {
  StatusOr<YAML::Node> node = ParseYaml(yaml, path);
  if (!node.ok()) return node.status();
  return ExperimentsFromYaml(*node, path, options);
}

}  // namespace shardscope::testing
