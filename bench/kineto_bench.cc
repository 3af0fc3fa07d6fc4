// Kineto ingestion benchmarks: import + every metric (AnalyzeTraceFile) over
// the biggest real Kineto trace of ../shared/testdata (rank0.json.gz, 25.8 MB
// of JSON, read gunzipped and as plain JSON written once to $TMPDIR) and over a
// larger one made by replicating its events with shifted times
// (SHARDSCOPE_BENCH_KINETO_COPIES copies, default 20: about 520 MB). Bytes/s
// are of uncompressed JSON. Skipped when ../shared is absent.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/analyzer.h"
#include "importers/kineto_importer.h"
#include "trace/byte_source.h"
#include "trace/event_scanner.h"

namespace shardscope::bench {
namespace {

namespace fs = std::filesystem;

const std::string kRank0 =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/../shared/testdata/kineto/rank0.json.gz";

StatusOr<std::string> ReadAll(const std::string& path) {
  ASSIGN_OR_RETURN(auto source, trace::OpenByteSource(path));
  std::string out;
  std::string buf(1 << 20, '\0');
  while (true) {
    ASSIGN_OR_RETURN(size_t n, source->Read(buf.data(), buf.size()));
    if (n == 0) break;
    out.append(buf.data(), n);
  }
  return out;
}

// The integer part of the event's "ts" (microseconds), moved by `shift_us`.
std::string ShiftTs(std::string_view event, int64_t shift_us, int64_t* ts_us) {
  size_t k = event.find("\"ts\":");
  if (k == std::string_view::npos) return std::string(event);
  size_t i = k + 5;
  while (i < event.size() && event[i] == ' ') ++i;
  size_t j = i;
  while (j < event.size() && event[j] >= '0' && event[j] <= '9') ++j;
  if (j == i) return std::string(event);
  int64_t v = std::stoll(std::string(event.substr(i, j - i)));
  *ts_us = v;
  std::string out(event.substr(0, i));
  out += std::to_string(v + shift_us);
  out += event.substr(j);
  return out;
}

// rank0.json.gz as plain JSON, and `copies` of its events one after another in time.
StatusOr<std::string> Prepare(int copies) {
  std::string name = copies == 1 ? "shardscope_kineto_rank0.json"
                                 : "shardscope_kineto_rank0_x" + std::to_string(copies) + ".json";
  std::string path = (fs::temp_directory_path() / name).string();
  if (fs::exists(path)) return path;
  ASSIGN_OR_RETURN(std::string text, ReadAll(kRank0));
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  if (copies == 1) {
    out << text;
  } else {
    size_t open = text.find('[', text.find("\"traceEvents\""));
    auto source = trace::MemoryByteSource(text, name);
    trace::EventScanner scanner(source.get(), name);
    std::string_view ev;
    int64_t offset = 0;
    size_t capacity = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;  // offsets into text
    while (true) {
      ASSIGN_OR_RETURN(bool more, scanner.Next(&ev, &offset, &capacity));
      if (!more) break;
      spans.push_back({offset, static_cast<int64_t>(ev.size())});
    }
    size_t last_end = static_cast<size_t>(spans.back().first + spans.back().second);
    size_t close = text.find(']', last_end);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& [o, n] : spans) {
      int64_t ts = 0;
      ShiftTs(std::string_view(text).substr(o, n), 0, &ts);
      if (ts > 0) {
        lo = std::min(lo, ts);
        hi = std::max(hi, ts);
      }
    }
    int64_t period = hi - lo + 1'000'000;  // one copy after the other, 1 s apart
    out << text.substr(0, open + 1) << "\n";
    bool first = true;
    for (int c = 0; c < copies; ++c) {
      for (const auto& [o, n] : spans) {
        int64_t ts = 0;
        out << (first ? "" : ",\n")
            << ShiftTs(std::string_view(text).substr(o, n), c * period, &ts);
        first = false;
      }
    }
    out << "\n" << text.substr(close);
  }
  out.close();
  fs::rename(tmp, path);
  return path;
}

double PeakRssBytes() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

// Import + all metrics; bytes/s over the uncompressed JSON.
void AnalyzeBench(benchmark::State& state, const std::string& path, double json_bytes) {
  int64_t metrics = 0;
  for (auto _ : state) {
    auto result = analysis::AnalyzeTraceFile(path);
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      return;
    }
    metrics = static_cast<int64_t>(result->metrics.metrics().size());
    state.counters["events"] = static_cast<double>(result->stats.events);
    state.counters["ops"] = static_cast<double>(result->stats.ops);
  }
  state.SetBytesProcessed(static_cast<int64_t>(json_bytes) * state.iterations());
  state.counters["json_MB"] = json_bytes / 1e6;
  state.counters["metrics"] = static_cast<double>(metrics);
  state.counters["peak_rss_MB"] = PeakRssBytes() / 1e6;
}

void BM_KinetoAnalyzeRank0Json(benchmark::State& state) {
  if (!fs::exists(kRank0)) return state.SkipWithError("no ../shared/testdata (rank0.json.gz)");
  auto path = Prepare(1);
  if (!path.ok()) return state.SkipWithError(path.status().ToString().c_str());
  AnalyzeBench(state, *path, static_cast<double>(fs::file_size(*path)));
}
BENCHMARK(BM_KinetoAnalyzeRank0Json)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KinetoAnalyzeRank0Gzip(benchmark::State& state) {
  if (!fs::exists(kRank0)) return state.SkipWithError("no ../shared/testdata (rank0.json.gz)");
  auto path = Prepare(1);  // for the uncompressed size
  if (!path.ok()) return state.SkipWithError(path.status().ToString().c_str());
  AnalyzeBench(state, kRank0, static_cast<double>(fs::file_size(*path)));
}
BENCHMARK(BM_KinetoAnalyzeRank0Gzip)->Unit(benchmark::kMillisecond)->UseRealTime();

int Copies() {
  const char* env = std::getenv("SHARDSCOPE_BENCH_KINETO_COPIES");
  return env ? std::max(2, std::atoi(env)) : 20;
}

void BM_KinetoAnalyzeReplicated(benchmark::State& state) {
  if (!fs::exists(kRank0)) return state.SkipWithError("no ../shared/testdata (rank0.json.gz)");
  auto path = Prepare(Copies());
  if (!path.ok()) return state.SkipWithError(path.status().ToString().c_str());
  AnalyzeBench(state, *path, static_cast<double>(fs::file_size(*path)));
}
BENCHMARK(BM_KinetoAnalyzeReplicated)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

class NullSink : public trace::TraceSink {
 public:
  void OnOp(const trace::OpEvent& op) override { sum_ += op.dur_ns; }
  int64_t sum_ = 0;
};

void BM_KinetoImportOnlyReplicated(benchmark::State& state) {
  if (!fs::exists(kRank0)) return state.SkipWithError("no ../shared/testdata (rank0.json.gz)");
  auto path = Prepare(Copies());
  if (!path.ok()) return state.SkipWithError(path.status().ToString().c_str());
  for (auto _ : state) {
    NullSink sink;
    auto stats = importers::ImportKineto(*path, &sink);
    if (!stats.ok()) return state.SkipWithError(stats.status().ToString().c_str());
    benchmark::DoNotOptimize(sink.sum_);
  }
  state.SetBytesProcessed(static_cast<int64_t>(fs::file_size(*path)) * state.iterations());
}
BENCHMARK(BM_KinetoImportOnlyReplicated)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace shardscope::bench

BENCHMARK_MAIN();
