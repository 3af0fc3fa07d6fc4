#include "importers/kineto_importer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using testing::ScratchDir;
using trace::Category;
using trace::Collective;
using trace::WriteFile;

const std::string kTestData = SharedTestData("kineto");
const std::string kExpected = RealTraceGolden("kineto_expected.json");

std::string Gzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

StatusOr<trace::Trace> Import(const std::string& json, trace::ReadStats* stats,
                              KinetoInfo* info = nullptr, bool batch = true) {
  auto source = trace::MemoryByteSource(json, "test.json");
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  trace::ReadOptions options;
  options.batch_events = batch;
  options.chunk_bytes = 256;  // many refills: batches cut everywhere
  ASSIGN_OR_RETURN(*stats, ImportKinetoFrom(source.get(), "test.json", &builder, info, options));
  return t;
}

const trace::OpEvent* FindOp(const trace::Trace& t, std::string_view name) {
  for (const trace::OpEvent& op : t.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// A small Kineto trace with every rule in it. Rank 1 of 2; ts relative to
// baseTimeNanoseconds, which comes after the events (as Kineto writes it).
const char kSynthetic[] = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "GPU-A"}, {"id": 1, "name": "GPU-B"}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": [0, 1]}]},
  "traceEvents": [
  {"name": "thread_name", "ph": "M", "ts": 1, "pid": 1, "tid": 7, "args": {"name": "stream 7 "}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 99, "tid": 99, "ts": 100.0, "dur": 900.0, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 99, "tid": 99, "ts": 101.0, "dur": 5.0, "args": {"External id": 2}},
  {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 1, "tid": 7, "ts": 200.0, "dur": 10.0, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm_b", "pid": 1, "tid": 7, "ts": 205.0, "dur": 10.0, "args": {"correlation": 2}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 1, "tid": 7, "ts": 220.0, "dur": 1.5, "args": {"bytes": 64}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "pid": 1, "tid": 20, "ts": 300.0, "dur": 20.0,
   "args": {"correlation": 3, "Collective name": "allreduce", "In msg nelems": 256, "Out msg nelems": 256, "Group size": 2, "dtype": "Float", "Process Group Ranks": "[0, 1]", "Process Group Description": "mesh_tp"}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 99, "tid": 98, "ts": 390.0, "dur": 30.0,
   "args": {"External id": 500, "Collective name": "all_to_all", "In msg nelems": 64, "Out msg nelems": 64, "Group size": 2, "dtype": "BFloat16", "In split size": "[1, 3]", "Process Group Name": "0", "Process Group Ranks": "[0, 1, ..., ]"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 99, "tid": 98, "ts": 400.0, "dur": 2.0, "args": {"External id": 500, "correlation": 11}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "pid": 1, "tid": 20, "ts": 410.0, "dur": 40.0, "args": {"correlation": 11}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:broadcast", "pid": 99, "tid": 98, "ts": 480.0, "dur": 10.0, "args": {"External id": 600}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 99, "tid": 98, "ts": 485.0, "dur": 2.0, "args": {"External id": 12, "correlation": 12}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "pid": 1, "tid": 20, "ts": 500.0, "dur": 5.0, "args": {"correlation": 12}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast_RING_LL(ncclDevComm*)", "pid": 1, "tid": 20, "ts": 600.0, "dur": 5.0,
   "args": {"Collective name": "broadcast", "In msg nelems": 10, "Group size": 2, "dtype": "Quaternion", "Process Group Ranks": "[0, 1]"}},
  {"ph": "f", "id": 1, "pid": 1, "tid": 7, "ts": 200.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "Trace", "ts": 0.0, "dur": 1000.0, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1000.0}
  ],
  "traceName": "synthetic.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1000000000000
})json";

