#include <iostream>

#include "cli/cli.h"
#include "cli/output_path.h"
#include "report/html_report.h"

namespace shardscope::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> paths;
  std::vector<std::string> baseline;
  std::string output;
  std::string title = "ShardScope report";
  std::string trace_format = "auto";
  std::string align_clocks = "as-recorded";
};

Status RunReport(const ReportOptions& o) {
  std::vector<std::string> inputs = o.paths;
  inputs.insert(inputs.end(), o.baseline.begin(), o.baseline.end());
  RETURN_IF_ERROR(CheckOutputPath("--output", o.output, inputs));
  report::HtmlReportOptions options;
  options.paths = o.paths;
  options.baseline = o.baseline;
  options.title = o.title;
  if (o.trace_format != "auto") {
    ASSIGN_OR_RETURN(options.analyze.format, importers::ParseTraceFormat(o.trace_format));
  }
  ASSIGN_OR_RETURN(options.analyze.alignment, importers::ParseClockAlignment(o.align_clocks));
  RETURN_IF_ERROR(report::WriteHtmlReport(options, o.output));
  std::cout << o.output << "\n";
  return Status::Ok();
}

}  // namespace

void AddReportCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report",
      "One self-contained HTML report (charts and tables) of traces, runs, sweeps or a store");
  cmd->add_option("paths", options->paths, "trace files or directories (as `analyze` takes them)")
      ->required();
  cmd->add_option("--baseline", options->baseline, "traces to compare against (ratios per run)");
  cmd->add_option("-o,--output", options->output, "the HTML file to write (replaced if it exists)")
      ->required();
  cmd->add_option("--title", options->title, "the report's title")
      ->default_str("ShardScope report");
  cmd->add_option("--trace-format", options->trace_format,
                  "auto (detect from the content) or one of: " + importers::TraceFormatNames())
      ->default_str("auto");
  cmd->add_option("--align-clocks", options->align_clocks,
                  "multi-rank sets: as-recorded or collective-end (see `analyze`)")
      ->default_str("as-recorded");
  cmd->callback([options, exit_code] {
    Status s = RunReport(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
