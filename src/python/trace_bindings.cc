// analyze, compare and list_traces: the analyzer's metrics as columns (the Python
// layer makes a DataFrame of them without touching events), comparisons of runs,
// and the trace store.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/ccl_bench_names.h"
#include "analysis/workload_card.h"
#include "python/bindings.h"
#include "python/py_convert.h"
#include "report/comparison.h"
#include "trace/trace_store.h"

namespace shardscope::python {
namespace {

// One run's metrics as parallel columns; an unavailable metric's value is None.
py::dict Columns(const analysis::MetricSet& metrics) {
  py::list name, scope, value, unit, aggregation, unavailable;
  for (const analysis::Metric& m : metrics.metrics()) {
    name.append(m.name);
    scope.append(m.scope);
    value.append(m.value ? py::object(py::float_(*m.value)) : py::object(py::none()));
    unit.append(m.unit);
    aggregation.append(m.aggregation);
    unavailable.append(m.unavailable);
  }
  py::dict out;
  out["name"] = name;
  out["scope"] = scope;
  out["value"] = value;
  out["unit"] = unit;
  out["aggregation"] = aggregation;
  out["unavailable"] = unavailable;
  return out;
}

// Every identity field, "" or None where unknown, so that columns line up.
py::dict Identity(const trace::RunIdentity& id) {
  auto optional = [](const std::optional<int64_t>& v) {
    return v ? py::object(py::int_(*v)) : py::object(py::none());
  };
  py::dict d;
  d["experiment"] = id.experiment;
  d["sweep"] = id.sweep;
  d["hardware"] = id.hardware;
  d["dtype"] = id.dtype;
  d["backend"] = id.backend;
  d["nodes"] = optional(id.nodes);
  d["ranks"] = optional(id.ranks);
  return d;
}

py::list Analyze(const std::vector<std::string>& paths, const std::vector<std::string>& metrics,
                 const std::string& trace_format, const std::string& align_clocks,
                 const std::string& workload_card) {
  auto results = WithoutGil([&]() -> StatusOr<std::vector<analysis::AnalysisResult>> {
    if (paths.empty()) return InvalidArgument("analyze: no trace paths given");
    analysis::AnalyzeOptions options;
    if (!workload_card.empty()) {
      ASSIGN_OR_RETURN(options.extra_metadata, analysis::ReadWorkloadCard(workload_card));
    }
    if (trace_format != "auto") {
      ASSIGN_OR_RETURN(options.format, importers::ParseTraceFormat(trace_format));
    }
    ASSIGN_OR_RETURN(options.alignment, importers::ParseClockAlignment(align_clocks));
    ASSIGN_OR_RETURN(std::vector<analysis::AnalysisResult> out,
                     analysis::AnalyzePaths(paths, options));
    std::vector<const analysis::MetricSet*> sets;
    for (const analysis::AnalysisResult& r : out) sets.push_back(&r.metrics);
    RETURN_IF_ERROR(analysis::CheckMetricNames(sets, metrics));
    for (analysis::AnalysisResult& r : out) {
      r.metrics = analysis::SelectMetrics(r.metrics, metrics);
    }
    return out;
  });
  py::list out;
  for (const analysis::AnalysisResult& r : Unwrap(std::move(results))) {
    py::dict d;
    d["trace"] = r.trace_path;
    d["trace_paths"] = r.trace_paths;
    d["metadata_path"] = r.metadata_path;
    d["format"] = r.format;
    d["identity"] = Identity(r.identity);
    d["warnings"] = r.warnings;
    d["skipped_events"] = r.stats.skipped_total();
    d["read_summary"] = r.stats.Summary();
    d["columns"] = Columns(r.metrics);
    out.append(std::move(d));
  }
  return out;
}

py::object Compare(const std::vector<std::string>& paths, const std::string& baseline,
                   const std::vector<std::string>& metrics, bool per_rank,
                   const std::string& experiment, const std::string& hardware,
                   const std::string& dtype, const std::string& backend) {
  report::CompareOptions options;
  options.metric_names = metrics;
  options.per_rank = per_rank;
  options.runs = {experiment, hardware, dtype, backend};
  auto comparison = Unwrap(WithoutGil([&]() -> StatusOr<nlohmann::ordered_json> {
    if (paths.empty()) return InvalidArgument("compare: no trace paths given");
    ASSIGN_OR_RETURN(report::Comparison c, report::CompareTraces(paths, baseline, options));
    return report::ComparisonJson(c);
  }));
  return ToPython(comparison);
}

py::list ListTraces(const std::string& root, const std::string& model, const std::string& strategy,
                    const std::string& experiment, const std::string& hardware,
                    const std::string& dtype, const std::string& backend) {
  trace::TraceStore store(root);
  const trace::ListFilter filter{model, strategy, {experiment, hardware, dtype, backend}};
  auto traces = Unwrap(WithoutGil([&] { return store.List(filter); }));
  py::list out;
  for (const trace::StoredTrace& t : traces) {
    py::dict d;
    d["model"] = t.key.model;
    d["strategy"] = t.key.strategy;
    d["batch_size"] = t.key.batch_size;
    d["sequence_length"] = t.key.sequence_length;
    d["workload"] = t.key.workload;
    d["timestamp"] = t.timestamp;
    d["trace"] = t.trace_path;
    d["metadata_path"] = t.metadata_path;
    d["trace_bytes"] = t.trace_bytes;
    d["complete"] = t.complete();
    d["identity"] = Identity(t.identity);
    out.append(std::move(d));
  }
  return out;
}

}  // namespace

void RegisterTraceBindings(py::module_& m) {
  m.def("analyze", &Analyze, py::arg("paths"), py::arg("metrics") = std::vector<std::string>{},
        py::arg("trace_format") = "auto", py::arg("align_clocks") = "as-recorded",
        py::arg("workload_card") = "",
        "one dict per run under `paths` (as `shardscope analyze`), metrics as columns");
  m.def("compare", &Compare, py::arg("paths"), py::arg("baseline") = "",
        py::arg("metrics") = std::vector<std::string>{}, py::arg("per_rank") = false,
        py::arg("experiment") = "", py::arg("hardware") = "", py::arg("dtype") = "",
        py::arg("backend") = "",
        "the runs under `paths` side by side (as `shardscope compare --format json`)");
  m.def("list_traces", &ListTraces, py::arg("root") = "traces", py::arg("model") = "",
        py::arg("strategy") = "", py::arg("experiment") = "", py::arg("hardware") = "",
        py::arg("dtype") = "", py::arg("backend") = "",
        "the store's traces (as `shardscope traces list --json`)");
}

}  // namespace shardscope::python