TEST(KinetoImporterTest, SyntheticTraceFollowsEveryRule) {
  trace::ReadStats stats;
  KinetoInfo info;
  auto t = Import(kSynthetic, &stats, &info);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.base_time_ns, 1000000000000);
  EXPECT_EQ(info.ranks, std::vector<int32_t>{1});
  EXPECT_EQ(stats.events, 17);
  EXPECT_EQ(stats.skipped_total(), 0);
  ASSERT_EQ(t->ops.size(), 7u);  // 2 gemms, memcpy, 4 comm kernels
  const int64_t base = 1000000000000;
  // Compute kernels, overlapping on stream 7: both kept.
  const trace::OpEvent* a = FindOp(*t, "gemm_a");
  const trace::OpEvent* b = FindOp(*t, "gemm_b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rank, 1);
  EXPECT_EQ(a->stream, 7);
  EXPECT_EQ(a->category, Category::kCompute);
  EXPECT_EQ(a->ts_ns, base + 200000);
  EXPECT_EQ(a->dur_ns, 10000);
  EXPECT_EQ(b->ts_ns, base + 205000);
  EXPECT_EQ(FindOp(*t, "Memcpy HtoD")->category, Category::kOther);
  EXPECT_EQ(FindOp(*t, "Memcpy HtoD")->dur_ns, 1500);
  // All-reduce with its own args: 256 floats = 1024 B over group [0, 1], dim from "mesh_tp".
  const trace::OpEvent* ar = FindOp(*t, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)");
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->category, Category::kComm);
  EXPECT_EQ(ar->collective, Collective::kAllReduce);
  EXPECT_EQ(ar->bytes, 1024);
  EXPECT_EQ(ar->group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ar->dim, Dim::kTp);
  EXPECT_EQ(ar->dtype, "fp32");
  // Generic kernel joined through correlation 11 → External id 500 → record_param_comms:
  // all-to-all of 64 bf16 = 128 B; ranks truncated → pg_config "0" = [0, 1]; split [1, 3]
  // rows of 64 / 4 = 16 elements → 32 B and 96 B.
  std::vector<const trace::OpEvent*> generic;
  for (const auto& op : t->ops) {
    if (op.name.rfind("ncclDevKernel_Generic", 0) == 0) generic.push_back(&op);
  }
  ASSERT_EQ(generic.size(), 2u);
  EXPECT_EQ(generic[0]->collective, Collective::kAllToAll);
  EXPECT_EQ(generic[0]->bytes, 128);
  EXPECT_EQ(generic[0]->group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(generic[0]->bytes_per_peer, (std::vector<int64_t>{32, 96}));
  // The second: its launch lies inside "nccl:broadcast" (no External id match): the
  // collective is known, bytes and group are not.
  EXPECT_EQ(generic[1]->collective, Collective::kBroadcast);
  EXPECT_EQ(generic[1]->bytes, 0);
  EXPECT_TRUE(generic[1]->group.empty());
  // Unknown dtype: kept, bytes unknown, counted.
  const trace::OpEvent* bc = FindOp(*t, "ncclKernel_Broadcast_RING_LL(ncclDevComm*)");
  ASSERT_TRUE(bc);
  EXPECT_EQ(bc->collective, Collective::kBroadcast);
  EXPECT_EQ(bc->bytes, 0);
  EXPECT_EQ(stats.notes["unknown dtype 'Quaternion': bytes unknown"], 1);
  EXPECT_EQ(stats.notes["communication kernel without collective args: bytes and group unknown"],
            1);
  // The step: ProfilerStep#7, no phase.
  ASSERT_EQ(t->spans.size(), 1u);
  EXPECT_EQ(t->spans[0].kind, trace::SpanKind::kStep);
  EXPECT_EQ(t->spans[0].phase, trace::Phase::kNone);
  EXPECT_EQ(t->spans[0].step, 7);
  EXPECT_EQ(t->spans[0].rank, 1);
  EXPECT_EQ(t->spans[0].ts_ns, base + 100000);
  EXPECT_EQ(t->spans[0].dur_ns, 900000);
  // Names and metadata.
  EXPECT_EQ(t->thread_names.at({1, 7}), "stream 7");
  EXPECT_EQ(t->thread_names.at({1, 20}), "stream 20");
  EXPECT_EQ(t->process_names.at(1), "rank 1 · device 1 · GPU-B");
  EXPECT_EQ(t->metadata["world_size"], 2);
  EXPECT_EQ(t->metadata["source"]["format"], "kineto");
  EXPECT_EQ(t->metadata["kineto"]["devices"][1], "GPU-B");
  EXPECT_EQ(t->metadata["cluster"]["device"]["name"], "GPU-B");
  // Host events and flows are counted as ignored; the string-pid span and the instant too.
  EXPECT_EQ(stats.ignored["ph 'f'"], 1);
  EXPECT_EQ(stats.ignored["ph 'i'"], 1);
  EXPECT_EQ(stats.ignored["host/other cat 'Trace'"], 1);
  EXPECT_EQ(stats.ignored["host/other cat 'cpu_op'"], 2);  // aten::mm, record_param_comms
}

