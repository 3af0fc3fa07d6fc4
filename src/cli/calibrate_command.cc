#include <iostream>

#include "calibrate/calibrate.h"
#include "calibrate/nccl_tests_log.h"
#include "cli/cli.h"
#include "cli/output_path.h"

namespace shardscope::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> traces;
  std::vector<std::string> nccl_tests;  // LOG or NAME=LOG
  std::vector<std::string> deepep;
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
  for (const std::string& arg : a.nccl_tests) {
    // NAME=LOG names the collective of a log that does not print its binary.
    calibrate::CalibrateOptions::NcclTestsInput in{arg, std::nullopt};
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      const std::optional<Collective> c =
          calibrate::ParseNcclTestsCollective(std::string_view(arg).substr(0, eq));
      if (!c) {
        return InvalidArgument(
            "--nccl-tests '{}': '{}' is not a collective nccl-tests runs (all_reduce, all_gather, "
            "reduce_scatter, alltoall, sendrecv, broadcast)",
            arg, arg.substr(0, eq));
      }
      in = {arg.substr(eq + 1), c};
    }
    options.nccl_tests.push_back(in);
  }
  options.deepep = a.deepep;
  if (a.traces.empty() && options.nccl_tests.empty() && options.deepep.empty()) {
    return InvalidArgument("calibrate: give traces, --nccl-tests LOG or --deepep LOG");
  }
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
      "calibrate",
      "Fit the simulator's compute and communication tables from measured traces, nccl-tests "
      "and DeepEP logs");
  cmd->add_option("traces", args->traces,
                  "trace files (ShardScope, Kineto, …); optional with --nccl-tests or --deepep");
  cmd->add_option("--nccl-tests", args->nccl_tests,
                  "nccl-tests output (all_reduce_perf, …): LOG, or NAME=LOG where the log does "
                  "not print its binary (NAME: all_reduce, all_gather, reduce_scatter, alltoall, "
                  "sendrecv, broadcast)");
  cmd->add_option("--deepep", args->deepep,
                  "DeepEP test output (test_intranode.py, test_internode.py, "
                  "test_low_latency.py); needs --hardware");
  cmd->add_option("--deepep-ranks", args->options.deepep_ranks,
                  "EP size of the DeepEP logs that do not print it (the normal-kernel tests; a "
                  "low-latency log of one rank's lines)");
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
