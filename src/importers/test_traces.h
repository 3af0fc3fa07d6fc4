// Test data shared by the importers' and the analyzer's tests: small synthetic
// traces, the real traces of ../shared/testdata and their golden values.
#ifndef SHARDSCOPE_IMPORTERS_TEST_TRACES_H_
#define SHARDSCOPE_IMPORTERS_TEST_TRACES_H_

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace shardscope::importers {

// `rel` under the shared test data (SOURCES.md there): ../shared/testdata
// beside the checkout, or $SHARDSCOPE_SHARED/testdata (a worktree's tests).
inline std::string SharedTestData(const std::string& rel) {
  const char* shared = std::getenv("SHARDSCOPE_SHARED");
  return (shared != nullptr ? std::string(shared)
                            : std::string(SHARDSCOPE_SOURCE_DIR) + "/../shared") +
         "/testdata/" + rel;
}

// The golden values of the real traces (tests/data/real_traces/`name`, each
// written by the independent script beside it), for the importers' and the
// analyzer's tests alike.
inline std::string RealTraceGolden(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/real_traces/" + name;
}

// True under CI=true, where the real-trace goldens must run.
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace shardscope::importers

// Skips the test (or fixture) when the shared test data `path` is absent; fails
// it instead under CI=true, so CI never passes without running the goldens.
#define SHARDSCOPE_NEED_SHARED_DATA(path)                                                   \
  do {                                                                                      \
    if (!std::filesystem::exists(path)) {                                                   \
      if (::shardscope::importers::InCi()) {                                                \
        FAIL() << "test data not found: " << (path)                                         \
               << " (CI=true: put ../shared beside the checkout or set SHARDSCOPE_SHARED)"; \
      }                                                                                     \
      GTEST_SKIP() << "test data not found: " << (path)                                     \
                   << " (../shared is absent; SHARDSCOPE_SHARED names another)";            \
    }                                                                                       \
  } while (0)

namespace shardscope::importers {

// One rank of a Kineto run: a 50 us kernel at 100 us, then an all-reduce over
// every rank that starts at 200 + 10 × rank us and ends at 300 us, all shifted
// by `shift_us` (a skewed clock); ProfilerStep#1 spans 50–400 us.
inline std::string KinetoRankTrace(int rank, int world, int64_t shift_us = 0) {
  std::string ranks;
  for (int r = 0; r < world; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  int64_t t0 = 1'000'000 + shift_us;
  return fmt::format(
      R"({{"schemaVersion": 1, "distributedInfo": {{"rank": {0}, "world_size": {1}}},
"traceEvents": [
{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": {2}, "dur": 350}},
{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": {0}, "tid": 7, "ts": {3}, "dur": 50}},
{{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": {0}, "tid": 20, "ts": {4}, "dur": {5},
  "args": {{"Collective name": "allreduce", "In msg nelems": 1024, "Group size": {1}, "dtype": "Float", "Process Group Ranks": "[{6}]"}}}}
]}})",
      rank, world, t0 + 50, t0 + 100, t0 + 200 + 10 * rank, 100 - 10 * rank, ranks);
}

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_TEST_TRACES_H_