TEST(KinetoImporterTest, TruncatedRankListsFallBackOrStayUnknown) {
  // World 8. "[0, 2, 4, ..., ]" with: a start/stride → 0,2,4,6; Group size = world → 0…7;
  // neither (Group size 4 ≠ 8) → unknown group, kept, counted. All-gather: Out msg nelems.
  const std::string json = R"json({"distributedInfo": {"rank": 2, "world_size": 8},
"traceEvents": [
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 9, "ts": 1, "dur": 1,
 "args": {"Collective name": "_allgather_base", "In msg nelems": 8, "Out msg nelems": 32, "dtype": "Half", "Group size": 4,
          "Process Group Ranks": "[0, 2, 4, ..., ]", "Global rank start": 0, "Global rank stride": 2}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_RING_LL", "pid": 0, "tid": 9, "ts": 3, "dur": 1,
 "args": {"Collective name": "allreduce", "In msg nelems": 8, "dtype": "Float", "Group size": 8,
          "Process Group Ranks": "[0, 1, 2, ..., ]"}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_RING_LL", "pid": 0, "tid": 9, "ts": 5, "dur": 1,
 "args": {"Collective name": "allreduce", "In msg nelems": 8, "dtype": "Float", "Group size": 4,
          "Process Group Ranks": "[0, 2, 4, ..., ]"}}
]})json";
  trace::ReadStats stats;
  auto t = Import(json, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->ops.size(), 3u);
  EXPECT_EQ(t->ops[0].rank, 2);
  EXPECT_EQ(t->ops[0].collective, Collective::kAllGather);
  EXPECT_EQ(t->ops[0].group, (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_EQ(t->ops[0].bytes, 64);  // 32 halves: the full output
  EXPECT_EQ(t->ops[1].group, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t->ops[1].bytes, 32);
  EXPECT_TRUE(t->ops[2].group.empty());
  EXPECT_EQ(t->ops[2].bytes, 32);
  EXPECT_EQ(stats.notes["group unknown: \"Process Group Ranks\" truncated and no other source"], 1);
}

// Compute kernels get the shape of the host matrix product that launched them
// (correlation id → launch → External id, else the innermost product enclosing
// the launch on its thread): kind "gemm", FLOPs, bytes and dtype (issue 15).
TEST(KinetoImporterTest, GemmKernelsGetTheirHostOpsShape) {
  const std::string json = R"json({"traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 3, "ts": 99, "dur": 60,
 "args": {"External id": 4, "Input Dims": [[8, 512], [256, 512], [256]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 3, "ts": 100, "dur": 50,
 "args": {"External id": 5, "Input Dims": [[256], [8, 512], [512, 256], [], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 3, "ts": 110, "dur": 5,
 "args": {"correlation": 21, "External id": 5}},
{"ph": "X", "cat": "kernel", "name": "gemm_bias", "pid": 0, "tid": 7, "ts": 120, "dur": 10, "args": {"correlation": 21}},
{"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "pid": 7, "tid": 3, "ts": 200, "dur": 50,
 "args": {"Input Dims": [[4, 16, 64], [4, 64, 32]], "Input type": ["float", "float"]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 3, "ts": 210, "dur": 5,
 "args": {"correlation": 22}},
{"ph": "X", "cat": "kernel", "name": "gemm_batched", "pid": 0, "tid": 7, "ts": 220, "dur": 10, "args": {"correlation": 22}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 3, "ts": 300, "dur": 5,
 "args": {"correlation": 23}},
{"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 0, "tid": 7, "ts": 310, "dur": 10, "args": {"correlation": 23}}
]})json";
  trace::ReadStats stats;
  auto t = Import(json, &stats);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const trace::OpEvent* bias = FindOp(*t, "gemm_bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->kind, "gemm");
  EXPECT_EQ(bias->flops, 2 * 8 * 512 * 256);
  EXPECT_EQ(bias->bytes_read, (8 * 512 + 512 * 256) * 2);
  EXPECT_EQ(bias->bytes_written, 8 * 256 * 2);
  EXPECT_EQ(bias->dtype, "bf16");
  const trace::OpEvent* batched = FindOp(*t, "gemm_batched");  // no External id: enclosure
  ASSERT_NE(batched, nullptr);
  EXPECT_EQ(batched->kind, "gemm");
  EXPECT_EQ(batched->flops, 2 * 4 * 16 * 64 * 32);
  EXPECT_EQ(batched->bytes_read, 4 * (16 * 64 + 64 * 32) * 4);
  EXPECT_EQ(batched->dtype, "fp32");
  const trace::OpEvent* other = FindOp(*t, "elementwise");  // launched by no product
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->kind, "");
  EXPECT_EQ(other->flops, 0);
}

// issue 17: a trace recorded with shapes sizes its collectives on the host side
// (record_param_comms / nccl:<collective>: "Input Dims", "Input type") while the
// kernel has no "In msg nelems"; we reported "not available".
TEST(KinetoImporterTest, MessageSizesFromTheHostCallsInputDims) {
  const std::string json = R"json({"distributedInfo": {"rank": 0, "world_size": 2},
"traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 7, "ts": 100, "dur": 50,
 "args": {"External id": 5, "Input Dims": [[1024, 384], [], []], "Input type": ["c10::BFloat16", "Scalar", "Scalar"]}},
{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 7, "tid": 7, "ts": 101, "dur": 40,
 "args": {"External id": 6, "Input Dims": [[1024, 384]], "Input type": ["c10::BFloat16"]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 110, "dur": 5,
 "args": {"correlation": 77, "External id": 6}},
{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_bf16", "pid": 0, "tid": 20, "ts": 200, "dur": 30,
 "args": {"correlation": 77, "External id": 77}},
{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 7, "ts": 300, "dur": 50,
 "args": {"External id": 8, "Input Dims": [[], [], []], "Input type": ["Scalar", "Scalar", "Scalar"]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 310, "dur": 5,
 "args": {"correlation": 78, "External id": 8}},
{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_bf16", "pid": 0, "tid": 20, "ts": 400, "dur": 30,
 "args": {"correlation": 78, "External id": 78}}
]})json";
  trace::ReadStats stats;
  auto t = Import(json, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<const trace::OpEvent*> comm;
  for (const auto& op : t->ops) {
    if (op.is_comm()) comm.push_back(&op);
  }
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_EQ(comm[0]->collective, Collective::kAllReduce);
  EXPECT_EQ(comm[0]->bytes, 1024 * 384 * 2);  // bf16 elements of the first input
  EXPECT_EQ(comm[0]->dtype, "bf16");
  EXPECT_EQ(comm[1]->bytes, 0);  // scalars only: still unknown
  EXPECT_EQ(stats.notes["communication kernel sized from its host call's Input Dims"], 1);
}

TEST(KinetoImporterTest, BatchedAndSingleEventParsingAgree) {
  trace::ReadStats s1, s2;
  auto t1 = Import(kSynthetic, &s1, nullptr, true);
  auto t2 = Import(kSynthetic, &s2, nullptr, false);
  ASSERT_TRUE(t1.ok() && t2.ok());
  EXPECT_EQ(*t1, *t2);
  EXPECT_EQ(s1.ignored, s2.ignored);
  EXPECT_EQ(s1.notes, s2.notes);
  EXPECT_EQ(s1.events, s2.events);
}

TEST(KinetoImporterTest, MalformedEventsAreCountedAndSkipped) {
  const std::string json = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k_ok", "pid": 0, "tid": 7, "ts": 10, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k_strpid", "pid": "GPU 0", "tid": 7, "ts": 10, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k_neg", "pid": 0, "tid": 7, "ts": 10, "dur": -1},
  {"ph": "X", "cat": "kernel", "name": "k_nodur", "pid": 0, "tid": 7, "ts": 10},
  {"ph": "X", "cat": "kernel", "name": "k_badts", "pid": 0, "tid": 7, "ts": "soon", "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k_bad" "pid": 0},
  {"ph": "X", "pid": "Spans", "tid": "x", "cat": "Trace", "ts": 0, "dur": 5}
  ]})";
  trace::ReadStats stats;
  KinetoInfo info;
  auto t = Import(json, &stats, &info);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->ops.size(), 1u);
  EXPECT_EQ(t->ops[0].name, "k_ok");
  EXPECT_EQ(t->ops[0].rank, 0);  // no distributedInfo: the device
  EXPECT_FALSE(info.rank.has_value());
  EXPECT_EQ(stats.skipped["GPU event pid is not an integer (the device)"], 1);
  EXPECT_EQ(stats.skipped["negative dur"], 1);
  EXPECT_EQ(stats.skipped["X event without dur"], 1);
  EXPECT_EQ(stats.skipped["ts or dur is not a number"], 1);
  EXPECT_EQ(stats.skipped["invalid JSON"], 1);
  EXPECT_EQ(stats.skipped_total(), 5);
  EXPECT_EQ(stats.ignored["host/other cat 'Trace'"], 1);
  EXPECT_EQ(stats.events, 7);
}

