// libFuzzer target for the trace reader and the analyzer behind it: any bytes
// (plain or gzip) must be read without crashing, hanging or leaking, and
// whatever events survive must analyse cleanly. The first byte picks the read
// chunk size, so event boundaries fall across refills.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/analyzer.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope;
  size_t chunk = 64;
  if (size > 0) {
    chunk = 64 + data[0] * 4;
    ++data;
    --size;
  }
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto source = trace::MemoryByteSource(bytes, "fuzz.json");
  analysis::RunData run;
  analysis::RunCollector collector(&run);
  trace::ReadOptions options;
  options.chunk_bytes = chunk;
  auto stats = trace::ReadTraceFrom(source.get(), "fuzz.json", &collector, options);
  if (stats.ok()) {
    (void)stats->Summary();
    analysis::MetricSet metrics = analysis::ComputeMetrics(&run);
    (void)metrics.ToJson().dump();
  }
  return 0;
}
