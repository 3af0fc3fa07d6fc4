#include "search/search_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "core/yaml_reader.h"

namespace shardscope::search {
namespace {

std::string OrderList(const ParallelSpec& p) {
  std::string out;
  for (Dim d : p.order) out += fmt::format("{}{}", out.empty() ? "" : ",", DimName(d));
  return out;
}

std::string ObjectiveText(const SearchSpec& spec) {
  switch (spec.objective) {
    case Objective::kThroughput:
      return "tokens/s per GPU (higher is better)";
    case Objective::kTtft:
      return "TTFT (lower is better)";
    case Objective::kTpot:
      return "TPOT (lower is better)";
    case Objective::kCost:
      return fmt::format("$ per million tokens at ${}/GPU-hour (lower is better)",
                         spec.gpu_hour_usd);
  }
  return "";
}

std::string SloText(const Slo& slo) {
  std::string out;
  if (slo.ttft_ms > 0) out += fmt::format("TTFT ≤ {} ms", slo.ttft_ms);
  if (slo.tpot_ms > 0) out += fmt::format("{}TPOT ≤ {} ms", out.empty() ? "" : ", ", slo.tpot_ms);
  return out.empty() ? "none" : out;
}

std::string Devices(const Candidate& c) { return fmt::format("{}×{}", c.replicas, c.world()); }

size_t LabelWidth(const SearchResult& r, const std::vector<int64_t>& rows) {
  size_t w = 4;
  for (int64_t i : rows) w = std::max(w, PlanLabel(r.evaluations[i].candidate).size());
  return w;
}

std::string RankedTable(const SearchResult& r, const std::vector<int64_t>& rows) {
  const size_t w = LabelWidth(r, rows);
  std::string out = fmt::format(
      "{:>3}  {:<{}}  {:>7}  {:>9}  {:>9}  {:>11}  {:>10}  {:>10}  {:>7}  {:<16}  {:>9}\n", "#",
      "plan", w, "devices", "TTFT ms", "TPOT ms", "tokens/s", "tok/s/GPU", "tok/s/user", "mem GB",
      "dominant bound", "sim÷bound");
  int64_t n = 0;
  for (int64_t i : rows) {
    const Evaluation& e = r.evaluations[i];
    const Figures& f = e.figures;
    out += fmt::format(
        "{:>3}  {:<{}}  {:>7}  {:>9.2f}  {:>9.3f}  {:>11.0f}  {:>10.1f}  {:>10.1f}  {:>7.1f}  "
        "{:<16}  {:>9}\n",
        ++n, PlanLabel(e.candidate), w, Devices(e.candidate), f.ttft * 1e3, f.tpot * 1e3,
        f.tokens_per_s, f.per_gpu, f.per_user, f.memory_peak / kGB,
        f.dominant.empty() ? "—" : f.dominant,
        f.sim_over_bound > 0 ? fmt::format("{:.2f}", f.sim_over_bound) : "—");
  }
  return out;
}

std::string CsvQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string SearchReportText(const SearchResult& r) {
  const Experiment& b = r.base;
  const SearchSpec& s = r.spec;
  std::string out = fmt::format("Search: experiment '{}' ({})\n", b.name, b.source_file);
  out += fmt::format(
      "  model {} on cluster {} (budget {} devices); {} requests, prompt {}, {} generated, {}\n",
      b.model.name, b.cluster.name, DeviceBudget(b, s), b.workload.batch_size,
      b.workload.sequence_length, b.workload.tokens_to_generate, DTypeName(b.workload.dtype));
  if (b.serving) {
    out += fmt::format(
        "  served workload: {} requests arriving as `workload:` says, each plan served by its own "
        "scheduler; TTFT and TPOT are the p99 over requests, tokens/s output tokens, per user 1 / "
        "mean TPOT; no fixed-batch bounds apply (—)\n",
        b.serving->requests);
  }
  out += fmt::format("  objective: {}; SLOs: {}\n", ObjectiveText(s), SloText(s.slo));
  out += fmt::format(
      "  candidates: {} enumerated; removed by plan validation {}, device budget {}, memory {}, "
      "SLO bound {}; skipped as dominated by their bounds {}; simulated {}\n",
      r.enumerated, r.counts[0], r.counts[1], r.counts[2], r.counts[3], r.counts[4], r.counts[5]);
  if (r.ranked.empty()) {
    out += "\nNo plan meets the SLOs.\n";
    return out;
  }
  std::vector<int64_t> top = r.ranked;
  if (static_cast<int64_t>(top.size()) > s.top) top.resize(s.top);
  out += fmt::format("\nRanked (top {} of {} simulated plans meeting the SLOs):\n", top.size(),
                     r.ranked.size());
  out += RankedTable(r, top);
  out += fmt::format("\nPareto front, tokens/s per GPU vs tokens/s per user ({} plans):\n",
                     r.pareto.size());
  out += RankedTable(r, r.pareto);
  const Evaluation& best = *r.best();
  out += fmt::format(
      "\nBest: {} on {} devices ({} replica{} of {}): {:.1f} tokens/s per GPU, "
      "{:.1f} tokens/s per user, TTFT {:.2f} ms, TPOT {:.3f} ms\n",
      PlanLabel(best.candidate), best.candidate.devices(), best.candidate.replicas,
      best.candidate.replicas == 1 ? "" : "s", best.candidate.world(), best.figures.per_gpu,
      best.figures.per_user, best.figures.ttft * 1e3, best.figures.tpot * 1e3);
  return out;
}

std::string SloMissMessage(const SearchResult& r) {
  const Experiment& b = r.base;
  const bool by_bound =
      !r.closest.empty() && r.evaluations[r.closest.front()].outcome == Outcome::kSloBound;
  std::string out = fmt::format(
      "{}: experiment '{}': field 'search.slo': no plan meets {} ({} candidates, {} simulated, {} "
      "ruled out by a bound); the closest{}:",
      b.source_file, b.name, SloText(r.spec.slo), r.enumerated, r.counts[5], r.counts[3],
      by_bound ? " by their physical bounds" : "");
  for (int64_t i : r.closest) {
    const Evaluation& e = r.evaluations[i];
    const double ttft = by_bound ? e.figures.bound_ttft : e.figures.ttft;
    const double tpot = by_bound ? e.figures.bound_tpot : e.figures.tpot;
    out += fmt::format("\n  {} on {} devices: TTFT {:.2f} ms, TPOT {:.3f} ms",
                       PlanLabel(e.candidate), e.candidate.devices(), ttft * 1e3, tpot * 1e3);
  }
  return out;
}

std::string SearchReportCsv(const SearchResult& r) {
  std::string out =
      "index,plan,tp,pp,sp,ep,dp,sp_variant,micro_batches,order,batch,replicas,devices,outcome,"
      "meets_slo,ttft_ms,tpot_ms,total_s,tokens_per_s,tokens_per_s_per_gpu,tokens_per_s_per_user,"
      "cost_per_mtok,memory_gb,capacity_gb,bound_ttft_ms,bound_tpot_ms,bound_total_s,dominant,"
      "sim_over_bound,reason\n";
  for (const Evaluation& e : r.evaluations) {
    const Candidate& c = e.candidate;
    const ParallelSpec& p = c.parallel;
    const Figures& f = e.figures;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", c.index,
                    CsvQuote(PlanLabel(c)), p.tp, p.pp, p.sp, p.ep, p.dp,
                    SpVariantName(p.sp_variant), p.micro_batches, CsvQuote(OrderList(p)), c.batch,
                    c.replicas, c.devices(), OutcomeName(e.outcome), e.meets_slo ? 1 : 0);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", f.ttft * 1e3, f.tpot * 1e3,
                       f.total, f.tokens_per_s, f.per_gpu, f.per_user, f.cost_per_mtok,
                       f.memory_peak / kGB, f.memory_capacity / kGB, f.bound_ttft * 1e3,
                       f.bound_tpot * 1e3, f.bound_total, f.dominant, f.sim_over_bound,
                       CsvQuote(e.reason));
  }
  return out;
}

