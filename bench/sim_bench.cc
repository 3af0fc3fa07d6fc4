// Simulator benchmarks: engine throughput (ops + network transfers simulated
// per second), one DeepSeek-V3 decode step at EP = 128 (program build and
// simulation, separately and together), and each seed experiment end to end
// without trace writing. Results: docs/BENCHMARKS.md, "Simulator".
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "plan/placement.h"
#include "plan/plan_loader.h"
#include "program/program_builder.h"
#include "sim/engine.h"
#include "sim/simulator.h"

namespace shardscope::sim {
namespace {

const std::vector<Experiment>& Seeds() {
  static const std::vector<Experiment> all = [] {
    auto e = LoadValidExperiments(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/experiments.yaml");
    if (!e.ok()) std::abort();
    return *e;
  }();
  return all;
}

const Experiment& Named(const std::string& name) {
  for (const Experiment& e : Seeds()) {
    if (e.name == name) return e;
  }
  std::abort();
}

// Everything one phase needs, built once.
struct Fixture {
  explicit Fixture(const Experiment& e)
      : experiment(e),
        placement(*Placement::Create(e)),
        builder(*ProgramBuilder::Create(e, placement)),
        compute(*ComputeModel::Create(e.cluster.device, e.workload.dtype,
                                      DefaultCalibration(e.cluster.device))),
        topology(e.cluster) {}
  Experiment experiment;
  Placement placement;
  ProgramBuilder builder;
  ComputeModel compute;
  Topology topology;
};

// DeepSeek-V3, EP = 128 on 16 H100 nodes, prompt 1024: one decode step.
const char* kDsv3Ep128 = "seed003_deepseek_v3_seq1024_ep128";

// Simulates one phase of an experiment repeatedly on one engine, as
// SimulateExperiment keeps one for all phases (and recycles each result).
// `same_graph`: as between decode steps whose ops only changed cost
// (Engine::RunSameGraph), the dependency graph is not rebuilt.
void RunEngine(benchmark::State& state, const char* experiment, Phase phase,
               bool same_graph = false) {
  Fixture f(Named(experiment));
  auto prog = f.builder.Build(phase, 0);
  if (!prog.ok()) std::abort();
  int64_t items = 0, ops = 0, transfers = 0;
  Engine engine(f.placement, f.compute, f.topology);
  if (same_graph && !engine.Run(*prog).ok()) std::abort();
  for (auto _ : state) {
    auto r = same_graph ? engine.RunSameGraph(*prog) : engine.Run(*prog);
    if (!r.ok()) std::abort();
    items += r->ops + r->transfers;
    ops = r->ops;
    transfers = r->transfers;
    engine.Recycle(std::move(*r));
  }
  state.counters["ops"] = static_cast<double>(ops);  // per run
  state.counters["transfers"] = static_cast<double>(transfers);
  state.SetItemsProcessed(items);
  state.counters["ops+transfers/s"] =
      benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
}

void BM_EngineDecodeStepDsv3Ep128(benchmark::State& state) {
  RunEngine(state, kDsv3Ep128, Phase::kDecode);
}
BENCHMARK(BM_EngineDecodeStepDsv3Ep128)->Unit(benchmark::kMillisecond);

void BM_EngineDecodeStepDsv3Ep128SameGraph(benchmark::State& state) {
  RunEngine(state, kDsv3Ep128, Phase::kDecode, true);
}
BENCHMARK(BM_EngineDecodeStepDsv3Ep128SameGraph)->Unit(benchmark::kMillisecond);

// Decode steps as SimulateExperiment runs them: the program updated to the
// next step (untimed: BM_UpdateDecodeStepDsv3Ep128), then the engine on the
// previous step's graph, reading again only the ops the update changed.
void BM_EngineDecodeStepsDsv3Ep128Updated(benchmark::State& state) {
  Fixture f(Named(kDsv3Ep128));
  auto prog = f.builder.Build(Phase::kDecode, 0);
  if (!prog.ok()) std::abort();
  Engine engine(f.placement, f.compute, f.topology);
  if (!engine.Run(*prog).ok()) std::abort();
  int64_t items = 0, step = 0;
  UpdatedOps updated;
  for (auto _ : state) {
    state.PauseTiming();
    bool same_ops = false;
    if (!f.builder.Update(*prog, ++step % 31, &same_ops, &updated).ok() || !same_ops) std::abort();
    state.ResumeTiming();
    auto r = engine.RunSameGraph(*prog, {}, &updated);
    if (!r.ok()) std::abort();
    items += r->ops + r->transfers;
    engine.Recycle(std::move(*r));
  }
  state.SetItemsProcessed(items);
  state.counters["ops+transfers/s"] =
      benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineDecodeStepsDsv3Ep128Updated)->Unit(benchmark::kMillisecond);

void BM_EnginePrefillSeed001Ring(benchmark::State& state) {
  RunEngine(state, "seed001_sp16_ring", Phase::kPrefill);
}
BENCHMARK(BM_EnginePrefillSeed001Ring)->Unit(benchmark::kMillisecond);

void BM_BuildDecodeStepDsv3Ep128(benchmark::State& state) {
  Fixture f(Named(kDsv3Ep128));
  for (auto _ : state) {
    auto prog = f.builder.Build(Phase::kDecode, 0);
    benchmark::DoNotOptimize(prog);
  }
}
BENCHMARK(BM_BuildDecodeStepDsv3Ep128)->Unit(benchmark::kMillisecond);

// Updating a decode program to the next step in place, as SimulateExperiment
// does between decode steps (ProgramBuilder::Update).
void BM_UpdateDecodeStepDsv3Ep128(benchmark::State& state) {
  Fixture f(Named(kDsv3Ep128));
  auto prog = f.builder.Build(Phase::kDecode, 0);
  if (!prog.ok()) std::abort();
  int64_t step = 0;
  for (auto _ : state) {
    if (!f.builder.Update(*prog, ++step % 31).ok()) std::abort();
    benchmark::DoNotOptimize(prog);
  }
}
BENCHMARK(BM_UpdateDecodeStepDsv3Ep128)->Unit(benchmark::kMillisecond);

// The floor: build + simulate one decode step < 100 ms (issue 17).
void BM_BuildAndSimulateDecodeStepDsv3Ep128(benchmark::State& state) {
  Fixture f(Named(kDsv3Ep128));
  for (auto _ : state) {
    auto prog = f.builder.Build(Phase::kDecode, 0);
    if (!prog.ok()) std::abort();
    Engine engine(f.placement, f.compute, f.topology);  // cold: no cached plans
    auto r = engine.Run(*prog);
    if (!r.ok()) std::abort();
  }
}
BENCHMARK(BM_BuildAndSimulateDecodeStepDsv3Ep128)->Unit(benchmark::kMillisecond);

// Each non-sweep seed experiment end to end (all decode steps), no trace.
void BM_SeedExperiment(benchmark::State& state, std::string name) {
  const Experiment& e = Named(name);
  SimOptions o;
  o.write_trace = false;
  for (auto _ : state) {
    auto r = SimulateExperiment(e, o);
    if (!r.ok()) std::abort();
    state.counters["ops"] = static_cast<double>(r->ops);
  }
}
BENCHMARK_CAPTURE(BM_SeedExperiment, tp4_deepseek_v2_lite, std::string("tp4_deepseek_v2_lite"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, tp4_qwen2_5_32b, std::string("tp4_qwen2.5_32b"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, ep16_tp4_deepseek_v3_1, std::string("ep16_tp4_deepseek_v3.1"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed001_tp8_pp2, std::string("seed001_tp8_pp2"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed001_sp16_ring, std::string("seed001_sp16_ring"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed004_tp8_pp2, std::string("seed004_tp8_pp2"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed004_layerwise, std::string("seed004_layerwise"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed003_moe61l_seq1024_ep128,
                  std::string("seed003_moe61l_seq1024_ep128"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_SeedExperiment, seed003_deepseek_v3_seq1024_ep128, std::string(kDsv3Ep128))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace shardscope::sim

BENCHMARK_MAIN();
