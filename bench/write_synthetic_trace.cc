// Prints the path of the benchmarks' shared synthetic trace, writing it first if
// needed ($SHARDSCOPE_BENCH_TRACE_MB megabytes, default 1100): for the scripts
// that time other tools on the same file (python_analyze_bench.py).
#include <cstdio>

#include "bench/synthetic_trace.h"

int main() {
  std::printf("%s\n", shardscope::bench::SyntheticTracePath().c_str());
  return 0;
}
