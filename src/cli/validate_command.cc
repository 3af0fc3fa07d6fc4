#include <iostream>
#include <string>
#include <vector>

#include "calibrate/validate.h"
#include "cli/cli.h"
#include "cli/experiments_arg.h"
#include "cli/output_path.h"

namespace shardscope::cli {
namespace {

struct ValidateArgs {
  ExperimentsArg experiments;
  std::vector<std::string> measured;
  std::string format = "md";
  calibrate::ValidateOptions options;
};

Status RunValidate(const ValidateArgs& a) {
  if (!a.options.sim_trace.empty()) {
    std::vector<std::string> inputs = a.measured;
    inputs.push_back(a.experiments.config);
    if (!a.options.calibration_file.empty()) inputs.push_back(a.options.calibration_file);
    RETURN_IF_ERROR(CheckOutputPath("--sim-trace", a.options.sim_trace, inputs));
  }
  ASSIGN_OR_RETURN(std::vector<Experiment> selected, LoadSelectedExperiments(a.experiments));
  if (selected.size() != 1) {
    return InvalidArgument("{}: --experiment '{}' selects {} experiments; validate takes one",
                           a.experiments.config, a.experiments.experiment, selected.size());
  }
  ASSIGN_OR_RETURN(calibrate::ValidationResult result,
                   calibrate::ValidateExperiment(selected[0], a.measured, a.options));
  ASSIGN_OR_RETURN(std::string text, calibrate::RenderValidation(result, a.format));
  std::cout << text;
  return Status::Ok();
}

}  // namespace

void AddValidateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate", "Simulate an experiment and compare it with a measured trace of it");
  cmd->add_option("--config", args->experiments.config, "experiments YAML")->required();
  cmd->add_option("--experiment", args->experiments.experiment, "the experiment measured")
      ->required()
      ->check(NonEmpty());
  cmd->add_option("--measured", args->measured,
                  "the measured trace; several: repeated runs, compared by their mean")
      ->required();
  cmd->add_option("--calibration", args->options.calibration_file,
                  "calibration file for the simulator (shardscope calibrate)");
  cmd->add_option("--sim-trace", args->options.sim_trace, "keep the simulated trace in this file")
      ->check(NonEmpty());
  cmd->add_option("--format", args->format, "md or csv")->default_str("md");
  cmd->add_flag(
      "--experiment-routing", [args](int64_t) { args->options.measured_routing = false; },
      "MoE: route as the experiment says, not by the measured run's split per layer");
  cmd->callback([args, exit_code] {
    Status s = RunValidate(*args);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
