// Trace writing benchmarks: bytes of JSON written per second (wall and CPU
// time) by the TraceWriter alone, plain and gzip, over events read once from the
// synthetic trace (bench/synthetic_trace.h) and written again and again with
// shifted timestamps; the synthetic trace written end to end (its generator
// included); and the simulator's emitter: one DeepSeek-V3 experiment simulated
// with and without its trace. Output goes to $SHARDSCOPE_BENCH_WRITE_DIR
// (default: the temp folder) and is removed after each run.
// Results: docs/BENCHMARKS.md, "Trace writing".
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>

#include "bench/synthetic_trace.h"
#include "plan/plan_loader.h"
#include "sim/simulator.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace shardscope::bench {
namespace {

namespace fs = std::filesystem;

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

std::string OutPath(const std::string& name) {
  const char* dir = std::getenv("SHARDSCOPE_BENCH_WRITE_DIR");
  return ((dir ? fs::path(dir) : fs::temp_directory_path()) / name).string();
}

int64_t TargetBytes() {
  int64_t mb = 512;
  if (const char* env = std::getenv("SHARDSCOPE_BENCH_WRITE_MB")) mb = std::atoll(env);
  return mb * 1'000'000;
}

// About 16 MB of the synthetic trace's events, read back once.
const trace::Trace& Events() {
  static const trace::Trace events = [] {
    std::string path = OutPath("shardscope_write_bench_events.json");
    if (!WriteSyntheticTrace(path, 16'000'000).ok()) std::abort();
    auto t = trace::ReadTraceFile(path);
    fs::remove(path);
    if (!t.ok()) std::abort();
    return *t;
  }();
  return events;
}

// The writer alone: Events() again and again, each copy shifted in time, until
// TargetBytes() of JSON; range(0) = 1 gzips.
void BM_WriteEvents(benchmark::State& state) {
  const trace::Trace& events = Events();
  const bool gzip = state.range(0) == 1;
  const std::string path =
      OutPath(gzip ? "shardscope_write_bench.json.gz" : "shardscope_write_bench.json");
  int64_t shift = 0;
  for (const auto& op : events.ops) shift = std::max(shift, op.end_ns());
  int64_t json_bytes = 0, file_bytes = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto w = trace::TraceWriter::Open(path, events.metadata);
    if (!w.ok()) {
      state.SkipWithError(w.status().ToString().c_str());
      return;
    }
    std::vector<trace::OpEvent> ops = events.ops;  // shifted in place: no copies timed
    state.ResumeTiming();
    double cpu0 = CpuSeconds();
    while ((*w)->bytes_written() < TargetBytes()) {
      for (trace::OpEvent& op : ops) {
        (*w)->AddOp(op);
        op.ts_ns += shift;
      }
    }
    json_bytes = (*w)->bytes_written();
    Status s = (*w)->Close();
    cpu += CpuSeconds() - cpu0;
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    state.PauseTiming();
    file_bytes = static_cast<int64_t>(fs::file_size(path));
    fs::remove(path);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(json_bytes * state.iterations());
  state.counters["json_MB"] = static_cast<double>(json_bytes) / 1e6;
  state.counters["file_MB"] = static_cast<double>(file_bytes) / 1e6;
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
  state.counters["json_MB_per_cpu_s"] =
      static_cast<double>(json_bytes) * static_cast<double>(state.iterations()) / 1e6 / cpu;
}
BENCHMARK(BM_WriteEvents)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The synthetic trace end to end: its generator (names formatted per op) and the writer.
void BM_WriteSyntheticTrace(benchmark::State& state) {
  const std::string path = OutPath("shardscope_write_bench_synthetic.json");
  double cpu = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    double cpu0 = CpuSeconds();
    auto events = WriteSyntheticTrace(path, TargetBytes());
    cpu += CpuSeconds() - cpu0;
    if (!events.ok()) {
      state.SkipWithError(events.status().ToString().c_str());
      return;
    }
    bytes = static_cast<int64_t>(fs::file_size(path));
    fs::remove(path);
  }
  state.SetBytesProcessed(bytes * state.iterations());
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
  state.counters["json_MB_per_cpu_s"] =
      static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e6 / cpu;
}
BENCHMARK(BM_WriteSyntheticTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

// The simulator with its trace emitter: ep16_tp4_deepseek_v3.1 (64 TPU chips),
// its first $SHARDSCOPE_BENCH_SIM_STEPS decode steps (default 8), every step
// traced; range(0): 0 no trace, 1 plain trace, 2 gzip trace.
void BM_SimulateAndEmit(benchmark::State& state) {
  auto all = LoadValidExperiments(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/experiments.yaml");
  if (!all.ok()) {
    state.SkipWithError(all.status().ToString().c_str());
    return;
  }
  const Experiment* found = nullptr;
  for (const Experiment& e : *all) {
    if (e.name == "ep16_tp4_deepseek_v3.1") found = &e;
  }
  if (!found) {
    state.SkipWithError("no experiment ep16_tp4_deepseek_v3.1");
    return;
  }
  Experiment e = *found;
  e.trace_steps = -1;
  sim::SimOptions o;
  o.max_decode_steps = 8;
  if (const char* env = std::getenv("SHARDSCOPE_BENCH_SIM_STEPS"))
    o.max_decode_steps = std::atoll(env);
  o.write_trace = state.range(0) > 0;
  o.trace_file = OutPath(state.range(0) == 2 ? "shardscope_write_bench_sim.trace.gz"
                                             : "shardscope_write_bench_sim.trace");
  double cpu = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    double cpu0 = CpuSeconds();
    auto r = sim::SimulateExperiment(e, o);
    cpu += CpuSeconds() - cpu0;
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    if (o.write_trace) {
      bytes = static_cast<int64_t>(fs::file_size(o.trace_file));
      fs::remove(o.trace_file);
    }
  }
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
}
BENCHMARK(BM_SimulateAndEmit)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace shardscope::bench

BENCHMARK_MAIN();
