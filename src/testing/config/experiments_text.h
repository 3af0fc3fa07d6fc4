// Experiments from a YAML text, as if read from the file `path`: how a test
// loads an experiments document without writing it to disk.
#ifndef SHARDSCOPE_TESTING_CONFIG_EXPERIMENTS_TEXT_H_
#define SHARDSCOPE_TESTING_CONFIG_EXPERIMENTS_TEXT_H_

#include <string>
#include <vector>

#include "config/experiment.h"
#include "config/experiment_loader.h"
#include "core/status.h"

namespace shardscope::testing {

// Parses `yaml` and builds its experiments with ExperimentsFromYaml; errors
// name `path` as a file's would.
StatusOr<std::vector<Experiment>> LoadExperimentsText(const std::string& yaml,
                                                      const std::string& path = "exp.yaml",
                                                      const LoaderOptions& options = {});

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_TESTING_CONFIG_EXPERIMENTS_TEXT_H_
