#include "bench/gpu/gpu_ops_trace.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "trace/trace_writer.h"

namespace shardscope::bench {

std::string WriteGpuOpsTrace(const std::string& path, const std::string& trace_dtype,
                             const std::string& device_json,
                             const std::vector<GpuOpSample>& samples) {
  nlohmann::json device = nlohmann::json::parse(device_json, nullptr, /*allow_exceptions=*/false);
  if (!device.is_object()) return "the device description is not a JSON object";
  const nlohmann::json metadata = {
      {"backend", "cuda"},
      {"source", "bench/gpu/gpu_ops_bench"},
      {"experiment", {{"name", "gpu_ops_" + trace_dtype}, {"workload", {{"dtype", trace_dtype}}}}},
      {"device", device}};
  auto writer = trace::TraceWriter::Open(path, metadata);
  if (!writer.ok()) return writer.status().ToString();
  (*writer)->NameProcess(0, "rank 0 · node 0 · gpu 0");
  trace::OpEvent op;
  op.rank = 0;
  op.stream = 0;
  op.category = trace::Category::kCompute;
  for (const GpuOpSample& s : samples) {
    op.name = s.name;
    op.kind = s.kind;
    op.dtype = s.dtype;
    op.ts_ns = s.ts_ns;
    op.dur_ns = s.dur_ns;
    op.flops = std::llround(s.flops);
    op.bytes_read = std::llround(s.bytes_read);
    op.bytes_written = std::llround(s.bytes_written);
    (*writer)->AddOp(op);
  }
  Status closed = (*writer)->Close();
  return closed.ok() ? std::string() : closed.ToString();
}

}  // namespace shardscope::bench
