#include "report/comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/ccl_bench_names.h"
#include "analysis/stats.h"
#include "core/units.h"
#include "trace/trace_store.h"

namespace shardscope::report {
namespace {

using analysis::Metric;
using analysis::MetricSet;

bool IsInstanceToken(std::string_view t) {
  bool digit = false;
  for (char c : t) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != ',' && c != '-') {
      return false;
    }
  }
  return digit;
}

// Labels that tell the runs apart: experiment names, with hardware, dtype and
// backend added where names repeat, else "run N".
std::vector<ComparedRun> NameRuns(const std::vector<analysis::AnalysisResult>& runs) {
  std::vector<ComparedRun> out;
  for (const analysis::AnalysisResult& r : runs) {
    out.push_back({r.identity.experiment, r.trace_path, r.metadata_path, r.identity});
  }
  auto repeated = [&](size_t i) {
    return std::count_if(out.begin(), out.end(),
                         [&](const ComparedRun& o) { return o.label == out[i].label; }) > 1;
  };
  std::vector<bool> repeats(out.size());
  for (size_t i = 0; i < out.size(); ++i) repeats[i] = repeated(i);
  for (size_t i = 0; i < out.size(); ++i) {
    const trace::RunIdentity& id = out[i].identity;
    if (!repeats[i] || out[i].label.empty()) continue;
    std::string detail;
    for (const std::string* f : {&id.hardware, &id.dtype, &id.backend}) {
      if (!f->empty()) detail += (detail.empty() ? "" : " ") + *f;
    }
    if (!detail.empty()) out[i].label += " (" + detail + ")";
  }
  for (size_t i = 0; i < out.size(); ++i) repeats[i] = repeated(i);
  for (size_t i = 0; i < out.size(); ++i) {
    if (repeats[i] || out[i].label.empty()) out[i].label = fmt::format("run {}", i + 1);
  }
  return out;
}

// The metrics of one (name, scope) over the runs: one per run, or the instances
// of a summarised scope.
struct Slot {
  std::string name, scope, unit;
  bool summarised = false;
  std::vector<std::vector<const Metric*>> per_run;
};

void AddRatios(size_t baseline, ComparisonRow* row) {
  row->ratios.assign(row->values.size(), std::nullopt);
  const std::optional<double>& base = row->values[baseline];
  if (!base || *base == 0) return;
  for (size_t i = 0; i < row->values.size(); ++i) {
    if (row->values[i]) row->ratios[i] = *row->values[i] / *base;
  }
}

ComparisonRow RowOf(const Slot& s, size_t runs) {
  ComparisonRow row;
  row.metric = s.name;
  row.scope = s.scope;
  row.unit = s.unit;
  row.summarised = s.summarised;
  row.values.assign(runs, std::nullopt);
  row.unavailable.assign(runs, "");
  if (s.summarised) {
    row.min.assign(runs, std::nullopt);
    row.max.assign(runs, std::nullopt);
    row.instances.assign(runs, 0);
  }
  for (size_t i = 0; i < runs; ++i) {
    std::vector<double> values;
    for (const Metric* m : s.per_run[i]) {
      if (m->value) values.push_back(*m->value);
    }
    if (values.empty()) {
      if (!s.per_run[i].empty()) row.unavailable[i] = s.per_run[i][0]->unavailable;
      continue;
    }
    if (!s.summarised) {
      row.values[i] = values[0];
      continue;
    }
    const analysis::Summary summary = analysis::Summarize(&values);
    row.values[i] = summary.p50;
    row.min[i] = summary.min;
    row.max[i] = summary.max;
    row.instances[i] = summary.count;
  }
  return row;
}

