// A synthetic trace of TP8 × PP2 decoding on 16 ranks, written with the
// TraceWriter: per decode step and layer, five compute ops and two TP
// all-reduces per rank, a pipeline send/recv between the stages, step spans
// and memory counters. Sized by the number of bytes wanted; for benchmarks.
#ifndef SHARDSCOPE_BENCH_SYNTHETIC_TRACE_H_
#define SHARDSCOPE_BENCH_SYNTHETIC_TRACE_H_

#include <cstdint>
#include <string>

#include "core/status.h"

namespace shardscope::bench {

// Writes at least `target_bytes` of trace to `path`; returns the events written.
StatusOr<int64_t> WriteSyntheticTrace(const std::string& path, int64_t target_bytes);

// The benchmarks' shared synthetic trace in the temp folder, written on first
// use: $SHARDSCOPE_BENCH_TRACE_MB megabytes (default 1100). Aborts with a
// message when it cannot be written.
const std::string& SyntheticTracePath();

}  // namespace shardscope::bench

#endif  // SHARDSCOPE_BENCH_SYNTHETIC_TRACE_H_
