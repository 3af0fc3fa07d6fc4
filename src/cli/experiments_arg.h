// The experiments a command works on: `--config FILE [--experiment NAME]
// [--skip-invalid]`, shared by every command that takes them.
#ifndef SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_
#define SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
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

// What was selected: plans, and searches (experiments with a `search:` block,
// docs/search.md), which `shardscope search` runs.
struct Selection {
  std::vector<Experiment> experiments;
  std::vector<std::string> searches;
};

// Loads and validates only the selected experiments (the others in the file
// are not resolved, so a broken unrelated entry does not stop this one). With
// --skip-invalid, invalid plans are left out with one warning line each on
// stderr; without, every invalid plan is named in one error.
StatusOr<Selection> LoadSelection(const ExperimentsArg& arg);

// The same for commands that run plans: a selected search is left out with a
// line on stderr saying how to run it, and is an error when nothing else is left.
StatusOr<std::vector<Experiment>> LoadSelectedExperiments(const ExperimentsArg& arg);

// What check and plan say of a search: its experiment and search block read
// and checked, and its candidate plans counted (none evaluated):
// {"experiment", "search": {"candidates", "device_budget", "objective"}, "command"}.
StatusOr<std::vector<nlohmann::json>> DescribeSearches(const ExperimentsArg& arg,
                                                       const std::vector<std::string>& names);
// That as one line of text.
std::string SearchDescriptionText(const nlohmann::json& description);

}  // namespace shardscope::cli

#endif  // SHARDSCOPE_CLI_EXPERIMENTS_ARG_H_
