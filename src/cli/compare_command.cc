#include <iostream>

#include "cli/cli.h"
#include "report/comparison.h"
#include "report/metric_table.h"

namespace shardscope::cli {
namespace {

struct CompareOptions {
  std::vector<std::string> paths;
  std::string baseline;
  std::string format = "md";
  std::vector<std::string> metrics;
  bool per_rank = false;
  trace::IdentityFilter runs;
};

Status RunCompare(const CompareOptions& o) {
  ASSIGN_OR_RETURN(report::TableFormat format, report::ParseTableFormat(o.format));
  report::CompareOptions options;
  options.metric_names = o.metrics;
  options.per_rank = o.per_rank;
  options.runs = o.runs;
  std::vector<analysis::AnalysisResult> runs;
  ASSIGN_OR_RETURN(report::Comparison comparison,
                   report::CompareTraces(o.paths, o.baseline, options, &runs));
  for (const analysis::AnalysisResult& r : runs) {
    if (r.stats.skipped_total() > 0) std::cerr << r.trace_path << ": " << r.stats.Summary() << "\n";
    for (const std::string& w : r.warnings) std::cerr << r.trace_path << ": warning: " << w << "\n";
  }
  std::cout << report::RenderComparison(comparison, format);
  return Status::Ok();
}

}  // namespace

void AddCompareCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Runs' metrics side by side with ratios to the baseline; per-rank metrics summarised");
  cmd->add_option("paths", options->paths,
                  "runs: trace files, run directories or store roots (each run in them); the "
                  "first run is the baseline unless --baseline names one")
      ->required();
  cmd->add_option("--baseline", options->baseline, "the run the ratios are to (one trace)");
  cmd->add_option("--format", options->format, "md, json or csv")->default_str("md");
  // One name per --metric, so that the run paths after it stay runs.
  cmd->add_option("--metric", options->metrics, "only these metrics (repeat for more)")
      ->allow_extra_args(false);
  cmd->add_option("--experiment", options->runs.experiment,
                  "only the stored runs of this experiment (or of this sweep)")
      ->check(NonEmpty());
  cmd->add_option("--hardware", options->runs.hardware, "only the stored runs on this hardware");
  cmd->add_option("--dtype", options->runs.dtype, "only the stored runs in this dtype");
  cmd->add_option("--backend", options->runs.backend, "only the stored runs of this backend");
  cmd->add_flag("--per-rank", options->per_rank,
                "every rank, group and layer row instead of their min, median and max");
  cmd->callback([options, exit_code] {
    Status s = RunCompare(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
