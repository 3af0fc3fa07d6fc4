// load_experiments, plan, check and run over the experiments of a YAML file:
// the same loading, validation and results as the command line's --json.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "config/experiment_json.h"
#include "plan/plan_loader.h"
#include "python/bindings.h"
#include "python/py_convert.h"
#include "report/plan_report.h"
#include "runners/registry.h"
#include "runners/run_output.h"
#include "trace/trace_store.h"

namespace shardscope::python {
namespace {

struct Selection {
  std::vector<Experiment> experiments;
  std::vector<std::string> skipped;  // with skip_invalid: why each left-out plan is invalid
};

// The experiment (or sweep) `name` of `config`, all when empty; as
// `--config --experiment [--skip-invalid]` selects them.
StatusOr<Selection> Select(const std::string& config, const std::string& name, bool skip_invalid) {
  LoaderOptions options;
  options.only = name;
  std::vector<Status> skipped;
  Selection out;
  ASSIGN_OR_RETURN(out.experiments,
                   LoadValidExperiments(config, options, skip_invalid ? &skipped : nullptr));
  for (const Status& s : skipped) out.skipped.push_back(s.message());
  return out;
}

// (list of results, skipped messages) for the Python layer to warn about.
py::tuple Result(const nlohmann::json& list, const Selection& s) {
  return py::make_tuple(ToPython(list), py::cast(s.skipped));
}

py::tuple LoadExperiments(const std::string& config, const std::string& name, bool skip_invalid) {
  Selection s = Unwrap(WithoutGil([&] { return Select(config, name, skip_invalid); }));
  nlohmann::json out = nlohmann::json::array();
  for (const Experiment& e : s.experiments) out.push_back(ExperimentToJson(e));
  return Result(out, s);
}

// `build` (BuildPlanReport or BuildCheckReport) and `to_json` for each experiment.
template <typename Build, typename ToJson>
py::tuple Reports(const std::string& config, const std::string& name, bool skip_invalid,
                  Build build, ToJson to_json) {
  Selection s;
  StatusOr<nlohmann::json> out = WithoutGil([&]() -> StatusOr<nlohmann::json> {
    ASSIGN_OR_RETURN(s, Select(config, name, skip_invalid));
    nlohmann::json list = nlohmann::json::array();
    for (const Experiment& e : s.experiments) {
      ASSIGN_OR_RETURN(auto report, build(e));
      list.push_back(to_json(report));
    }
    return list;
  });
  return Result(Unwrap(std::move(out)), s);
}

py::tuple Plan(const std::string& config, const std::string& name, bool skip_invalid) {
  return Reports(config, name, skip_invalid, BuildPlanReport, PlanReportJson);
}

py::tuple Check(const std::string& config, const std::string& name, bool skip_invalid) {
  return Reports(config, name, skip_invalid, BuildCheckReport, CheckReportJson);
}

// `shardscope run`: every selected experiment on `backend` ("": each one's own).
StatusOr<nlohmann::json> RunSelected(Selection& s, const std::string& backend,
                                     const run::RunOptions& options) {
  ASSIGN_OR_RETURN(runners::RunnerSet runners,
                   runners::CreateRunnersFor(&s.experiments, backend, options));
  nlohmann::json out = nlohmann::json::array();
  for (const Experiment& e : s.experiments) {
    auto r = runners.at(std::string(RunnerKindName(e.backend)))->Run(e, options);
    if (!r.ok()) return r.status().WithPrefix(fmt::format("experiment '{}'", e.name));
    // One at a time: RunResultsJson groups by backend, this keeps the file's order.
    out.push_back(runners::RunResultsJson({*r})[0]);
  }
  return out;
}

py::tuple Run(const std::string& config, const std::string& name, bool skip_invalid,
              const std::string& backend, const std::string& trace_root,
              const std::string& trace_file, bool write_trace, int64_t decode_steps,
              const std::string& calibration, const std::string& algorithm,
              const std::string& protocol, const std::string& all_to_all,
              const std::string& hostfile, const std::vector<std::string>& mpirun_args,
              const std::string& worker_binary, const std::string& trace_compression) {
  run::RunOptions o;
  o.config_path = config;
  o.trace_root = trace_root;
  o.trace_file = trace_file;
  o.write_trace = write_trace;
  o.max_decode_steps = decode_steps;
  o.calibration_file = calibration;
  o.allreduce = algorithm;
  o.protocol = protocol;
  o.all_to_all = all_to_all;
  o.hostfile = hostfile;
  o.mpirun_args = mpirun_args;
  o.worker_binary = worker_binary;
  // Ctrl-C in Python: its handler runs here between phases and the run stops.
  o.cancelled = [] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return false;
    PyErr_Clear();  // raised as shardscope.Cancelled (a KeyboardInterrupt) instead
    return true;
  };
  Selection s;
  StatusOr<nlohmann::json> out = WithoutGil([&]() -> StatusOr<nlohmann::json> {
    if (decode_steps < -1) {
      return InvalidArgument("decode_steps must be at least 0 (or None for all), got {}",
                             decode_steps);
    }
    if (write_trace && trace_file.empty()) {
      RETURN_IF_ERROR(trace::TraceStore(trace_root).CheckRoot().WithPrefix("out"));
    }
    ASSIGN_OR_RETURN(s, Select(config, name, skip_invalid));
    if (!trace_compression.empty()) {
      StatusOr<TraceCompression> c = ParseTraceCompression(trace_compression);
      if (!c.ok()) return c.status().WithPrefix("trace_compression");
      for (Experiment& e : s.experiments) e.trace_compression = *c;
    }
    return RunSelected(s, backend, o);
  });
  return Result(Unwrap(std::move(out)), s);
}

}  // namespace

void RegisterExperimentBindings(py::module_& m) {
  m.def("load_experiments", &LoadExperiments, py::kw_only(), py::arg("config"),
        py::arg("experiment") = "", py::arg("skip_invalid") = false,
        "(experiments as dicts, skipped-plan messages) of `config`, `experiment` or all");
  m.def("plan", &Plan, py::kw_only(), py::arg("config"), py::arg("experiment") = "",
        py::arg("skip_invalid") = false, "(plan reports, skipped) as `shardscope plan --json`");
  m.def("check", &Check, py::kw_only(), py::arg("config"), py::arg("experiment") = "",
        py::arg("skip_invalid") = false, "(check reports, skipped) as `shardscope check --json`");
  m.def("run", &Run, py::kw_only(), py::arg("config"), py::arg("experiment") = "",
        py::arg("skip_invalid") = false, py::arg("backend") = "", py::arg("trace_root") = "traces",
        py::arg("trace_file") = "", py::arg("write_trace") = true, py::arg("decode_steps") = -1,
        py::arg("calibration") = "", py::arg("algorithm") = "auto", py::arg("protocol") = "auto",
        py::arg("all_to_all") = "auto", py::arg("hostfile") = "",
        py::arg("mpirun_args") = std::vector<std::string>{}, py::arg("worker_binary") = "",
        py::arg("trace_compression") = "", "(run results, skipped) as `shardscope run --json`");
}

}  // namespace shardscope::python