// Fuzzer finding (kineto_fuzzer): a step "number" of 23 characters kept being multiplied
// by 10 after it was known to be invalid — signed overflow.
TEST(KinetoImporterTest, LongProfilerStepNumberIsSkippedWithoutOverflow) {
  const std::string json = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7vvvvvvvvvvvvvvvvvvvvvv", "pid": 9, "tid": 9, "ts": 1, "dur": 5},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#99999999999999999999999", "pid": 9, "tid": 9, "ts": 1, "dur": 5},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#123456789", "pid": 9, "tid": 9, "ts": 1, "dur": 5},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1}
  ]})";
  trace::ReadStats stats;
  auto t = Import(json, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(stats.skipped["ProfilerStep# without a step number"], 2);
  ASSERT_EQ(t->ops.size(), 1u);
}

TEST(KinetoImporterTest, TruncatedFilesAreDataLossAndDeliverNothing) {
  ScratchDir dir;
  std::string full = kSynthetic;
  // Missing closing bracket and brace: ends after an event.
  std::string cut = full.substr(0, full.find("{\"ph\": \"f\""));
  WriteFile(dir.File("cut.json"), cut);
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto r = ImportKineto(dir.File("cut.json"), &builder);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("cut.json: truncated at byte"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(t.ops.empty());
  // Truncated gzip.
  std::string gz = Gzip(full);
  WriteFile(dir.File("cut.json.gz"), gz.substr(0, gz.size() / 2));
  r = ImportKineto(dir.File("cut.json.gz"), &builder);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("cut.json.gz"), std::string::npos);
  EXPECT_NE(r.status().message().find("gzip"), std::string::npos) << r.status().message();
  EXPECT_TRUE(t.ops.empty());
  // The whole gzip file reads like the plain one.
  WriteFile(dir.File("ok.json.gz"), gz);
  trace::Trace whole;
  trace::TraceBuilder whole_builder(&whole);
  ASSERT_TRUE(ImportKineto(dir.File("ok.json.gz"), &whole_builder).ok());
  EXPECT_EQ(whole.ops.size(), 7u);
}

