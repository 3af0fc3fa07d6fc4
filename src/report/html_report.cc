#include "report/html_report.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/checked_int.h"
#include "report/html_page.h"
#include "report/html_section_util.h"

namespace shardscope::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// "name" for a lone run; sweeps and repeated names get their parallel degrees and sizes.
std::string RunLabel(const json& metadata, const analysis::AnalysisResult& a) {
  const json& name = ExperimentField(metadata, "name");
  if (!name.is_string()) return a.trace_path;
  std::string label = name.get<std::string>();
  const json& sweep = ExperimentField(metadata, "sweep");
  if (sweep.is_string() && !sweep.get<std::string>().empty() && sweep != name) {
    const json& p = ExperimentField(metadata, "parallelism");
    const json& w = ExperimentField(metadata, "workload");
    for (const char* k : {"tp_size", "ep_size", "pp_size", "seq_parallel_size"}) {
      const std::optional<int64_t> n = p.contains(k) ? JsonToInt64(p[k]) : std::nullopt;
      if (n && *n > 1) {
        label += fmt::format(" {}{}", std::string(k).substr(0, std::string(k).find('_')), *n);
      }
    }
    const std::optional<int64_t> seq =
        w.contains("sequence_length") ? JsonToInt64(w["sequence_length"]) : std::nullopt;
    if (seq) label += fmt::format(" seq{}", *seq);
  }
  const json& backend = ExperimentField(metadata, "backend");
  if (backend.is_string() && backend.get<std::string>() != "sim")
    label += " (" + backend.get<std::string>() + ")";
  return label;
}

Status WriteAtomically(const std::string& output, const std::string& content) {
  fs::path out(output);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return NotFound("cannot write {}: folder {} does not exist", output, dir.string());
  std::string tmpl = (dir / ("." + out.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0)
    return IoError("cannot create a temporary file in {}: {}", dir.string(), std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      ::close(fd);
      fs::remove(tmpl, ec);
      return IoError("cannot write {}: {}", tmpl, std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, 0644);
  if (::close(fd) != 0 || std::rename(tmpl.c_str(), output.c_str()) != 0) {
    fs::remove(tmpl, ec);
    return IoError("cannot write {}: {}", output, std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<ReportRun>> LoadReportRuns(const std::vector<std::string>& paths,
                                                const analysis::AnalyzeOptions& options) {
  // Each run is binned into a timeline while the analyzer reads (or imports) it: one
  // pass per run.
  std::map<std::string, TimelineSink> timelines;
  analysis::AnalyzeOptions with_timelines = options;
  with_timelines.also_read_by = [&timelines](const std::string& path) -> trace::TraceSink* {
    return &timelines[path];
  };
  ASSIGN_OR_RETURN(std::vector<analysis::AnalysisResult> results,
                   analysis::AnalyzePaths(paths, with_timelines));
  std::vector<ReportRun> runs;
  for (analysis::AnalysisResult& a : results) {
    ReportRun r;
    r.metadata = std::move(a.metadata);  // the store's sidecar, as the analyzer read it
    r.label = RunLabel(r.metadata, a);
    if (auto it = timelines.find(a.trace_path); it != timelines.end()) {
      r.timeline = it->second.Finish();
      timelines.erase(it);
    }
    r.analysis = std::move(a);
    runs.push_back(std::move(r));
  }
  return runs;
}

json BuildReportData(const std::vector<ReportRun>& runs, const std::vector<ReportRun>& baseline,
                     const std::string& title) {
  std::vector<Section> sections = {SummarySection(runs),   BreakdownSection(runs),
                                   TimelineSection(runs),  TrafficSection(runs),
                                   BandwidthSection(runs), MemorySection(runs),
                                   ExpertSection(runs),    SweepSection(runs),
                                   ServingSection(runs),   ComparisonSection(baseline, runs)};
  json runs_json = json::array();
  for (const ReportRun& r : runs) {
    runs_json.push_back(
        {{"label", r.label}, {"path", r.analysis.trace_path}, {"format", r.analysis.format}});
  }
  json sections_json = json::array();
  for (const Section& s : sections) sections_json.push_back(s.ToJson());
  std::string subtitle = fmt::format("{} run(s)", runs.size());
  if (!baseline.empty()) subtitle += fmt::format(", {} baseline run(s)", baseline.size());
  subtitle += ". Made by `shardscope report`; every chart has its numbers in the table below it.";
  return {
      {"title", title}, {"subtitle", subtitle}, {"runs", runs_json}, {"sections", sections_json}};
}

Status WriteHtmlReport(const HtmlReportOptions& options, const std::string& output) {
  if (output.empty()) return InvalidArgument("no output file (-o report.html)");
  ASSIGN_OR_RETURN(std::string chart_js, LoadChartJs(options.chart_js));
  ASSIGN_OR_RETURN(std::vector<ReportRun> runs, LoadReportRuns(options.paths, options.analyze));
  if (runs.empty()) return NotFound("no trace found under {}", fmt::join(options.paths, ", "));
  std::vector<ReportRun> baseline;
  if (!options.baseline.empty()) {
    ASSIGN_OR_RETURN(baseline, LoadReportRuns(options.baseline, options.analyze));
    if (baseline.empty())
      return NotFound("no baseline trace found under {}", fmt::join(options.baseline, ", "));
  }
  ASSIGN_OR_RETURN(std::string html,
                   RenderHtmlPage(BuildReportData(runs, baseline, options.title), chart_js));
  return WriteAtomically(output, html);
}

}  // namespace shardscope::report
