// compare and list_traces: comparisons of runs and the trace store (analysis_bindings.cc
// has analyze).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/py_convert.h"
#include "report/comparison.h"
#include "trace/trace_store.h"

namespace shardscope::python {
namespace {

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
    d["identity"] = IdentityToPython(t.identity);
    out.append(std::move(d));
  }
  return out;
}

}  // namespace

void RegisterTraceBindings(py::module_& m) {
  m.def("compare", &Compare, py::kw_only(), py::arg("paths"), py::arg("baseline") = "",
        py::arg("metrics") = std::vector<std::string>{}, py::arg("per_rank") = false,
        py::arg("experiment") = "", py::arg("hardware") = "", py::arg("dtype") = "",
        py::arg("backend") = "",
        "the runs under `paths` side by side (as `shardscope compare --format json`)");
  m.def("list_traces", &ListTraces, py::kw_only(), py::arg("root") = "traces",
        py::arg("model") = "", py::arg("strategy") = "", py::arg("experiment") = "",
        py::arg("hardware") = "", py::arg("dtype") = "", py::arg("backend") = "",
        "the store's traces (as `shardscope traces list --json`)");
}

}  // namespace shardscope::python