nlohmann::ordered_json Optional(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// Reasons for "not available", numbered in order of appearance: a reason is
// printed once under the table, not in every column.
class Footnotes {
 public:
  size_t Number(const std::string& reason) {
    auto [it, added] = index_.try_emplace(reason, reasons_.size() + 1);
    if (added) reasons_.push_back(reason);
    return it->second;
  }
  std::string Render() const {
    std::string out;
    for (size_t i = 0; i < reasons_.size(); ++i) {
      out += fmt::format("{}[{}] not available: {}\n", i == 0 ? "\n" : "", i + 1, reasons_[i]);
    }
    return out;
  }

 private:
  std::map<std::string, size_t> index_;
  std::vector<std::string> reasons_;
};

std::string Cell(const ComparisonRow& row, size_t i, size_t baseline, Footnotes* notes) {
  if (!row.values[i]) {
    if (row.unavailable[i].empty()) return "—";
    return fmt::format("not available [{}]", notes->Number(row.unavailable[i]));
  }
  std::string cell = FormatValue(*row.values[i], row.unit);
  if (i != baseline && row.ratios[i])
    cell += fmt::format(" ({}×)", FormatNumber(*row.ratios[i], 3));
  if (row.summarised && *row.min[i] != *row.max[i]) {
    cell += fmt::format(" [{} … {}]", FormatValue(*row.min[i], row.unit),
                        FormatValue(*row.max[i], row.unit));
  }
  return cell;
}

std::string Or(const std::string& s, std::string_view dash = "—") {
  return s.empty() ? std::string(dash) : s;
}

std::string RenderMarkdown(const Comparison& c) {
  std::string out =
      fmt::format("baseline: {}; ratios (×) are each run's value ÷ the baseline's\n\n",
                  c.runs[c.baseline].label);
  // The experiment column only where a label is not the experiment's name.
  const bool named = std::all_of(c.runs.begin(), c.runs.end(), [](const ComparedRun& r) {
    return r.label == r.identity.experiment;
  });
  out += named ? "| run | hardware | dtype | backend | size | trace |\n|---|---|---|---|---|---|\n"
               : "| run | experiment | hardware | dtype | backend | size | trace |\n"
                 "|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < c.runs.size(); ++i) {
    const ComparedRun& r = c.runs[i];
    out += fmt::format("| {}{} |", r.label, i == c.baseline ? " (baseline)" : "");
    if (!named) out += fmt::format(" {} |", Or(r.identity.experiment));
    out += fmt::format(" {} | {} | {} | {} | {} |\n", Or(r.identity.hardware), Or(r.identity.dtype),
                       Or(r.identity.backend), Or(trace::NodesAndRanks(r.identity)), r.trace);
  }
  out += "\n| metric |";
  for (const ComparedRun& r : c.runs) out += fmt::format(" {} |", r.label);
  out += "\n|---|";
  for (size_t i = 0; i < c.runs.size(); ++i) out += "---|";
  out += "\n";
  bool summarised = false;
  Footnotes notes;
  for (const ComparisonRow& row : c.rows) {
    summarised |= row.summarised;
    out += fmt::format("| {} |", row.Label());
    for (size_t i = 0; i < c.runs.size(); ++i) {
      out += " " + Cell(row, i, c.baseline, &notes) + " |";
    }
    out += "\n";
  }
  out += notes.Render();
  if (summarised) {
    out +=
        "\nA scope with * is summarised over its ranks, groups or layers: the median, and "
        "[min … max] where they differ; --per-rank lists every one.\n";
  }
  return out;
}

}  // namespace

nlohmann::ordered_json ComparisonJson(const Comparison& c) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const ComparedRun& r : c.runs) {
    nlohmann::ordered_json j = {{"label", r.label}, {"trace", r.trace}, {"metadata", r.metadata}};
    const nlohmann::ordered_json identity = trace::RunIdentityJson(r.identity);
    for (const auto& [k, v] : identity.items()) j[k] = v;
    runs.push_back(std::move(j));
  }
  nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
  for (const ComparisonRow& row : c.rows) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    nlohmann::ordered_json ratios = nlohmann::ordered_json::array();
    for (size_t i = 0; i < c.runs.size(); ++i) {
      values.push_back(Optional(row.values[i]));
      ratios.push_back(Optional(row.ratios[i]));
    }
    nlohmann::ordered_json e = {{"metric", row.metric}, {"scope", row.scope},
                                {"unit", row.unit},     {"summarised", row.summarised},
                                {"values", values},     {"ratios", ratios}};
    if (row.summarised) {
      nlohmann::ordered_json min = nlohmann::ordered_json::array();
      nlohmann::ordered_json max = nlohmann::ordered_json::array();
      for (size_t i = 0; i < c.runs.size(); ++i) {
        min.push_back(Optional(row.min[i]));
        max.push_back(Optional(row.max[i]));
      }
      e["min"] = std::move(min);
      e["max"] = std::move(max);
      e["instances"] = row.instances;
    }
    if (std::any_of(row.unavailable.begin(), row.unavailable.end(),
                    [](const std::string& s) { return !s.empty(); })) {
      e["unavailable"] = row.unavailable;
    }
    metrics.push_back(std::move(e));
  }
  nlohmann::ordered_json j = {{"baseline", c.runs[c.baseline].label},
                              {"per_rank", c.per_rank},
                              {"runs", runs},
                              {"metrics", metrics}};
  return j;
}

namespace {

std::string RenderCsv(const Comparison& c) {
  std::string out =
      "metric,scope,unit,run,trace,experiment,hardware,dtype,backend,value,ratio,min,max,"
      "instances,unavailable\n";
  auto number = [](const std::optional<double>& v) { return v ? CsvNumber(*v) : std::string(); };
  for (const ComparisonRow& row : c.rows) {
    for (size_t i = 0; i < c.runs.size(); ++i) {
      const ComparedRun& r = c.runs[i];
      out += fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(row.metric),
          CsvField(row.scope), CsvField(row.unit), CsvField(r.label), CsvField(r.trace),
          CsvField(r.identity.experiment), CsvField(r.identity.hardware),
          CsvField(r.identity.dtype), CsvField(r.identity.backend), number(row.values[i]),
          number(row.ratios[i]), row.summarised ? number(row.min[i]) : "",
          row.summarised ? number(row.max[i]) : "",
          row.summarised ? std::to_string(row.instances[i]) : "", CsvField(row.unavailable[i]));
    }
  }
  return out;
}

}  // namespace

std::string ComparisonRow::Label() const {
  return scope.empty() ? metric : metric + "[" + scope + "]";
}

