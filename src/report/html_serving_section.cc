// The report's section for served workloads (html_sections.h): per-request
// latency percentiles and throughput of each served run, from the serving
// metrics its metadata keeps (sim.serving.metrics, docs/metrics.md), and each
// serving sweep's latency and throughput against the swept load.
#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <set>

#include "report/html_section_util.h"
#include "report/html_sections.h"
#include "trace/json_path.h"

namespace shardscope::report {

using nlohmann::json;

namespace {

double Number(const json& metrics, const std::string& key, const char* stat = nullptr) {
  return ServingNumber(metrics, key, stat);
}

struct Latency {
  const char* key;
  const char* title;
};
constexpr Latency kLatencies[] = {{"ttft_s", "TTFT (from arrival)"},
                                  {"tpot_s", "TPOT"},
                                  {"itl_s", "inter-token latency"},
                                  {"e2e_latency_s", "end-to-end latency"},
                                  {"queueing_delay_s", "queueing delay"}};
constexpr const char* kPercentiles[] = {"p50", "p90", "p99"};

// The load and scheduler fields a serving sweep may vary (experiment.serving.*),
// preferred as x in this order.
struct Knob {
  std::initializer_list<const char*> path;  // under experiment.serving
  const char* label;
};
const Knob kKnobs[] = {
    {{"workload", "arrivals", "rate_per_s"}, "arrival rate (requests/s)"},
    {{"workload", "arrivals", "concurrency"}, "concurrency (requests)"},
    {{"workload", "requests"}, "requests"},
    {{"scheduler", "max_num_seqs"}, "max sequences per replica"},
    {{"scheduler", "max_num_batched_tokens"}, "max batched tokens"},
};

double KnobValue(const ReportRun& r, const Knob& k) {
  const json* v = trace::JsonAt(ExperimentField(r.metadata, "serving"), k.path);
  return v && v->is_number() ? v->get<double>() : NAN;
}

// Per-run bars: latency percentiles, throughput and goodput.
void AddRunCharts(const std::vector<const ReportRun*>& served, Section* s) {
  std::vector<std::string> labels;
  for (const ReportRun* r : served) labels.push_back(r->label);
  for (const Latency& l : kLatencies) {
    std::vector<Series> series;
    for (const char* p : kPercentiles) {
      Series se{p, {}};
      for (const ReportRun* r : served) se.values.push_back(Number(ServingMetrics(*r), l.key, p));
      series.push_back(std::move(se));
    }
    s->charts.push_back(BarChart(fmt::format("serving-{}", l.key),
                                 fmt::format("{}: p50, p90, p99 per run", l.title), labels, series,
                                 "run", l.title, "s", false));
  }
  std::vector<Series> rates = {{"requests/s", {}}, {"goodput (requests/s within the SLOs)", {}}};
  std::vector<Series> tokens = {{"output tokens/s", {}}};
  for (const ReportRun* r : served) {
    const json& m = ServingMetrics(*r);
    rates[0].values.push_back(Number(m, "requests_per_s"));
    rates[1].values.push_back(Number(m, "goodput_requests_per_s"));
    tokens[0].values.push_back(Number(m, "output_tokens_per_s"));
  }
  s->charts.push_back(BarChart("serving-requests", "Throughput and goodput per run", labels, rates,
                               "run", "requests per second", "1/s", false));
  s->charts.push_back(BarChart("serving-tokens", "Output tokens per second per run", labels, tokens,
                               "run", "output tokens per second", "tokens/s", false));
}

// Each serving sweep: TTFT and TPOT percentiles and throughput against the knob.
void AddSweepCharts(const std::vector<const ReportRun*>& served, Section* s) {
  std::map<std::string, std::vector<const ReportRun*>> sweeps;
  for (const ReportRun* r : served) sweeps[SweepKey(r->metadata)].push_back(r);
  size_t i = 0;
  for (const auto& [name, members] : sweeps) {
    if (members.size() < 2) continue;
    const Knob* x_knob = nullptr;
    for (const Knob& k : kKnobs) {
      std::set<double> values;
      bool everywhere = true;  // NaN (field absent) never enters the set
      for (const ReportRun* r : members) {
        const double v = KnobValue(*r, k);
        everywhere = everywhere && !std::isnan(v);
        if (!std::isnan(v)) values.insert(v);
      }
      if (everywhere && values.size() > 1) {
        x_knob = &k;
        break;
      }
    }
    if (!x_knob) continue;
    std::map<double, const ReportRun*> by_x;
    for (const ReportRun* r : members) by_x[KnobValue(*r, *x_knob)] = r;
    std::vector<double> x;
    for (const auto& [v, r] : by_x) x.push_back(v);
    const bool log_x = x.front() > 0 && x.back() / x.front() >= 8;
    auto line = [&](const char* key, const char* stat, std::string label) {
      Series se{std::move(label), {}};
      for (const auto& [v, r] : by_x) se.values.push_back(Number(ServingMetrics(*r), key, stat));
      return se;
    };
    for (const char* key : {"ttft_s", "tpot_s"}) {
      const char* title = key == std::string("ttft_s") ? "TTFT" : "TPOT";
      s->charts.push_back(
          LineChart(fmt::format("serving-sweep-{}-{}", i, key),
                    fmt::format("{}: {} vs {}", name, title, x_knob->label), x,
                    {line(key, "p50", "p50"), line(key, "p90", "p90"), line(key, "p99", "p99")},
                    x_knob->label, title, "s", log_x));
    }
    s->charts.push_back(
        LineChart(fmt::format("serving-sweep-{}-throughput", i),
                  fmt::format("{}: throughput and goodput vs {}", name, x_knob->label), x,
                  {line("requests_per_s", nullptr, "requests/s"),
                   line("goodput_requests_per_s", nullptr, "goodput (requests/s within the SLOs)")},
                  x_knob->label, "requests per second", "1/s", log_x));
    ++i;
  }
}

}  // namespace

Section ServingSection(const std::vector<ReportRun>& runs) {
  Section s{"serving", "Served workloads", "", {}, {}};
  std::vector<const ReportRun*> served;
  for (const ReportRun& r : runs) {
    if (!ServingMetrics(r).is_null()) served.push_back(&r);
  }
  if (served.empty()) {
    s.note =
        "No served run among these: a served experiment has a `workload:` block with arrivals "
        "(docs/configuration.md, \"Served workloads\"); its per-request latencies come from the "
        "run's metadata.";
    return s;
  }
  AddRunCharts(served, &s);
  AddSweepCharts(served, &s);
  s.note =
      "Per-request latencies of the measured requests (warm-up excluded; docs/metrics.md): TTFT "
      "from arrival, so it includes queueing. A serving sweep (e.g. over "
      "workload.arrivals.rate_per_s) is drawn against its swept value.";
  return s;
}

}  // namespace shardscope::report
