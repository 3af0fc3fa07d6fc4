#include "serve/serving_report.h"

#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "config/experiment_json.h"
#include "core/units.h"

namespace shardscope::serve {
namespace {

std::string Dist(const analysis::Summary& s) {
  if (s.count == 0) return "-";
  return fmt::format("{} / {} / {} / {}", FormatSeconds(s.mean), FormatSeconds(s.p50),
                     FormatSeconds(s.p90), FormatSeconds(s.p99));
}

// The engine's non-zero serving-path terms, e.g. "4000 µs per scheduler call".
std::string ServingPathText(const ServingPathSpec& p) {
  std::vector<std::string> parts;
  for (auto [seconds, what] :
       {std::pair{p.request, "per request"}, std::pair{p.token, "per token"},
        std::pair{p.iteration, "per scheduler call"},
        std::pair{p.iteration_per_request, "per call and batched request"},
        std::pair{p.iteration_per_worker, "per call and worker beyond the first"}}) {
    if (seconds > 0) parts.push_back(fmt::format("{:g} µs {}", seconds * 1e6, what));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string ServingReportText(const std::vector<ServingReport>& reports) {
  std::string out;
  for (const ServingReport& rep : reports) {
    const ServingResult& r = rep.result;
    const ServingMetrics& m = r.metrics;
    const ServingSpec& s = *rep.experiment.serving;
    if (s.disaggregation) {
      const DisaggregationSpec& d = *s.disaggregation;
      out += fmt::format(
          "{} (served, disaggregated: {} prefill instance{} × {} devices ({} KV blocks each) + {} "
          "decode instance{} × {} devices ({} KV blocks each), {} iteration shapes simulated)\n",
          rep.experiment.name, d.prefill.instances, d.prefill.instances == 1 ? "" : "s",
          d.prefill.world_size(), r.prefill_kv.blocks, d.decode.instances,
          d.decode.instances == 1 ? "" : "s", d.decode.world_size(), r.kv.blocks,
          r.programs_simulated);
      out += fmt::format("  KV caches sent prefill → decode: {} ({})\n", r.kv_transfers,
                         FormatBytes(r.kv_transfer_bytes));
    } else {
      out += fmt::format(
          "{} (served, {} replica{} × {} devices, {} KV blocks of {} tokens each, {} iteration "
          "shapes simulated)\n",
          rep.experiment.name, r.replicas, r.replicas == 1 ? "" : "s", r.devices / r.replicas,
          r.kv.blocks, r.kv.block_size, r.programs_simulated);
    }
    if (s.engine) {
      // The profile's policies, so a run says which engine's rules it used.
      const SchedulerSpec& c = s.scheduler;
      out += fmt::format(
          "  engine {} {}: {} admission, {} scheduler step{} per call, {}\n", s.engine->name,
          s.engine->version, AdmissionName(c.admission), c.num_scheduler_steps,
          c.num_scheduler_steps == 1 ? "" : "s",
          c.cuda_graph_batch_sizes.empty()
              ? std::string("no CUDA graphs")
              : fmt::format("CUDA graphs up to batch {}", c.cuda_graph_batch_sizes.back()));
      if (s.path.any()) out += fmt::format("  serving path: {}\n", ServingPathText(s.path));
    }
    out += fmt::format(
        "  requests {} measured, {} warm-up, {} rejected (never fit the KV cache), "
        "{} preemptions, {} iterations\n",
        m.measured, m.warmup, m.rejected, m.preemptions, m.iterations);
    out += fmt::format("  {:<16} {}\n", "mean/p50/p90/p99", "");
    out += fmt::format("  {:<16} {}\n", "queueing delay", Dist(m.queueing));
    out += fmt::format("  {:<16} {}\n", "TTFT", Dist(m.ttft));
    out += fmt::format("  {:<16} {}\n", "TPOT", Dist(m.tpot));
    out += fmt::format("  {:<16} {}\n", "ITL", Dist(m.itl));
    out += fmt::format("  {:<16} {}\n", "E2E latency", Dist(m.e2e));
    out += fmt::format(
        "  throughput {} req/s, {} output tok/s ({} per device), {} prompt tok/s over {}\n",
        FormatSi(m.requests_per_s), FormatSi(m.output_tokens_per_s),
        FormatSi(m.output_tokens_per_s_per_device), FormatSi(m.prompt_tokens_per_s),
        FormatSeconds(m.duration));
    if (s.slo.ttft > 0 || s.slo.tpot > 0) {
      out += fmt::format(
          "  goodput {} req/s ({:.1f}% of requests within TTFT ≤ {} and TPOT ≤ {}); p99s {}\n",
          FormatSi(m.goodput_requests_per_s), 100 * m.slo_attainment,
          s.slo.ttft > 0 ? FormatSeconds(s.slo.ttft) : "-",
          s.slo.tpot > 0 ? FormatSeconds(s.slo.tpot) : "-",
          m.slo_met ? "meet the SLO" : "MISS the SLO");
    }
    out += fmt::format(
        "  batch mean {:.1f} max {}, KV cache mean {:.1f}% max {:.1f}%, busy {:.1f}%, in system "
        "{:.2f} (arrival rate × time in system {:.2f})\n",
        m.mean_batch, m.max_batch, 100 * m.mean_kv_occupancy, 100 * m.max_kv_occupancy,
        100 * m.busy_fraction, m.mean_in_system, m.arrival_rate * m.mean_time_in_system);
    if (!r.terms.empty()) {
      out += fmt::format("  fidelity terms on (calibration, docs/fidelity.md): {}\n",
                         fmt::join(r.terms, ", "));
    }
    if (!r.trace_path.empty()) out += fmt::format("  trace {}\n", r.trace_path);
  }
  return out;
}

nlohmann::json ServingReportJson(const ServingReport& rep) {
  const ServingResult& r = rep.result;
  nlohmann::json j = {{"experiment", rep.experiment.name},
                      {"backend", "sim"},
                      {"served", true},
                      {"ranks", r.devices},
                      {"replicas", r.replicas},
                      {"kv_blocks_per_replica", r.kv.blocks},
                      {"kv_block_size", r.kv.block_size},
                      {"kv_bytes_per_token", r.kv.bytes_per_token},
                      {"prefill_kv_blocks_per_instance", r.prefill_kv.blocks},
                      {"kv_transfers", r.kv_transfers},
                      {"kv_transfer_bytes", r.kv_transfer_bytes},
                      {"iteration_shapes_simulated", r.programs_simulated},
                      {"ops_simulated", r.ops_simulated},
                      {"calibration", r.calibration_source},
                      {"serving", ServingToJson(*rep.experiment.serving)},
                      {"metrics", ServingMetricsJson(r.metrics)},
                      {"trace", r.trace_path},
                      {"metadata", r.metadata_path},
                      {"requests", RequestRowsJson(r.requests)}};
  if (!r.terms.empty()) j["fidelity_terms"] = r.terms;  // only when on
  return j;
}

}  // namespace shardscope::serve
