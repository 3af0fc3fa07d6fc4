// Serving-simulator benchmark: Llama-3.1-70B at TP8 served under Poisson load
// (bench/serve_bench.yaml) with 1 k, 10 k and 100 k requests, no trace — the
// time should grow linearly with the requests. Results: docs/BENCHMARKS.md,
// "Serving".
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "config/experiment_loader.h"
#include "serve/serving_simulator.h"

namespace shardscope::serve {
namespace {

Experiment Llama70bTp8(int64_t requests) {
  static const Experiment base = [] {
    auto e = LoadExperiments(std::string(SHARDSCOPE_SOURCE_DIR) + "/bench/serve_bench.yaml");
    if (!e.ok() || e->size() != 1) std::abort();
    return (*e)[0];
  }();
  Experiment e = base;
  e.serving->requests = requests;
  return e;
}

void BM_ServeLlama70bTp8(benchmark::State& state) {
  const Experiment e = Llama70bTp8(state.range(0));
  ServeOptions o;
  o.sim.write_trace = false;
  int64_t shapes = 0, iterations = 0;
  for (auto _ : state) {
    auto r = SimulateServing(e, o);
    if (!r.ok()) std::abort();
    shapes = r->programs_simulated;
    iterations = r->metrics.iterations;
    benchmark::DoNotOptimize(r->metrics.ttft.p99);
  }
  state.counters["requests"] = static_cast<double>(state.range(0));
  state.counters["iterations"] = static_cast<double>(iterations);
  state.counters["shapes"] = static_cast<double>(shapes);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ServeLlama70bTp8)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace shardscope::serve

BENCHMARK_MAIN();
