// open_traces and analyze: the analyzer's results of the runs under some paths, held on the
// C++ side (`Analyses`) so that the Python TraceSet reads the traces once and then asks for
// metric columns (any selection), a served run's requests and each run's description.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/ccl_bench_names.h"
#include "analysis/workload_card.h"
#include "python/bindings.h"
#include "python/py_convert.h"

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

// Seconds of a trace time in ns; None for −1 (not in the trace).
py::object OptionalSeconds(int64_t ns) {
  return ns < 0 ? py::object(py::none()) : py::object(py::float_(static_cast<double>(ns) * 1e-9));
}

py::object Difference(int64_t later_ns, int64_t earlier_ns) {
  if (later_ns < 0 || earlier_ns < 0) return py::none();
  return py::float_(static_cast<double>(later_ns - earlier_ns) * 1e-9);
}

// A run's request spans as parallel columns, with the per-request figures of
// docs/metrics.md "Serving" as analysis/request_metrics.cc defines them: queueing delay
// s − a, TTFT f − a (none for a decode-only request), TPOT (e − f) / (output − 1) for
// more than one output token (e: the last token, else the span's end), e2e r − a.
py::dict RequestColumns(const std::vector<analysis::RequestRec>& requests) {
  py::list replica, id, arrival, prompt, output, warmup, preemptions, decode_only, scheduled,
      first_token, last_token, finish, kv_arrival, queueing, ttft, tpot, e2e;
  for (const analysis::RequestRec& r : requests) {
    const trace::RequestArgs& a = r.args;
    const int64_t last_ns = a.last_token_ns >= 0 ? a.last_token_ns : r.finish_ns;
    replica.append(r.replica);
    id.append(a.id);
    arrival.append(OptionalSeconds(r.arrival_ns));
    prompt.append(a.prompt_tokens);
    output.append(a.output_tokens);
    warmup.append(a.warmup);
    preemptions.append(a.preemptions);
    decode_only.append(a.decode_only);
    scheduled.append(OptionalSeconds(a.scheduled_ns));
    first_token.append(OptionalSeconds(a.first_token_ns));
    last_token.append(OptionalSeconds(last_ns));
    finish.append(OptionalSeconds(r.finish_ns));
    kv_arrival.append(OptionalSeconds(a.kv_arrival_ns));
    queueing.append(Difference(a.scheduled_ns, r.arrival_ns));
    ttft.append(a.decode_only ? py::object(py::none())
                              : Difference(a.first_token_ns, r.arrival_ns));
    if (a.output_tokens > 1 && a.first_token_ns >= 0) {
      tpot.append(static_cast<double>(last_ns - a.first_token_ns) * 1e-9 /
                  static_cast<double>(a.output_tokens - 1));
    } else {
      tpot.append(py::none());
    }
    e2e.append(Difference(r.finish_ns, r.arrival_ns));
  }
  py::dict out;
  out["replica"] = replica;
  out["id"] = id;
  out["arrival_s"] = arrival;
  out["prompt_tokens"] = prompt;
  out["output_tokens"] = output;
  out["warmup"] = warmup;
  out["preemptions"] = preemptions;
  out["decode_only"] = decode_only;
  out["first_scheduled_s"] = scheduled;
  out["first_token_s"] = first_token;
  out["last_token_s"] = last_token;
  out["finish_s"] = finish;
  out["kv_arrival_s"] = kv_arrival;
  out["queueing_delay_s"] = queueing;
  out["ttft_s"] = ttft;
  out["tpot_s"] = tpot;
  out["e2e_latency_s"] = e2e;
  return out;
}

// What a run is, without its metrics: files, format, identity, warnings, read summary and
// the metadata (its sidecar file's or the trace's own; {} without).
py::dict Description(const analysis::AnalysisResult& r) {
  py::dict d;
  d["trace"] = r.trace_path;
  d["trace_paths"] = r.trace_paths;
  d["metadata_path"] = r.metadata_path;
  d["format"] = r.format;
  d["identity"] = IdentityToPython(r.identity);
  d["warnings"] = r.warnings;
  d["skipped_events"] = r.stats.skipped_total();
  d["read_summary"] = r.stats.Summary();
  return d;
}

// The runs under some paths, analysed once.
class Analyses {
 public:
  explicit Analyses(std::vector<analysis::AnalysisResult> runs) : runs_(std::move(runs)) {}

