#include <iostream>

#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "cli/output_path.h"

namespace shardscope::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> traces;
  std::string output;
  bool force = false;
  std::string shape_time = "median";
  calibrate::CalibrateOptions options;
};

Status RunCalibrate(const CalibrateArgs& a) {
  if (a.shape_time != "median" && a.shape_time != "mean") {
    return InvalidArgument("--shape-time is '{}': expected median or mean", a.shape_time);
  }
  // Before the fit: a refusal after printing it would look like success.
  RETURN_IF_ERROR(CheckOutputPath("--output", a.output, a.traces));
  RETURN_IF_ERROR(calibrate::CheckNewFile(a.output, a.force));
  calibrate::CalibrateOptions options = a.options;
  options.shape_mean = a.shape_time == "mean";
  ASSIGN_OR_RETURN(calibrate::CalibrationResult result, calibrate::Calibrate(a.traces, options));
  std::cout << calibrate::CalibrationSummary(result);
  RETURN_IF_ERROR(calibrate::WriteNewFile(a.output, calibrate::CalibrationYaml(result), a.force));
  std::cout << "\nwrote " << a.output << "\n";
  return Status::Ok();
}

}  // namespace

void AddCalibrateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Fit the simulator's compute and communication tables from measured traces");
  cmd->add_option("traces", args->traces, "trace files (ShardScope, Kineto, …)")->required();
  cmd->add_option("-o,--output", args->output, "calibration file to write (YAML)")->required();
  cmd->add_flag("--force", args->force, "overwrite the output file if it exists");
  cmd->add_option("--hardware", args->options.hardware,
                  "zoo name or YAML file of the hardware the traces ran on (needed for traces "
                  "without ShardScope metadata)");
  cmd->add_option("--min-samples", args->options.min_samples,
                  "ops per class below which the defaults are kept")
      ->default_str("5");
  cmd->add_option("--shape-time", args->shape_time,
                  "each op shape's time from its ops: median (robust) or mean (the expected op, "
                  "to compare with a mean over repeated runs)")
      ->default_str("median");
  cmd->callback([args, exit_code] {
    Status s = RunCalibrate(*args);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
