#include "calibrate/validate.h"

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "analysis/analyzer.h"
#include "calibrate/measured_routing.h"
#include "importers/importer.h"
#include "sim/simulator.h"

namespace shardscope::calibrate {
namespace {

namespace fs = std::filesystem;

// Σ op time per (phase, op kind) over all ranks; comm ops by collective and
// dimension ("all_reduce.tp"), since their kind alone does not say what moved.
// Keeps the trace's metadata too (the analyzer keeps it in RunData only).
class KindTimes : public trace::TraceSink {
 public:
  void OnOp(const trace::OpEvent& op) override {
    if (op.category == trace::Category::kOther) return;
    // Foreign kernels have no op kind: one row for all of them, not one per kernel name.
    std::string name = op.kind.empty() ? "(no op kind)" : op.kind;
    if (op.is_comm()) {
      name = std::string(CollectiveName(op.collective));
      if (op.dim != Dim::kNone) name += "." + std::string(DimName(op.dim));
    }
    seconds[{op.phase, name}] += static_cast<double>(op.dur_ns) * 1e-9;
    if (!op.is_comm()) compute[op.phase] += static_cast<double>(op.dur_ns) * 1e-9;
    ranks.insert(op.rank);
  }
  void OnMetadata(const nlohmann::json& m) override { metadata = m; }
  std::map<std::pair<trace::Phase, std::string>, double> seconds;
  std::map<trace::Phase, double> compute;
  std::set<int32_t> ranks;
  nlohmann::json metadata = nlohmann::json::object();
};

struct Side {
  analysis::AnalysisResult analysis;
  KindTimes kinds;
  double decode_steps = 0;
};

StatusOr<Side> Measure(const std::string& path) {
  Side side;
  ASSIGN_OR_RETURN(side.analysis, analysis::AnalyzeTraceFile(path));
  // The format the analysis detected, passed on: the file is not detected twice.
  auto format = importers::ParseTraceFormat(side.analysis.format);
  ASSIGN_OR_RETURN(importers::ImportResult imported,
                   importers::ImportTrace(path, format.ok() ? std::optional(*format) : std::nullopt,
                                          &side.kinds));
  (void)imported;
  if (const auto* m = side.analysis.metrics.Find("decode_steps"); m && m->value) {
    side.decode_steps = *m->value;
  }
  return side;
}

std::optional<double> Metric(const Side& s, std::string_view key) {
  const analysis::Metric* m = s.analysis.metrics.Find(key);
  if (m == nullptr || !m->value) return std::nullopt;
  return *m->value;
}

// What the measured trace's metadata says that differs from `e`.
void CompareMetadata(const Experiment& e, const nlohmann::json& metadata,
                     std::vector<std::string>* warnings) {
  if (!metadata.contains("experiment") || !metadata["experiment"].is_object()) {
    warnings->push_back("the measured trace names no experiment: compared as given");
    return;
  }
  const nlohmann::json& m = metadata["experiment"];
  const std::string name = m.value("name", "");
  if (name != e.name) {
    warnings->push_back(
        fmt::format("the measured trace is of experiment '{}', not '{}'", name, e.name));
  }
  if (m.contains("workload") && m["workload"].is_object()) {
    const auto& w = m["workload"];
    auto differs = [&](const char* key, int64_t ours) {
      if (w.contains(key) && w[key].is_number_integer() && w[key].get<int64_t>() != ours) {
        warnings->push_back(fmt::format("workload.{}: measured {}, simulated {}", key,
                                        w[key].get<int64_t>(), ours));
      }
    };
    differs("batch_size", e.workload.batch_size);
    differs("sequence_length", e.workload.sequence_length);
    differs("tokens_to_generate", e.workload.tokens_to_generate);
  }
}

}  // namespace

std::optional<double> ValidationRow::error() const {
  if (!simulated || !measured || *measured == 0) return std::nullopt;
  return (*simulated - *measured) / *measured;
}

StatusOr<ValidationResult> ValidateExperiment(const Experiment& experiment,
                                              const std::vector<std::string>& measured_traces,
                                              const ValidateOptions& options) {
  if (measured_traces.empty()) return InvalidArgument("validate: no measured trace given");
  ValidationResult result;
  result.experiment = experiment.name;
  result.measured_traces = measured_traces;
  std::vector<Side> measured;
  for (const std::string& path : measured_traces) {
    ASSIGN_OR_RETURN(Side side, Measure(path));
    std::vector<std::string> warnings;
    CompareMetadata(experiment, side.kinds.metadata, &warnings);
    measured.push_back(std::move(side));
    for (std::string& w : warnings) {
      if (measured_traces.size() > 1) w = fmt::format("{}: {}", path, w);
      result.warnings.push_back(std::move(w));
    }
  }

  sim::SimOptions sim_options;
  sim_options.calibration_file = options.calibration_file;
  const bool temporary = options.sim_trace.empty();
  sim_options.trace_file =
      temporary ? (fs::temp_directory_path() /
                   fmt::format("shardscope_validate_{}_{}.trace", getpid(), experiment.name))
                      .string()
                : options.sim_trace;
  Experiment simulated_experiment = experiment;
  if (options.measured_routing && experiment.model.is_moe()) {
    ASSIGN_OR_RETURN(MeasuredRouting routing,
                     ReadMeasuredRouting(measured_traces.front(), experiment));
    if (!routing.layer_weights.empty()) {
      simulated_experiment = WithMeasuredRouting(experiment, routing);
      result.routing = fmt::format(
          "the measured split per layer ({}, {} layers; busiest EP rank {:.2f}× the mean)",
          routing.source, routing.layer_weights.size(), routing.imbalance);
    } else {
      result.warnings.push_back(
          "the measured trace records no routed-token split: simulated with the experiment's "
          "routing");
    }
  }
  ASSIGN_OR_RETURN(sim::SimResult simulated,
                   sim::SimulateExperiment(simulated_experiment, sim_options));
  result.calibration = simulated.calibration_source;
  result.terms = simulated.terms;
  StatusOr<Side> sim_side = Measure(sim_options.trace_file);
  if (temporary) fs::remove(sim_options.trace_file);
  if (!sim_side.ok()) return sim_side.status().WithPrefix("the simulated trace");

  // One row: the simulated value, and the measured runs' mean, smallest and largest.
  auto add = [&](std::string scope, std::string name, std::string unit,
                 const std::function<std::optional<double>(const Side&)>& value) {
    ValidationRow row{
        std::move(scope), std::move(name), std::move(unit), value(*sim_side), {}, {}, {}, 0};
    double sum = 0;
    for (const Side& side : measured) {
      const std::optional<double> v = value(side);
      if (!v) continue;
      sum += *v;
      ++row.runs;
      row.measured_min = std::min(row.measured_min.value_or(*v), *v);
      row.measured_max = std::max(row.measured_max.value_or(*v), *v);
    }
    if (row.runs > 0) row.measured = sum / row.runs;
    result.rows.push_back(std::move(row));
  };
  // (No structured bindings here: lambdas capture them from C++20 on, clang-tidy 14's
  // parser does not take that.)
  for (const auto& metric :
       std::vector<std::pair<std::string, std::string>>{{"ttft", "s"},
                                                        {"tpot", "s"},
                                                        {"prefill_throughput", "tokens/s"},
                                                        {"decode_throughput", "tokens/s"},
                                                        {"tps", "tokens/s"}}) {
    const std::string& key = metric.first;
    add("run", key, metric.second, [&key](const Side& side) { return Metric(side, key); });
  }
  // Per phase and op kind: mean time per rank (per decode step for decode),
  // and the kind's share of the phase's compute (comm: of the phase's compute too).
  std::set<std::pair<trace::Phase, std::string>> keys;
  for (const auto& [k, v] : sim_side->kinds.seconds) keys.insert(k);
  for (const Side& side : measured) {
    for (const auto& [k, v] : side.kinds.seconds) keys.insert(k);
  }
  auto per_rank = [](const Side& side, trace::Phase phase,
                     double seconds) -> std::optional<double> {
    const double ranks = static_cast<double>(side.kinds.ranks.size());
    if (ranks == 0) return std::nullopt;
    double v = seconds / ranks;
    if (phase == trace::Phase::kDecode) {
      if (side.decode_steps <= 0) return std::nullopt;
      v /= side.decode_steps;
    }
    return v;
  };
  for (trace::Phase phase : {trace::Phase::kPrefill, trace::Phase::kDecode}) {
    const std::string scope(trace::PhaseName(phase));
    const std::string unit = phase == trace::Phase::kDecode ? "s per step" : "s";
    auto total = [&](const Side& side) -> std::optional<double> {
      auto it = side.kinds.compute.find(phase);
      if (it == side.kinds.compute.end()) return std::nullopt;
      return per_rank(side, phase, it->second);
    };
    add(scope, "compute (all kinds)", unit, total);
    for (const auto& entry : keys) {
      const auto p = entry.first;
      const std::string& name = entry.second;
      if (p != phase) continue;
      auto value = [&](const Side& side) -> std::optional<double> {
        auto it = side.kinds.seconds.find({p, name});
        return per_rank(side, phase, it == side.kinds.seconds.end() ? 0 : it->second);
      };
      add(scope, name, unit, value);
    }
  }
  return result;
}

StatusOr<std::string> RenderValidation(const ValidationResult& r, const std::string& format) {
  auto num = [](std::optional<double> v) {
    return v ? fmt::format("{:.4g}", *v) : std::string("-");
  };
  auto err = [](std::optional<double> v) {
    return v ? fmt::format("{:+.1f} %", 100 * *v) : std::string("-");
  };
  std::string out;
  if (format == "md") {
    const size_t runs = r.measured_traces.size();
    out = runs == 1 ? fmt::format("experiment {}; measured {}; simulated with {}\n", r.experiment,
                                  r.measured_traces[0], r.calibration)
                    : fmt::format(
                          "experiment {}; measured: the mean of {} runs ({}); simulated with {}\n",
                          r.experiment, runs, fmt::join(r.measured_traces, ", "), r.calibration);
    if (!r.terms.empty()) {
      out += fmt::format("fidelity terms on: {}\n", fmt::join(r.terms, ", "));
    }
    if (!r.routing.empty()) out += fmt::format("routing: {}\n", r.routing);
    for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
    if (runs == 1) {
      out +=
          "\n| scope | metric / op kind | unit | simulated | measured | error |\n"
          "|---|---|---|---|---|---|\n";
    } else {
      out +=
          "\n| scope | metric / op kind | unit | simulated | measured (mean) | error | measured "
          "min – max | runs |\n"
          "|---|---|---|---|---|---|---|---|\n";
    }
    for (const ValidationRow& row : r.rows) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} |", row.scope, row.name, row.unit,
                         num(row.simulated), num(row.measured), err(row.error()));
      if (runs > 1) {
        out +=
            fmt::format(" {} – {} | {} |", num(row.measured_min), num(row.measured_max), row.runs);
      }
      out += "\n";
    }
    return out;
  }
  if (format == "csv") {
    out = "experiment,scope,name,unit,simulated,measured,error,measured_min,measured_max,runs\n";
    for (const ValidationRow& row : r.rows) {
      auto c = [](std::optional<double> v) { return v ? fmt::format("{:.9g}", *v) : ""; };
      out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", r.experiment, row.scope, row.name,
                         row.unit, c(row.simulated), c(row.measured), c(row.error()),
                         c(row.measured_min), c(row.measured_max), row.runs);
    }
    return out;
  }
  return InvalidArgument("--format is '{}': expected md or csv", format);
}

}  // namespace shardscope::calibrate
