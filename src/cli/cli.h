// The `shardscope` command line: parses flags with CLI11 and dispatches to one
// library call per subcommand. Each subcommand lives in its own file and adds
// itself through an Add*Command function called from cli.cc.
#ifndef SHARDSCOPE_CLI_CLI_H_
#define SHARDSCOPE_CLI_CLI_H_

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace shardscope::cli {

// Exit codes: 0 success, 1 failure of the tool or environment, 2 bad input
// (config, plan, flags, files), 130 interrupted (Ctrl-C, SIGTERM).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;

// Prints "shardscope: error: <message>" to stderr and returns the exit code
// that the status's code calls for.
int ReportError(const Status& status);

int Main(int argc, char** argv);

// A CLI11 check refusing an empty value ("--experiment: must not be empty"):
// `--experiment ''` would otherwise select every experiment.
CLI::Validator NonEmpty();
// A CLI11 check refusing a number that is not > 0 ("--top: must be a positive
// number, got -1"): 0 or a negative one used to mean "the default" silently.
CLI::Validator Positive();
// A CLI11 check for a whole number in [min, max], parsed exactly: a number beyond int64
// ("--decode-steps 99999999999999999999") is refused, not saturated.
CLI::Validator WholeNumber(int64_t min, int64_t max);

// Subcommands; each stores its exit code into *exit_code when it runs.
void AddPlanCommand(CLI::App& app, int* exit_code);
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddAnalyzeCommand(CLI::App& app, int* exit_code);
void AddReportCommand(CLI::App& app, int* exit_code);
void AddCompareCommand(CLI::App& app, int* exit_code);
void AddTracesCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
void AddSearchCommand(CLI::App& app, int* exit_code);
void AddCalibrateCommand(CLI::App& app, int* exit_code);
void AddValidateCommand(CLI::App& app, int* exit_code);
void AddCollectiveCommand(CLI::App& app, int* exit_code);
// Hidden: the process mpirun starts on each rank of a backend-cpu run.
void AddWorkerCommand(CLI::App& app, int* exit_code);

}  // namespace shardscope::cli

#endif  // SHARDSCOPE_CLI_CLI_H_
