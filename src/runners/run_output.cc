#include "runners/run_output.h"

#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "runners/cpu_runner.h"
#include "runners/sim_runner.h"

namespace shardscope::runners {
namespace {

std::vector<sim::RunReport> SimReports(const std::vector<run::RunResult>& results) {
  std::vector<sim::RunReport> out;
  for (const run::RunResult& r : results) {
    if (auto* d = dynamic_cast<const SimRunDetail*>(r.detail.get())) out.push_back(d->report);
  }
  return out;
}

// The generated token ids, one line per request (the first kShown requests).
std::string GeneratedTokensText(const std::vector<std::vector<int32_t>>& tokens) {
  constexpr size_t kShown = 16;
  std::string out;
  for (size_t i = 0; i < tokens.size() && i < kShown; ++i) {
    out += fmt::format("  request {} generated: {}\n", i, fmt::join(tokens[i], " "));
  }
  if (tokens.size() > kShown) {
    out += fmt::format("  … {} more requests (all in --json)\n", tokens.size() - kShown);
  }
  return out;
}

}  // namespace

std::string RunResultsText(const std::vector<run::RunResult>& results) {
  std::string out;
  const std::vector<sim::RunReport> reports = SimReports(results);
  if (!reports.empty()) out += sim::RunReportText(reports);
  std::vector<serve::ServingReport> served;
  for (const run::RunResult& r : results) {
    if (auto* d = dynamic_cast<const ServeRunDetail*>(r.detail.get())) served.push_back(d->report);
  }
  if (!served.empty()) out += (reports.empty() ? "" : "\n") + serve::ServingReportText(served);
  for (const run::RunResult& r : results) {
    auto* d = dynamic_cast<const CpuRunDetail*>(r.detail.get());
    if (d == nullptr) continue;
    const std::vector<double>& gens = d->cpu.generation_seconds;
    double mean = 0;
    for (double g : gens) mean += g / gens.size();
    out += fmt::format(
        "{} (backend cpu, {} ranks): TTFT {}, TPOT {}, {} measured generations of {} on average\n",
        r.experiment, r.ranks, FormatSeconds(r.latency.ttft),
        r.latency.has_decode ? FormatSeconds(r.latency.tpot) : "— (no decode step)", gens.size(),
        FormatSeconds(mean));
    out += GeneratedTokensText(d->cpu.tokens);
    if (!r.trace_path.empty()) out += fmt::format("  trace {}\n", r.trace_path);
  }
  return out;
}

nlohmann::json RunResultsJson(const std::vector<run::RunResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const sim::RunReport& r : SimReports(results)) {
    out.push_back(sim::RunReportJson(r));
    out.back()["backend"] = "sim";
  }
  for (const run::RunResult& r : results) {
    if (auto* d = dynamic_cast<const ServeRunDetail*>(r.detail.get())) {
      out.push_back(serve::ServingReportJson(d->report));
    }
  }
  for (const run::RunResult& r : results) {
    auto* d = dynamic_cast<const CpuRunDetail*>(r.detail.get());
    if (d == nullptr) continue;
    out.push_back({{"experiment", r.experiment},
                   {"backend", "cpu"},
                   {"ranks", r.ranks},
                   {"ttft_s", r.latency.ttft},
                   {"tpot_s", r.latency.tpot},
                   {"generation_s", d->cpu.generation_seconds},
                   {"tokens", d->cpu.tokens},
                   {"trace", r.trace_path},
                   {"metadata", r.metadata_path}});
  }
  return out;
}

}  // namespace shardscope::runners