nlohmann::json SearchReportJson(const SearchResult& r) {
  nlohmann::json plans = nlohmann::json::array();
  for (const Evaluation& e : r.evaluations) {
    const Candidate& c = e.candidate;
    const ParallelSpec& p = c.parallel;
    const Figures& f = e.figures;
    plans.push_back({{"index", c.index},
                     {"plan", PlanLabel(c)},
                     {"parallelism",
                      {{"tp", p.tp},
                       {"pp", p.pp},
                       {"sp", p.sp},
                       {"ep", p.ep},
                       {"dp", p.dp},
                       {"sp_variant", SpVariantName(p.sp_variant)},
                       {"micro_batches", p.micro_batches},
                       {"order", OrderList(p)}}},
                     {"batch", c.batch},
                     {"replicas", c.replicas},
                     {"devices", c.devices()},
                     {"outcome", OutcomeName(e.outcome)},
                     {"reason", e.reason},
                     {"meets_slo", e.meets_slo},
                     {"ttft_s", f.ttft},
                     {"tpot_s", f.tpot},
                     {"total_s", f.total},
                     {"tokens_per_s", f.tokens_per_s},
                     {"tokens_per_s_per_gpu", f.per_gpu},
                     {"tokens_per_s_per_user", f.per_user},
                     {"cost_per_mtok", f.cost_per_mtok},
                     {"memory_peak_bytes", f.memory_peak},
                     {"memory_capacity_bytes", f.memory_capacity},
                     {"bound_ttft_s", f.bound_ttft},
                     {"bound_tpot_s", f.bound_tpot},
                     {"bound_total_s", f.bound_total},
                     {"dominant_bound", f.dominant},
                     {"sim_over_bound", f.sim_over_bound}});
  }
  nlohmann::json counts;
  for (int i = 0; i < kNumOutcomes; ++i) counts[OutcomeName(static_cast<Outcome>(i))] = r.counts[i];
  return {{"experiment", r.base.name},
          {"source_file", r.base.source_file},
          {"objective", ObjectiveName(r.spec.objective)},
          {"slo", {{"ttft_ms", r.spec.slo.ttft_ms}, {"tpot_ms", r.spec.slo.tpot_ms}}},
          {"device_budget", DeviceBudget(r.base, r.spec)},
          {"enumerated", r.enumerated},
          {"counts", counts},
          {"ranked", r.ranked},
          {"pareto", r.pareto},
          {"closest", r.closest},
          {"plans", plans}};
}

