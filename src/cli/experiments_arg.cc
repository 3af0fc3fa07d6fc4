#include "cli/experiments_arg.h"

#include <iostream>

#include "plan/plan_loader.h"

namespace shardscope::cli {

void AddSkipInvalidFlag(CLI::App* cmd, ExperimentsArg* arg) {
  cmd->add_flag("--skip-invalid", arg->skip_invalid,
                "Leave out experiments whose plan is invalid (one warning each) and go on "
                "with the rest");
}

StatusOr<std::vector<Experiment>> LoadSelectedExperiments(const ExperimentsArg& arg) {
  LoaderOptions options;
  options.only = arg.experiment;
  std::vector<Status> skipped;
  auto selected = LoadValidExperiments(arg.config, options, arg.skip_invalid ? &skipped : nullptr);
  for (const Status& s : skipped) std::cerr << "shardscope: skipped: " << s.message() << "\n";
  return selected;
}

}  // namespace shardscope::cli
