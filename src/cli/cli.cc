#include "cli/cli.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <iostream>

#include "core/exit_kind.h"

namespace shardscope::cli {

int ReportError(const Status& status) {
  std::cerr << "shardscope: error: " << status.message() << "\n";
  switch (FailureKindOf(status.code())) {
    case FailureKind::kBadInput:
      return kExitBadInput;
    case FailureKind::kInterrupted:
      return kExitInterrupted;
    case FailureKind::kOther:
      return kExitFailure;
  }
  return kExitFailure;
}

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& value) {
        return value.empty() ? std::string("must not be empty") : std::string();
      },
      "", "NONEMPTY");
}

CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& value) {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(v > 0)) {
          return "must be a positive number, got " + value;
        }
        return std::string();
      },
      "", "POSITIVE");
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) {
        int64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);
        if (value.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
          return fmt::format("must be a whole number from {} to {}, got {}", min, max, value);
        }
        return std::string();
      },
      "", "WHOLE");
}

int Main(int argc, char** argv) {
  CLI::App app{"ShardScope: plan, simulate, run and analyse parallel LLM inference"};
  app.set_version_flag("--version", std::string("shardscope ") + SHARDSCOPE_VERSION);
  app.require_subcommand(1);
  int exit_code = kExitOk;
  AddPlanCommand(app, &exit_code);
  AddCheckCommand(app, &exit_code);
  AddAnalyzeCommand(app, &exit_code);
  AddReportCommand(app, &exit_code);
  AddCompareCommand(app, &exit_code);
  AddTracesCommand(app, &exit_code);
  AddRunCommand(app, &exit_code);
  AddSearchCommand(app, &exit_code);
  AddCalibrateCommand(app, &exit_code);
  AddValidateCommand(app, &exit_code);
  AddCollectiveCommand(app, &exit_code);
  AddWorkerCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  return exit_code;
}

}  // namespace shardscope::cli
