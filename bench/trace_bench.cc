// Ingestion benchmarks: read + every metric over a generated 16-rank trace
// (default 1.1 GB, SHARDSCOPE_BENCH_TRACE_MB to change; written once to
// $TMPDIR and reused), and reading alone. Reports bytes/s and the process's
// peak resident memory against the trace size.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>

#include "analysis/analyzer.h"
#include "bench/synthetic_trace.h"
#include "trace/trace_reader.h"

namespace shardscope::bench {
namespace {

double PeakRssBytes() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

class NullSink : public trace::TraceSink {
 public:
  void OnOp(const trace::OpEvent& op) override { sum_ += op.dur_ns; }
  int64_t sum_ = 0;
};

void BM_ReadAndAnalyze(benchmark::State& state) {
  const std::string& path = SyntheticTracePath();
  double size = static_cast<double>(std::filesystem::file_size(path));
  int64_t metrics = 0;
  for (auto _ : state) {
    auto result = analysis::AnalyzeTraceFile(path);
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      return;
    }
    metrics = static_cast<int64_t>(result->metrics.metrics().size());
    state.counters["events"] = static_cast<double>(result->stats.events);
  }
  state.SetBytesProcessed(static_cast<int64_t>(size) * state.iterations());
  state.counters["trace_MB"] = size / 1e6;
  state.counters["metrics"] = static_cast<double>(metrics);
  state.counters["peak_rss_MB"] = PeakRssBytes() / 1e6;
  state.counters["peak_rss_over_trace"] = PeakRssBytes() / size;
}
BENCHMARK(BM_ReadAndAnalyze)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// Reading into the analyzer's compact records (RunCollector), no metrics: the
// difference to BM_ReadAndAnalyze is the metrics' time.
void BM_ReadAndCollect(benchmark::State& state) {
  const std::string& path = SyntheticTracePath();
  double size = static_cast<double>(std::filesystem::file_size(path));
  for (auto _ : state) {
    analysis::RunData data;
    analysis::RunCollector collector(&data);
    collector.set_size_hint(static_cast<int64_t>(size));  // as AnalyzeTraceFile does
    auto stats = trace::ReadTrace(path, &collector);
    if (!stats.ok()) {
      state.SkipWithError(stats.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(data.ranks.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(size) * state.iterations());
}
BENCHMARK(BM_ReadAndCollect)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_ReadOnly(benchmark::State& state) {
  const std::string& path = SyntheticTracePath();
  double size = static_cast<double>(std::filesystem::file_size(path));
  for (auto _ : state) {
    NullSink sink;
    auto stats = trace::ReadTrace(path, &sink);
    if (!stats.ok()) {
      state.SkipWithError(stats.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(sink.sum_);
  }
  state.SetBytesProcessed(static_cast<int64_t>(size) * state.iterations());
}
BENCHMARK(BM_ReadOnly)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace shardscope::bench

BENCHMARK_MAIN();
