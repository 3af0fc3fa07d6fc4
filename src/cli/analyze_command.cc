#include <iostream>

#include "analysis/analyzer.h"
#include "cli/cli.h"
#include "report/metric_table.h"

namespace shardscope::cli {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string format = "md";
  std::vector<std::string> metrics;
};

Status RunAnalyze(const AnalyzeOptions& o) {
  ASSIGN_OR_RETURN(report::TableFormat format, report::ParseTableFormat(o.format));
  ASSIGN_OR_RETURN(std::vector<std::string> files, analysis::FindTraceFiles(o.paths));
  std::vector<analysis::AnalysisResult> results;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(analysis::AnalysisResult r, analysis::AnalyzeTraceFile(file));
    if (r.stats.skipped_total() > 0) std::cerr << file << ": " << r.stats.Summary() << "\n";
    results.push_back(std::move(r));
  }
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
  cmd->add_option("--metric", options->metrics,
                  "only these metrics (a name selects all its scopes and .suffixes)");
  cmd->callback([options, exit_code] {
    Status s = RunAnalyze(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