std::string InstanceWildcard(std::string_view scope) {
  std::string out;
  bool any = false;
  size_t start = 0;
  for (int token = 0; start <= scope.size(); ++token) {
    size_t end = scope.find(' ', start);
    if (end == std::string_view::npos) end = scope.size();
    std::string_view t = scope.substr(start, end - start);
    const bool instance = token > 0 && IsInstanceToken(t);
    any |= instance;
    if (token > 0) out += ' ';
    out += instance ? std::string_view("*") : t;
    start = end + 1;
  }
  return any ? out : "";
}

Comparison CompareAnalyses(const std::vector<analysis::AnalysisResult>& runs, size_t baseline,
                           const CompareOptions& options) {
  Comparison c;
  c.runs = NameRuns(runs);
  c.baseline = baseline;
  c.per_rank = options.per_rank;
  std::vector<MetricSet> sets;
  for (const analysis::AnalysisResult& r : runs) {
    sets.push_back(analysis::SelectMetrics(r.metrics, options.metric_names));
  }
  std::vector<Slot> slots;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < sets.size(); ++i) {
    for (const Metric& m : sets[i].metrics()) {
      std::string wildcard = options.per_rank ? "" : InstanceWildcard(m.scope);
      const bool summarised = !wildcard.empty();
      std::string scope = summarised ? wildcard : m.scope;
      auto [it, added] = index.try_emplace({m.name, scope}, slots.size());
      if (added) {
        slots.push_back({m.name, scope, m.unit, summarised, {}});
        slots.back().per_run.resize(sets.size());
      }
      slots[it->second].per_run[i].push_back(&m);
    }
  }
  for (const Slot& s : slots) {
    ComparisonRow row = RowOf(s, sets.size());
    AddRatios(baseline, &row);
    c.rows.push_back(std::move(row));
  }
  return c;
}

StatusOr<Comparison> CompareTraces(const std::vector<std::string>& paths,
                                   const std::string& baseline_path, const CompareOptions& options,
                                   std::vector<analysis::AnalysisResult>* analyses) {
  namespace fs = std::filesystem;
  std::vector<std::string> inputs = paths;
  if (!options.runs.empty()) {
    // Filtered on the metadata before any trace is read: a store holds many runs.
    ASSIGN_OR_RETURN(std::vector<std::string> files, analysis::FindTraceFiles(paths));
    inputs.clear();
    for (const std::string& file : files) {
      const std::string metadata = trace::StoreMetadataPathFor(file);
      std::error_code ec;
      if (metadata.empty() || !fs::exists(metadata, ec)) continue;  // nothing to match
      ASSIGN_OR_RETURN(trace::RunIdentity identity, trace::ReadRunIdentity(metadata));
      if (options.runs.Matches(identity)) inputs.push_back(file);
    }
    if (inputs.empty() && baseline_path.empty()) {
      return InvalidArgument("compare: no run under {} matches the filters",
                             fmt::join(paths, ", "));
    }
  }
  std::vector<analysis::AnalysisResult> runs;
  if (!inputs.empty()) {
    ASSIGN_OR_RETURN(runs, analysis::AnalyzePaths(inputs));
  }
  if (!baseline_path.empty()) {
    ASSIGN_OR_RETURN(std::vector<analysis::AnalysisResult> base,
                     analysis::AnalyzePaths({baseline_path}));
    if (base.size() != 1) {
      return InvalidArgument(
          "baseline {}: holds {} runs; name one run (a trace file or one run's rank files)",
          baseline_path, base.size());
    }
    auto same_files = [](const analysis::AnalysisResult& a, const analysis::AnalysisResult& b) {
      std::error_code ea, eb;
      return a.trace_paths.size() == b.trace_paths.size() &&
             fs::weakly_canonical(a.trace_paths[0], ea) ==
                 fs::weakly_canonical(b.trace_paths[0], eb);
    };
    std::erase_if(runs, [&](const analysis::AnalysisResult& r) { return same_files(r, base[0]); });
    runs.insert(runs.begin(), std::move(base[0]));
  }
  if (runs.size() < 2) {
    return InvalidArgument("compare: {} hold{} {} run{}; compare needs at least 2",
                           fmt::join(paths, ", "), paths.size() == 1 ? "s" : "", runs.size(),
                           runs.size() == 1 ? "" : "s");
  }
  std::vector<const MetricSet*> sets;
  for (const analysis::AnalysisResult& r : runs) sets.push_back(&r.metrics);
  RETURN_IF_ERROR(analysis::CheckMetricNames(sets, options.metric_names));
  Comparison c = CompareAnalyses(runs, 0, options);
  if (analyses) *analyses = std::move(runs);
  return c;
}

std::string RenderComparison(const Comparison& c, TableFormat format) {
  switch (format) {
    case TableFormat::kJson:
      return ComparisonJson(c).dump(2) + "\n";
    case TableFormat::kCsv:
      return RenderCsv(c);
    case TableFormat::kMarkdown:
      return RenderMarkdown(c);
  }
  return "";
}

}  // namespace shardscope::report
