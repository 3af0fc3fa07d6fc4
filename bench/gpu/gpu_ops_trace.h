// gpu_ops_bench's traces: its measured samples as a ShardScope trace
// (docs/trace_format.md) written through trace::TraceWriter, the one writer of
// the format. Compiled by the host compiler apart from the CUDA file, so this
// header includes no ShardScope header (it is read as C++17 by nvcc).
#ifndef SHARDSCOPE_BENCH_GPU_GPU_OPS_TRACE_H_
#define SHARDSCOPE_BENCH_GPU_GPU_OPS_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::bench {

// One timed sample of one op: a compute op on rank 0's stream 0.
struct GpuOpSample {
  std::string name;  // "ffn_up m=1 n=8192 k=4096"
  std::string kind;  // the ShardScope op kind
  std::string dtype;
  int64_t ts_ns = 0, dur_ns = 0;
  double flops = 0, bytes_read = 0, bytes_written = 0;  // whole numbers
};

// Writes `samples` to `path` with the run's metadata: the experiment
// "gpu_ops_<trace_dtype>" and `device_json` (a JSON object) as its device.
// Returns the error message, empty when the trace was written.
std::string WriteGpuOpsTrace(const std::string& path, const std::string& trace_dtype,
                             const std::string& device_json,
                             const std::vector<GpuOpSample>& samples);

}  // namespace shardscope::bench

#endif  // SHARDSCOPE_BENCH_GPU_GPU_OPS_TRACE_H_
