#include "analysis/ccl_bench_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace shardscope::analysis {
namespace {

constexpr std::string_view kKernelNames =
    "CCL-Bench classifies GPU kernels by their names; our trace model keeps ops by kind and "
    "category, not kernel names";
constexpr std::string_view kMemcpy =
    "needs memcpy events (bytes and durations), which our trace model does not keep; mbu and "
    "achieved_memory_bandwidth report HBM traffic instead";
constexpr std::string_view kHockney =
    "a least-squares fit of all-reduce time against message size; not computed yet";

// The table. docs/metrics.md ("CCL-Bench compatibility") says what each CCL-Bench tool
// computes and how ours differs. (Data, not logic: exempt from the function size limit.)
// NOLINTNEXTLINE(readability-function-size)
const std::vector<CclBenchMetric>& Table() {
  static const std::vector<CclBenchMetric> table = {
      // Step / timing.
      {.name = "avg_step_time", .ours = "step_time.mean", .unit = "s"},
      {.name = "wall_time_s", .ours = "wall_time", .unit = "s"},
      {.name = "total_compute_time_s", .ours = "compute_time.mean", .unit = "s"},
      {.name = "total_trace_time", .ours = "wall_time", .unit = "s"},
      {.name = "total_kernel_time", .ours = "busy_time.mean", .times = "ranks", .unit = "s"},
      {.name = "break_down_steps",
       .unit = "s",
       .unavailable = "a training-step breakdown (forward, backward, optimizer), outside our "
                      "inference model; compute_time, comm_time and idle_time per phase give "
                      "ours"},
      // Inference latency.
      {.name = "ttft", .ours = "ttft", .unit = "s"},
      {.name = "tpot", .ours = "tpot", .unit = "s"},
      {.name = "ttft_group_6", .ours = "ttft", .scale = 1e3, .unit = "ms"},
      {.name = "tpot_group_6", .ours = "tpot", .scale = 1e3, .unit = "ms"},
      // Utilisation / efficiency.
      {.name = "mfu", .ours = "mfu.mean", .scale = 100, .unit = "%"},
      {.name = "mean_sm_coverage",
       .unit = "%",
       .unavailable = "needs each kernel's launch grid (blocks per SM), which our trace model "
                      "does not keep"},
      {.name = "aggregate_gpu_utilization",
       .ours = "busy_time.mean",
       .divisor = "wall_time",
       .scale = 100,
       .unit = "%"},
      {.name = "compute_utilization_proxy",
       .ours = "compute_time.mean",
       .divisor = "wall_time",
       .unit = "ratio"},
      {.name = "gpu_step_score",
       .unit = "ratio",
       .unavailable = "a score against baseline constants (G0, T0, w) read from a side file, "
                      "not a measurement; outside our model (see step_time.mean and ranks)"},
      {.name = "dominant_kernel_concentration", .unit = "%", .unavailable = kKernelNames},
      {.name = "moe_fraction", .unit = "%", .unavailable = kKernelNames},
      {.name = "memory_bound_fraction", .unit = "%", .unavailable = kKernelNames},
      {.name = "compute_bound_fraction", .unit = "%", .unavailable = kKernelNames},
      {.name = "kernel_compute_time_group_6", .ours = "compute_time.mean", .unit = "s"},
      // Communication.
      {.name = "communication_fraction", .ours = "comm_fraction", .scale = 100, .unit = "%"},
      {.name = "communication_ratio", .ours = "comm_fraction", .scale = 100, .unit = "%"},
      {.name = "communication_overlap_ratio", .ours = "overlap", .unit = "ratio"},
      {.name = "compute_comm_overlap", .ours = "overlap", .scale = 100, .unit = "%"},
      {.name = "total_communication_time", .ours = "comm_time.mean", .unit = "s"},
      {.name = "total_comm_time_s", .ours = "comm_time.mean", .unit = "s"},
      {.name = "avg_comm_kernel_time_s", .ours = "comm_op_duration.mean", .unit = "s"},
      {.name = "allreduce_comm_time_s",
       .ours = "comm_op_time[collective all_reduce]",
       .unit = "s",
       .zero_unless = "comm_op_time"},
      {.name = "num_comm_kernels", .ours = "comm_ops", .unit = "count"},
      {.name = "coll_call_num", .ours = "comm_ops", .unit = "count"},
      {.name = "communication_overhead", .ours = "comm_fraction", .unit = "ratio"},
      {.name = "comm_kernel_breakdown_tpu", .ours = "comm_op_time[collective *]", .unit = "s"},
      {.name = "straggler", .ours = "straggler_slowdown", .unit = "ratio"},
      {.name = "straggler_metrics", .ours = "straggler_slowdown", .unit = "ratio"},
      {.name = "load_imbalance_ratio", .ours = "compute_imbalance", .unit = "ratio"},
      {.name = "traffic_window", .ours = "comm_op_time[dim *]", .unit = "s"},
      // Bandwidth.
      {.name = "average_memory_bandwidth", .unit = "GB/s", .unavailable = kMemcpy},
      {.name = "memory_transfer_overhead", .unit = "%", .unavailable = kMemcpy},
      {.name = "avg_comm_bandwidth_GBps", .ours = "busbw", .scale = 1e-9, .unit = "GB/s"},
      {.name = "bandwidth_utilization_allgather_group_6",
       .ours = "busbw_util[collective all_gather]",
       .unit = "ratio"},
      {.name = "bandwidth_utilization_allreduce_group_6",
       .ours = "busbw_util[collective all_reduce]",
       .unit = "ratio"},
      {.name = "bandwidth_utilization_alltoall_group_6",
       .ours = "busbw_util[collective all_to_all]",
       .unit = "ratio"},
      {.name = "bandwidth_utilization_reducescatter_group_6",
       .ours = "busbw_util[collective reduce_scatter]",
       .unit = "ratio"},
      {.name = "bandwidth_utilization_peertopeer_group_6",
       .ours = "busbw_util[collective send]",
       .unit = "ratio"},
      {.name = "bandwidth_utilization", .ours = "busbw_util", .unit = "ratio"},
      {.name = "scale_up_bw_utility",
       .unit = "%",
       .unavailable = "a what-if from two Astra-Sim simulations (scale-up bandwidth doubled), "
                      "not a trace measurement; outside trace analysis (simulate the plan on "
                      "a modified cluster instead)"},
      {.name = "estimated_bandwidth",
       .ours = "achieved_memory_bandwidth.mean",
       .scale = 1e-9,
       .unit = "GB/s"},
      // Collective data volume.
      {.name = "collective_vol_allreduce_gb",
       .ours = "payload_bytes[collective all_reduce]",
       .scale = 1e-9,
       .unit = "GB",
       .zero_unless = "payload_bytes"},
      {.name = "collective_vol_allgather_gb",
       .ours = "payload_bytes[collective all_gather]",
       .scale = 1e-9,
       .unit = "GB",
       .zero_unless = "payload_bytes"},
      {.name = "collective_vol_reducescatter_gb",
       .ours = "payload_bytes[collective reduce_scatter]",
       .scale = 1e-9,
       .unit = "GB",
       .zero_unless = "payload_bytes"},
      {.name = "collective_vol_alltoall_gb",
       .ours = "payload_bytes[collective all_to_all]",
       .scale = 1e-9,
       .unit = "GB",
       .zero_unless = "payload_bytes"},
      {.name = "collective_vol_total_gb", .ours = "payload_bytes", .scale = 1e-9, .unit = "GB"},
      // Hockney model.
      {.name = "hockney_alpha_s", .unit = "s", .unavailable = kHockney},
      {.name = "hockney_beta_s_per_byte", .unit = "s/B", .unavailable = kHockney},
      {.name = "hockney_inverse_beta_Bps", .unit = "B/s", .unavailable = kHockney},
      // FLOPs / throughput.
      {.name = "achieved_flops_from_trace_json", .ours = "achieved_flops.mean", .unit = "FLOP/s"},
      {.name = "total_model_flops_from_args", .ours = "total_flops", .unit = "FLOP"},
      {.name = "throughput", .ours = "tps", .unit = "tokens/s"},
      {.name = "throughput_group_6", .ours = "tps", .unit = "tokens/s"},
      {.name = "estimated_throughput_tokens_per_s", .ours = "tps", .unit = "tokens/s"},
      {.name = "flops_per_token_used",
       .unit = "FLOP",
       .unavailable = "a constant (6 × parameters, 7e9 parameters by default), not a "
                      "measurement; outside our model"},
      {.name = "estimated_total_tokens",
       .unit = "count",
       .unavailable = "an estimate from FLOPs and the 6 × parameters rule; outside our model "
                      "(token counts come from workload.batch_size and the trace's steps)"},
      // Names of older versions of tools/main.py.
      {.name = "mfu_group_1", .ours = "mfu.mean", .unit = "ratio"},
      {.name = "iteration_time", .ours = "step_time.mean", .unit = "s"},
      {.name = "nsys_comm", .ours = "comm_ops", .unit = "count"},
      {.name = "comm_breakdown", .ours = "comm_op_time[collective *]", .unit = "s"},
      {.name = "overlap", .ours = "overlap", .unit = "ratio"},
  };
  return table;
}

// "ours: busy_time.mean / wall_time × 100".
std::string Formula(const CclBenchMetric& m) {
  std::string f = fmt::format("ours: {}", m.ours);
  if (!m.times.empty()) f += fmt::format(" × {}", m.times);
  if (!m.divisor.empty()) f += fmt::format(" / {}", m.divisor);
  if (m.scale != 1) f += fmt::format(" × {:g}", m.scale);
  return f;
}

// The value of our metric `key`, or why there is none.
std::optional<double> Value(const MetricSet& ours, std::string_view key,
                            std::string_view zero_unless, std::string* reason) {
  const Metric* m = ours.Find(key);
  if (m == nullptr) {
    if (!zero_unless.empty()) {
      const Metric* z = ours.Find(zero_unless);
      if (z != nullptr && z->value) return 0.0;
      if (z != nullptr) {
        *reason = fmt::format("{}: {}", zero_unless, z->unavailable);
        return std::nullopt;
      }
    }
    *reason = fmt::format("the analysis has no {}", key);
    return std::nullopt;
  }
  if (!m->value) *reason = fmt::format("{}: {}", key, m->unavailable);
  return m->value;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Edit distance (insertions, deletions, substitutions), for "did you mean".
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<CclBenchMetric>& CclBenchMetrics() { return Table(); }

const CclBenchMetric* FindCclBenchMetric(std::string_view name) {
  for (const CclBenchMetric& m : Table()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

MetricSet EvaluateCclBench(const CclBenchMetric& m, const MetricSet& ours) {
  MetricSet out;
  const std::string name(m.name), unit(m.unit);
  if (m.ours.empty()) {
    out.AddUnavailable(name, "", unit, std::string(m.unavailable));
    return out;
  }
  const std::string formula = Formula(m);
  constexpr std::string_view kAllScopes = " *]";
  if (m.ours.size() > kAllScopes.size() &&
      m.ours.substr(m.ours.size() - kAllScopes.size()) == kAllScopes) {
    // "base[prefix *]": every scope of `base` that starts with "prefix ".
    const size_t open = m.ours.find('[');
    const std::string_view base = m.ours.substr(0, open);
    const std::string_view prefix = m.ours.substr(open + 1, m.ours.size() - open - 3);
    for (const Metric& x : ours.metrics()) {
      if (x.name != base || !StartsWith(x.scope, prefix)) continue;
      if (x.value) {
        out.Add(name, x.scope, *x.value * m.scale, unit, formula);
      } else {
        out.AddUnavailable(name, x.scope, unit, x.unavailable);
      }
    }
    if (out.metrics().empty()) {
      out.AddUnavailable(name, "", unit, fmt::format("the analysis has no {}", m.ours));
    }
    return out;
  }
  std::string reason;
  std::optional<double> v = Value(ours, m.ours, m.zero_unless, &reason);
  if (v && !m.times.empty()) {
    std::optional<double> t = Value(ours, m.times, "", &reason);
    v = t ? std::optional<double>(*v * *t) : std::nullopt;
  }
  if (v && !m.divisor.empty()) {
    std::optional<double> d = Value(ours, m.divisor, "", &reason);
    if (d && *d == 0) reason = fmt::format("{} is 0", m.divisor);
    v = d && *d != 0 ? std::optional<double>(*v / *d) : std::nullopt;
  }
  if (v) {
    out.Add(name, "", *v * m.scale, unit, formula);
  } else {
    out.AddUnavailable(name, "", unit, reason);
  }
  return out;
}

MetricSet SelectMetrics(const MetricSet& all, const std::vector<std::string>& names) {
  if (names.empty()) return all;
  MetricSet out = all.Filter(names);
  for (const std::string& name : names) {
    const CclBenchMetric* m = FindCclBenchMetric(name);
    if (m == nullptr || all.Find(name) != nullptr) continue;  // ours of that name wins
    const MetricSet rows = EvaluateCclBench(*m, all);
    for (const Metric& x : rows.metrics()) out.Insert(x);
  }
  return out;
}

Status CheckMetricNames(const std::vector<const MetricSet*>& analyses,
                        const std::vector<std::string>& names) {
  // What Filter matches: a metric's name and each of its dotted prefixes.
  std::set<std::string, std::less<>> known;
  for (const MetricSet* set : analyses) {
    for (const Metric& m : set->metrics()) {
      for (size_t dot = m.name.find('.'); dot != std::string::npos;
           dot = m.name.find('.', dot + 1)) {
        known.insert(m.name.substr(0, dot));
      }
      known.insert(m.name);
    }
  }
  for (const CclBenchMetric& m : Table()) known.emplace(m.name);
  for (const std::string& name : names) {
    if (known.count(name) > 0) continue;
    std::vector<std::pair<size_t, std::string>> close;
    const size_t limit = std::max<size_t>(2, name.size() / 3);
    for (const std::string& k : known) {
      size_t d = Distance(name, k);
      if (d <= limit || (name.size() >= 4 && k.find(name) != std::string::npos)) {
        close.emplace_back(d, k);
      }
    }
    std::sort(close.begin(), close.end());
    if (close.size() > 5) close.resize(5);
    std::string hint = "run `shardscope analyze` without --metric to see every metric";
    if (!close.empty()) {
      hint = "closest: ";
      for (size_t i = 0; i < close.size(); ++i) hint += (i > 0 ? ", " : "") + close[i].second;
    }
    return InvalidArgument(
        "--metric {}: unknown metric (neither a metric of the analysed traces nor a CCL-Bench "
        "name); {}",
        name, hint);
  }
  return Status::Ok();
}

}  // namespace shardscope::analysis
