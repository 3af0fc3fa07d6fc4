// Loads configs/experiments.yaml into fully resolved Experiments: shared
// `defaults` merged under each experiment, models and clusters resolved from
// the zoo (with overrides) or inline, sweeps (a list where a number is
// expected) expanded into one experiment per value. Every error names the
// file, the experiment and the field.
#ifndef SHARDSCOPE_CONFIG_EXPERIMENT_LOADER_H_
#define SHARDSCOPE_CONFIG_EXPERIMENT_LOADER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope {

struct LoaderOptions {
  // Zoo folders; empty: "<config dir>/models" and "<config dir>/hardware" when
  // they exist, else the source tree's configs/.
  std::string models_dir;
  std::string hardware_dir;
  // Read only this experiment or sweep (by name); "" reads all. Other entries
  // are still checked for names and sweep shape, not resolved.
  std::string only;
  // A sweep that would expand to more experiments than this is an error.
  int64_t max_experiments = 10000;
  // Called after each experiment is read with (read so far, to read), so that a
  // long load (a sweep of thousands of points) can show how far it is; may be empty.
  std::function<void(int64_t read, int64_t total)> progress;
};

// Loads every experiment of the file (after sweep expansion).
StatusOr<std::vector<Experiment>> LoadExperiments(const std::string& path,
                                                  const LoaderOptions& options = {});

// Same, from an already parsed document; `path` names it in messages and
// anchors relative paths (hf_config).
StatusOr<std::vector<Experiment>> ExperimentsFromYaml(const YAML::Node& root,
                                                      const std::string& path,
                                                      const LoaderOptions& options = {});

// Keeps the experiments called `name`, or expanded from a sweep called `name`;
// an unknown name is an error that lists the names there are.
StatusOr<std::vector<Experiment>> SelectExperiments(std::vector<Experiment> all,
                                                    const std::string& name,
                                                    const std::string& path);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_EXPERIMENT_LOADER_H_