// Golden tests on the real traces of ../shared/testdata/kineto against
// kineto_expected.json (written by kineto_expected.py beside it).
class KinetoGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kTestData);
    std::ifstream in(kExpected);
    ASSERT_TRUE(in) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(KinetoGoldenTest, EveryFileMatchesTheIndependentScript) {
  int files = 0;
  for (const auto& [name, want] : expected_.items()) {
    if (name == "sets") continue;
    SCOPED_TRACE(name);
    ++files;
    std::string path = kTestData + "/" + name;
    trace::Trace t;
    trace::TraceBuilder builder(&t);
    KinetoInfo info;
    auto stats = ImportKineto(path, &builder, &info);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->skipped_total(), 0) << stats->Summary();
    EXPECT_EQ(info.rank, want["rank"].get<int32_t>());
    EXPECT_EQ(info.world_size, want["world_size"].get<int32_t>());
    EXPECT_EQ(static_cast<int64_t>(t.ops.size()), want["gpu_ops"].get<int64_t>());
    std::map<std::string, int64_t> by_collective;
    int64_t comm = 0, bytes = 0, with_bytes = 0;
    int64_t first_ts = INT64_MAX;
    for (const trace::OpEvent& op : t.ops) {
      first_ts = std::min(first_ts, op.ts_ns);
      EXPECT_EQ(op.rank, want["rank"].get<int32_t>());
      if (!op.is_comm()) continue;
      ++comm;
      bytes += op.bytes;
      with_bytes += op.bytes > 0;
      std::string key = op.collective == Collective::kNone
                            ? (op.kind.empty() ? "unknown" : "none")
                            : std::string(trace::CollectiveName(op.collective));
      ++by_collective[key];
    }
    EXPECT_EQ(comm, want["comm_kernels"].get<int64_t>());
    using Counts = std::map<std::string, int64_t>;
    EXPECT_EQ(by_collective, want["comm_by_collective"].get<Counts>());
    EXPECT_EQ(bytes, want["comm_bytes"].get<int64_t>());
    EXPECT_EQ(with_bytes, want["comm_ops_with_bytes"].get<int64_t>());
    EXPECT_EQ(first_ts, want["first_op_ts_ns"].get<int64_t>());
    ASSERT_EQ(t.spans.size(), want["steps"].size());
    for (size_t i = 0; i < t.spans.size(); ++i) {
      EXPECT_EQ(t.spans[i].step, want["steps"][i]["step"].get<int32_t>());
      EXPECT_EQ(t.spans[i].ts_ns, want["steps"][i]["ts_ns"].get<int64_t>());
      EXPECT_EQ(t.spans[i].dur_ns, want["steps"][i]["dur_ns"].get<int64_t>());
    }
  }
  EXPECT_EQ(files, 13);
}

