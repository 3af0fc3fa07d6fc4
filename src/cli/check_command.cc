#include "cli/cli.h"

namespace shardscope::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("check", "Show placement, groups, memory and op counts of a plan");
  cmd->callback([exit_code] { *exit_code = ReportError(Unimplemented("check: not built yet")); });
}

}  // namespace shardscope::cli
