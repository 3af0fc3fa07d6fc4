// The experiments a command works on: `--config FILE [--experiment NAME]
// [--skip-invalid]`, shared by every command that takes them.
#ifndef SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_
#define SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope::cli {

struct ExperimentsArg {
  std::string config;
  std::string experiment;  // an experiment or a whole sweep; "" for all
  bool skip_invalid = false;
};

// Adds the --skip-invalid flag (--config and --experiment stay with each
// command, whose help words them).
void AddSkipInvalidFlag(CLI::App* cmd, ExperimentsArg* arg);

// Loads and validates only the selected experiments (the others in the file
// are not resolved, so a broken unrelated entry does not stop this one). With
// --skip-invalid, invalid plans are left out with one warning line each on
// stderr; without, every invalid plan is named in one error.
StatusOr<std::vector<Experiment>> LoadSelectedExperiments(const ExperimentsArg& arg);

}  // namespace shardscope::cli

#endif  // SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_
