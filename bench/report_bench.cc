// `shardscope report` against `shardscope analyze` on one large trace: the
// report adds the timeline pass and the page (issue 16 asks ≤ 20 % over analyze).
// Uses trace_bench's synthetic trace (SHARDSCOPE_BENCH_TRACE_MB, default 1100),
// written once to $TMPDIR. Counters: the page's size.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "analysis/analyzer.h"
#include "bench/synthetic_trace.h"
#include "report/html_page.h"
#include "report/html_report.h"

namespace shardscope::bench {
namespace {

void BM_Analyze(benchmark::State& state) {
  for (auto _ : state) {
    auto r = analysis::AnalyzePaths({SyntheticTracePath()});
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
}

void BM_Report(benchmark::State& state) {
  auto js = report::LoadChartJs();
  if (!js.ok()) {
    state.SkipWithError(js.status().message().c_str());
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    auto runs = report::LoadReportRuns({SyntheticTracePath()}, {});
    if (!runs.ok()) {
      state.SkipWithError(runs.status().message().c_str());
      break;
    }
    auto html = report::RenderHtmlPage(report::BuildReportData(*runs, {}, "bench"), *js);
    bytes = html.ok() ? html->size() : 0;
    benchmark::DoNotOptimize(html);
  }
  state.counters["html_bytes"] = static_cast<double>(bytes);
}

BENCHMARK(BM_Analyze)->Unit(benchmark::kSecond)->Iterations(3)->MeasureProcessCPUTime();
BENCHMARK(BM_Report)->Unit(benchmark::kSecond)->Iterations(3)->MeasureProcessCPUTime();

}  // namespace
}  // namespace shardscope::bench

BENCHMARK_MAIN();
