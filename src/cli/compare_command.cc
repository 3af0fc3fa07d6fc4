#include <iostream>

#include "analysis/analyzer.h"
#include "cli/cli.h"
#include "report/metric_table.h"

namespace shardscope::cli {
namespace {

struct CompareOptions {
  std::string baseline;
  std::string proposed;
  std::string format = "md";
  std::vector<std::string> metrics;
};

Status RunCompare(const CompareOptions& o) {
  ASSIGN_OR_RETURN(report::TableFormat format, report::ParseTableFormat(o.format));
  ASSIGN_OR_RETURN(analysis::AnalysisResult base, analysis::AnalyzeTraceFile(o.baseline));
  ASSIGN_OR_RETURN(analysis::AnalysisResult prop, analysis::AnalyzeTraceFile(o.proposed));
  for (const auto* r : {&base, &prop}) {
    if (r->stats.skipped_total() > 0)
      std::cerr << r->trace_path << ": " << r->stats.Summary() << "\n";
  }
  std::cout << report::RenderComparison(base, prop, o.metrics, format);
  return Status::Ok();
}

}  // namespace

void AddCompareCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Two traces' metrics side by side with the ratio and the change in percent");
  cmd->add_option("baseline", options->baseline, "baseline trace file")->required();
  cmd->add_option("proposed", options->proposed, "proposed trace file")->required();
  cmd->add_option("--format", options->format, "md, json or csv")->default_str("md");
  cmd->add_option("--metric", options->metrics, "only these metrics");
  cmd->callback([options, exit_code] {
    Status s = RunCompare(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
