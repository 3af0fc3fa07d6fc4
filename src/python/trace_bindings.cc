// analyze and list_traces: the analyzer's metrics as columns (the Python layer
// makes a DataFrame of them without touching events) and the trace store.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/ccl_bench_names.h"
#include "analysis/workload_card.h"
#include "python/bindings.h"
#include "python/py_convert.h"
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
    d["warnings"] = r.warnings;
    d["skipped_events"] = r.stats.skipped_total();
    d["read_summary"] = r.stats.Summary();
    d["columns"] = Columns(r.metrics);
    out.append(std::move(d));
  }
  return out;
}

py::list ListTraces(const std::string& root, const std::string& model,
                    const std::string& strategy) {
  trace::TraceStore store(root);
  auto traces = Unwrap(WithoutGil([&] { return store.List({model, strategy}); }));
  py::list out;
  for (const trace::StoredTrace& t : traces) {
    py::dict d;
    d["model"] = t.key.model;
    d["strategy"] = t.key.strategy;
    d["batch_size"] = t.key.batch_size;
    d["sequence_length"] = t.key.sequence_length;
    d["timestamp"] = t.timestamp;
    d["trace"] = t.trace_path;
    d["metadata_path"] = t.metadata_path;
    d["trace_bytes"] = t.trace_bytes;
    d["complete"] = t.complete();
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
  m.def("list_traces", &ListTraces, py::arg("root") = "traces", py::arg("model") = "",
        py::arg("strategy") = "", "the store's traces (as `shardscope traces list --json`)");
}

}  // namespace shardscope::python