  // One description per run (Description), with "metadata" unless `with_metadata` is false.
  py::list Runs(bool with_metadata) const {
    py::list out;
    for (const analysis::AnalysisResult& r : runs_) {
      py::dict d = Description(r);
      if (with_metadata) d["metadata"] = ToPython(r.metadata);
      out.append(std::move(d));
    }
    return out;
  }

  // Each run's metrics selected as `analyze --metric` does (all when `names` is empty), as
  // Columns; InputError for a name that selects nothing in any run.
  py::list Metrics(const std::vector<std::string>& names) const {
    std::vector<analysis::MetricSet> selected =
        Unwrap(WithoutGil([&]() -> StatusOr<std::vector<analysis::MetricSet>> {
          std::vector<const analysis::MetricSet*> sets;
          for (const analysis::AnalysisResult& r : runs_) sets.push_back(&r.metrics);
          RETURN_IF_ERROR(analysis::CheckMetricNames(sets, names));
          std::vector<analysis::MetricSet> out;
          for (const analysis::AnalysisResult& r : runs_) {
            out.push_back(analysis::SelectMetrics(r.metrics, names));
          }
          return out;
        }));
    py::list out;
    for (const analysis::MetricSet& m : selected) out.append(Columns(m));
    return out;
  }

  // Each run's request spans as RequestColumns (empty columns for a run without).
  py::list Requests() const {
    py::list out;
    for (const analysis::AnalysisResult& r : runs_) out.append(RequestColumns(r.requests));
    return out;
  }

  size_t size() const { return runs_.size(); }

 private:
  std::vector<analysis::AnalysisResult> runs_;
};

std::unique_ptr<Analyses> OpenTraces(const std::vector<std::string>& paths,
                                     const std::string& trace_format,
                                     const std::string& align_clocks,
                                     const std::string& workload_card) {
  auto runs = WithoutGil([&]() -> StatusOr<std::vector<analysis::AnalysisResult>> {
    if (paths.empty()) return InvalidArgument("analyze: no trace paths given");
    analysis::AnalyzeOptions options;
    if (!workload_card.empty()) {
      ASSIGN_OR_RETURN(options.extra_metadata, analysis::ReadWorkloadCard(workload_card));
    }
    if (trace_format != "auto") {
      ASSIGN_OR_RETURN(options.format, importers::ParseTraceFormat(trace_format));
    }
    ASSIGN_OR_RETURN(options.alignment, importers::ParseClockAlignment(align_clocks));
    return analysis::AnalyzePaths(paths, options);
  });
  return std::make_unique<Analyses>(Unwrap(std::move(runs)));
}

// One dict per run: its Description and its selected metrics' Columns.
py::list Analyze(const std::vector<std::string>& paths, const std::vector<std::string>& metrics,
                 const std::string& trace_format, const std::string& align_clocks,
                 const std::string& workload_card) {
  std::unique_ptr<Analyses> a = OpenTraces(paths, trace_format, align_clocks, workload_card);
  py::list columns = a->Metrics(metrics);
  py::list out = a->Runs(/*with_metadata=*/false);
  for (size_t i = 0; i < a->size(); ++i) out[i].cast<py::dict>()["columns"] = columns[i];
  return out;
}

}  // namespace

void RegisterAnalysisBindings(py::module_& m) {
  py::class_<Analyses>(m, "Analyses", "the runs under some paths, analysed once (open_traces)")
      .def("runs", &Analyses::Runs, py::kw_only(), py::arg("with_metadata") = true,
           "one dict per run: trace, trace_paths, metadata_path, format, identity, warnings, "
           "skipped_events, read_summary, metadata")
      .def("metrics", &Analyses::Metrics, py::kw_only(),
           py::arg("names") = std::vector<std::string>{},
           "each run's metrics (selected as `analyze --metric`) as columns")
      .def("requests", &Analyses::Requests, "each run's request spans as columns")
      .def("__len__", &Analyses::size);
  m.def("open_traces", &OpenTraces, py::kw_only(), py::arg("paths"),
        py::arg("trace_format") = "auto", py::arg("align_clocks") = "as-recorded",
        py::arg("workload_card") = "",
        "the runs under `paths` (as `shardscope analyze` groups them), read and analysed once");
  m.def("analyze", &Analyze, py::kw_only(), py::arg("paths"),
        py::arg("metrics") = std::vector<std::string>{}, py::arg("trace_format") = "auto",
        py::arg("align_clocks") = "as-recorded", py::arg("workload_card") = "",
        "one dict per run under `paths` (as `shardscope analyze`), metrics as columns");
}

}  // namespace shardscope::python
