#include "importers/kineto_tokenizer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "importers/kineto_importer.h"
#include "trace/event_scanner.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {
namespace {

// Runs the tokenizer alone over `json`.
kineto::KinetoEvents Tokenize(const std::string& json, trace::ReadStats* stats) {
  auto source = trace::MemoryByteSource(json, "test.json");
  trace::EventScanner scanner(source.get(), "test.json", 1 << 16);
  kineto::KinetoEvents events;
  auto tokenizer = kineto::MakeKinetoTokenizer(stats, &events);
  EXPECT_TRUE(trace::ParseEvents(&scanner, tokenizer.get(), {}).ok());
  return events;
}

TEST(KinetoTokenizerTest, EventsBecomeTypedRecords) {
  trace::ReadStats stats;
  kineto::KinetoEvents ev = Tokenize(R"({"traceEvents": [
  {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": " stream 7 "}},
  {"args": {"correlation": 5, "External id": 9}, "ph": "X", "cat": "kernel", "name": "gemm",
   "pid": 0, "tid": 7, "ts": 10, "dur": 2},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 3, "ts": 9,
   "dur": 1, "args": {"correlation": 5, "External id": 9}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 3, "ts": 1,
   "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 3, "ts": 8, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 1.5, "ts": 12, "dur": 2},
  {"ph": "i", "name": "marker", "pid": 1, "tid": 3, "ts": 3}]})",
                                     &stats);
  EXPECT_EQ(stats.events, 7);
  EXPECT_EQ(stats.skipped["GPU event tid is not an integer (the stream)"], 1);
  ASSERT_EQ(ev.ops.size(), 1u);
  EXPECT_EQ(ev.names[ev.ops[0].name], "gemm");
  EXPECT_EQ(ev.ops[0].correlation, 5);  // args before "ph": parsed once the kind is known
  EXPECT_EQ(ev.ops[0].external_id, 9);
  EXPECT_EQ(ev.ops[0].stream, 7);
  EXPECT_EQ(ev.ops[0].ts, 10'000);
  ASSERT_EQ(ev.runtime.size(), 1u);
  EXPECT_EQ(ev.runtime[0].correlation, 5);
  EXPECT_EQ(ev.runtime[0].tid, 3);
  ASSERT_EQ(ev.steps.size(), 1u);
  EXPECT_EQ(ev.steps[0].step, 4);
  EXPECT_EQ(ev.thread_names.at({0, 7}), "stream 7");
  ASSERT_EQ(ev.ignored.size(), 3u);  // runtime (kept for the join), cpu_op, ph "i"
  EXPECT_EQ(ev.ignored[0].value, "cuda_runtime");
  EXPECT_EQ(ev.ignored[1].value, "cpu_op");
  EXPECT_EQ(ev.ignored[2].type, "ph");
}

// Both JSON parsers read integers through trace/json_value.h: the same token is
// the same integer, or no integer, in a ShardScope trace and in a Kineto trace.
// (Before, the trace reader rounded 1000.5 to 1001 while Kineto rejected it.)
TEST(KinetoTokenizerTest, GetIntAgreesBetweenParsers) {
  struct Case {
    const char* token;
    std::optional<int64_t> value;
  };
  const Case cases[] = {
      {"7", 7},
      {"1000", 1000},
      {"1000.0", 1000},
      {"1.0e3", 1000},
      {"1e3", 1000},
      {"1000.5", {}},
      {"1e19", {}},
      {"\"1000\"", {}},
      {"true", {}},
      {"null", {}},
      {"123456789", 123456789},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.token);
    // The trace reader: tid and args.flops.
    trace::Trace ours;
    {
      std::string json = fmt::format(
          R"({{"traceEvents": [{{"ph": "X", "pid": 0, "tid": {0}, "ts": 0, "dur": 1,
            "name": "k", "cat": "compute", "args": {{"flops": {0}}}}}]}})",
          c.token);
      auto source = trace::MemoryByteSource(json, "ours.json");
      trace::TraceBuilder builder(&ours);
      ASSERT_TRUE(trace::ReadTraceFrom(source.get(), "ours.json", &builder).ok());
    }
    // The Kineto importer: tid (the stream) and args."In msg nelems" (bytes, 1 B per element).
    trace::Trace kineto;
    {
      std::string json = fmt::format(
          R"({{"traceEvents": [{{"ph": "X", "cat": "kernel", "pid": 0, "tid": {0}, "ts": 0,
            "dur": 1, "name": "ncclDevKernel_AllReduce_Sum_u8_RING_LL",
            "args": {{"Collective name": "allreduce", "In msg nelems": {0}, "dtype": "Byte",
                      "Process Group Ranks": "[0, 1]"}}}}]}})",
          c.token);
      auto source = trace::MemoryByteSource(json, "kineto.json");
      trace::TraceBuilder builder(&kineto);
      ASSERT_TRUE(ImportKinetoFrom(source.get(), "kineto.json", &builder).ok());
    }
    ASSERT_EQ(ours.ops.size(), kineto.ops.size());
    if (!c.value) {
      EXPECT_TRUE(ours.ops.empty());
      continue;
    }
    ASSERT_EQ(ours.ops.size(), 1u);
    EXPECT_EQ(ours.ops[0].stream, *c.value);
    EXPECT_EQ(ours.ops[0].flops, *c.value);
    EXPECT_EQ(kineto.ops[0].stream, *c.value);
    EXPECT_EQ(kineto.ops[0].bytes, *c.value);
  }
}

}  // namespace
}  // namespace shardscope::importers