StatusOr<std::string> BestPlanYaml(const SearchResult& r, const YAML::Node& experiment_yaml) {
  const Evaluation* best = r.best();
  if (best == nullptr) return InvalidArgument("experiment '{}': no plan to write", r.base.name);
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(fs::path(r.base.source_file)).parent_path();
  YAML::Node e = YAML::Clone(experiment_yaml);
  e.remove("search");
  const Candidate& c = best->candidate;
  const ParallelSpec& p = c.parallel;
  e["name"] = r.base.name + "_best";
  e["description"] = fmt::format(
      "Best plan of `shardscope search` for '{}' ({}): {}; {} replica(s) of {} devices serve "
      "{} requests",
      r.base.name, ObjectiveName(r.spec.objective), PlanLabel(c), c.replicas, c.world(),
      r.base.workload.batch_size);
  YAML::Node par(YAML::NodeType::Map);
  par["tp_size"] = p.tp;
  par["pp_size"] = p.pp;
  par["seq_parallel_size"] = p.sp;
  par["ep_size"] = p.ep;
  par["dp_size"] = p.dp;
  YAML::Node order(YAML::NodeType::Sequence);
  for (Dim d : p.order) order.push_back(std::string(DimName(d)));
  par["order"] = order;
  if (p.sp > 1) par["ring_variant"] = std::string(SpVariantName(p.sp_variant));
  if (p.pp > 1 && p.micro_batches > 0) par["micro_batches"] = p.micro_batches;
  e["parallelism"] = par;
  // Sweeps resolved: the searched experiment's own values.
  e["batch_size"] = c.batch;
  e["sequence_length"] = r.base.workload.sequence_length;
  e["tokens_to_generate"] = r.base.workload.tokens_to_generate;
  e["seed"] = r.base.workload.seed;
  e.remove("claims");
  if (e["model"].IsDefined() && e["model"].IsMap() && e["model"]["hf_config"].IsDefined()) {
    fs::path hf(e["model"]["hf_config"].Scalar());
    if (hf.is_relative()) e["model"]["hf_config"] = (dir / hf).lexically_normal().string();
  }
  if (e["weights"].IsDefined() && e["weights"].IsMap() && e["weights"]["checkpoint"].IsDefined()) {
    fs::path ck(e["weights"]["checkpoint"].Scalar());
    if (ck.is_relative()) e["weights"]["checkpoint"] = (dir / ck).lexically_normal().string();
  }
  if (e["prompts"].IsDefined() && e["prompts"].IsScalar()) {  // a prompts file
    fs::path pr(e["prompts"].Scalar());
    if (pr.is_relative()) e["prompts"] = (dir / pr).lexically_normal().string();
  }
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(e);
  root["experiments"] = list;
  YAML::Emitter out;
  out << root;
  return fmt::format("# Written by `shardscope search --config {} --experiment {}`.\n{}\n",
                     r.base.source_file, r.base.name, out.c_str());
}

}  // namespace shardscope::search
