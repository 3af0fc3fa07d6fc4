#include <iostream>

#include "analysis/analyzer.h"
#include "analysis/ccl_bench_names.h"
#include "analysis/workload_card.h"
#include "cli/cli.h"
#include "report/metric_table.h"

namespace shardscope::cli {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string format = "md";
  std::vector<std::string> metrics;
  std::string workload_card;
  std::string trace_format = "auto";
  std::string align_clocks = "as-recorded";
};

Status RunAnalyze(const AnalyzeOptions& o) {
  ASSIGN_OR_RETURN(report::TableFormat format, report::ParseTableFormat(o.format));
  analysis::AnalyzeOptions options;
  if (!o.workload_card.empty()) {
    ASSIGN_OR_RETURN(options.extra_metadata, analysis::ReadWorkloadCard(o.workload_card));
  }
  if (o.trace_format != "auto") {
    ASSIGN_OR_RETURN(options.format, importers::ParseTraceFormat(o.trace_format));
  }
  ASSIGN_OR_RETURN(options.alignment, importers::ParseClockAlignment(o.align_clocks));
  ASSIGN_OR_RETURN(std::vector<analysis::AnalysisResult> results,
                   analysis::AnalyzePaths(o.paths, options));
  for (const analysis::AnalysisResult& r : results) {
    if (r.stats.skipped_total() > 0) std::cerr << r.trace_path << ": " << r.stats.Summary() << "\n";
    for (const std::string& w : r.warnings) std::cerr << r.trace_path << ": warning: " << w << "\n";
  }
  std::vector<const analysis::MetricSet*> analyses;
  for (const analysis::AnalysisResult& r : results) analyses.push_back(&r.metrics);
  RETURN_IF_ERROR(analysis::CheckMetricNames(analyses, o.metrics));
  std::cout << report::RenderAnalyses(results, o.metrics, format);
  return Status::Ok();
}

}  // namespace

void AddAnalyzeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand(
      "analyze", "Compute every metric of traces: a trace file, a run directory or a whole store");
  cmd->add_option("paths", options->paths, "trace files or directories")->required();
  cmd->add_option("--format", options->format, "md, json or csv")->default_str("md");
  // One name per --metric, so that paths after it stay paths.
  cmd->add_option("--metric", options->metrics,
                  "only these metrics (a name selects all its scopes and .suffixes; repeat for "
                  "more); CCL-Bench names (avg_step_time, ...) too")
      ->allow_extra_args(false);
  cmd->add_option("--workload-card", options->workload_card,
                  "a CCL-Bench workload card (YAML): fills model, hardware and plan figures "
                  "the trace's metadata lacks");
  cmd->add_option("--trace-format", options->trace_format,
                  "auto (detect from the content) or one of: " + importers::TraceFormatNames())
      ->default_str("auto");
  cmd->add_option("--align-clocks", options->align_clocks,
                  "multi-rank sets: as-recorded, or collective-end (shift each rank so the end "
                  "of the first collective all ranks ran coincides)")
      ->default_str("as-recorded");
  cmd->callback([options, exit_code] {
    Status s = RunAnalyze(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