TEST_F(KinetoGoldenTest, BatchedAndSingleEventParsingAgreeOnARealTrace) {
  std::string path = kTestData + "/resnet_act_checkpoint.json.gz";
  trace::Trace batched, single;
  trace::TraceBuilder b1(&batched), b2(&single);
  trace::ReadOptions one_by_one;
  one_by_one.batch_events = false;
  auto s1 = ImportKineto(path, &b1);
  auto s2 = ImportKineto(path, &b2, nullptr, one_by_one);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(batched, single);
  EXPECT_EQ(s1->ignored, s2->ignored);
  EXPECT_EQ(s1->notes, s2->notes);
  EXPECT_EQ(s1->events, s2->events);
}

// Read in parallel parts (ImportKinetoParallel), every real trace gives the same
// ops, spans, names, counts and info as read by one thread, wherever it is cut.
void ExpectParallelEqualsSequential(const std::string& json, const std::string& what) {
  SCOPED_TRACE(what);
  auto source = trace::MemoryByteSource(json, "t.json");
  trace::Trace want;
  trace::TraceBuilder want_builder(&want);
  KinetoInfo want_info;
  auto want_stats = ImportKinetoFrom(source.get(), "t.json", &want_builder, &want_info);
  ASSERT_TRUE(want_stats.ok()) << want_stats.status().ToString();
  auto input = trace::MemoryRandomAccess(json);
  for (size_t range : {size_t{4096}, json.size() / 7 + 1, json.size() / 2 + 1}) {
    SCOPED_TRACE(range);
    trace::ReadOptions options;
    options.threads = 2;
    options.range_bytes = range;
    trace::Trace got;
    trace::TraceBuilder got_builder(&got);
    KinetoInfo got_info;
    auto got_stats = ImportKinetoParallel(*input, "t.json", &got_builder, &got_info, options);
    ASSERT_TRUE(got_stats.ok()) << got_stats.status().ToString();
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_stats->Summary(), want_stats->Summary());
    EXPECT_EQ(got_stats->ignored, want_stats->ignored);
    EXPECT_EQ(got_stats->notes, want_stats->notes);
    EXPECT_EQ(got_stats->skipped, want_stats->skipped);
    EXPECT_EQ(got_stats->examples, want_stats->examples);
    EXPECT_EQ(got_info.rank, want_info.rank);
    EXPECT_EQ(got_info.ranks, want_info.ranks);
    EXPECT_EQ(got_info.devices, want_info.devices);
    EXPECT_EQ(got_info.base_time_ns, want_info.base_time_ns);
  }
}

TEST(KinetoImporterTest, ParallelPartsEqualOneThreadOnTheSyntheticTrace) {
  ExpectParallelEqualsSequential(kSynthetic, "synthetic");
}

TEST_F(KinetoGoldenTest, ParallelPartsEqualOneThreadOnEveryRealTrace) {
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kTestData)) {
    std::string path = entry.path().string();
    if (!entry.is_regular_file() || path.find(".json") == std::string::npos) continue;
    auto source = trace::OpenByteSource(path);
    ASSERT_TRUE(source.ok());
    std::string json, buf(1 << 20, '\0');
    while (true) {
      auto n = (*source)->Read(buf.data(), buf.size());
      ASSERT_TRUE(n.ok());
      if (*n == 0) break;
      json.append(buf.data(), *n);
    }
    ExpectParallelEqualsSequential(json, path);
    ++files;
  }
  EXPECT_GE(files, 13);
}

}  // namespace
}  // namespace shardscope::importers
