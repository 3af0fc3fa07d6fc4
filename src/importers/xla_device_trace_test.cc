#include "importers/xla_device_trace.h"

#include <gtest/gtest.h>

#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using trace::Category;
using trace::Collective;

XlaEvent Event(int64_t offset_ps, int64_t duration_ps, std::string name, std::string hlo = "",
               XlaStats stats = {}) {
  XlaEvent e;
  e.offset_ps = offset_ps;
  e.duration_ps = duration_ps;
  e.name = std::move(name);
  e.long_name = std::move(hlo);
  e.stats = std::move(stats);
  return e;
}

XlaDevice Device(int32_t ordinal, std::vector<XlaLine> lines) {
  XlaDevice d;
  d.ordinal = ordinal;
  d.name = "/device:TPU:" + std::to_string(ordinal);
  d.lines = std::move(lines);
  return d;
}

struct Emitted {
  trace::Trace trace;
  trace::ReadStats stats;
};

Emitted Emit(const std::vector<XlaDevice>& devices) {
  Emitted out;
  trace::TraceBuilder builder(&out.trace);
  EmitXlaDevices(devices, &builder, &out.stats);
  return out;
}

std::vector<const trace::OpEvent*> OnStream(const trace::Trace& t, int32_t rank, int32_t stream) {
  std::vector<const trace::OpEvent*> ops;
  for (const trace::OpEvent& op : t.ops) {
    if (op.rank == rank && op.stream == stream) ops.push_back(&op);
  }
  return ops;
}

TEST(XlaDeviceTraceTest, DeviceOrdinals) {
  EXPECT_EQ(XlaDeviceOrdinal("/device:TPU:3"), 3);
  EXPECT_EQ(XlaDeviceOrdinal("/device:GPU:12"), 12);
  EXPECT_FALSE(XlaDeviceOrdinal("/host:CPU").has_value());
  EXPECT_FALSE(XlaDeviceOrdinal("/device:TPU:0 SparseCore 1").has_value());
  EXPECT_FALSE(XlaDeviceOrdinal("/device:TPU:").has_value());
}

TEST(XlaDeviceTraceTest, SyncCollectiveComputeAndCopies) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(
      Event(1'000'000, 2'000'000, "fusion.1",
            "%fusion.1 = bf16[8,128]{1,0} fusion(bf16[8,128]{1,0} %p), kind=kLoop",
            {{"flops", "2048"}, {"bytes_accessed", "4096"}, {"hlo_category", "loop fusion"}}));
  ops.events.push_back(Event(4'000'000, 10'000'000, "all-reduce.2",
                             "%all-reduce.2 = bf16[8,128]{1,0} all-reduce(bf16[8,128]{1,0} "
                             "%fusion.1), replica_groups={{0,1},{2,3}}, to_apply=%add"));
  ops.events.push_back(
      Event(20'000'000, 1'000'000, "copy-start",
            "%copy-start = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(f32[4]{0} %q)"));
  Emitted e = Emit({Device(1, {ops})});
  auto stream0 = OnStream(e.trace, 1, 0);
  ASSERT_EQ(stream0.size(), 3u);
  const trace::OpEvent& fusion = *stream0[0];
  EXPECT_EQ(fusion.name, "fusion.1");
  EXPECT_EQ(fusion.category, Category::kCompute);
  EXPECT_EQ(fusion.kind, "loop fusion");
  EXPECT_EQ(fusion.ts_ns, 1000);
  EXPECT_EQ(fusion.dur_ns, 2000);
  EXPECT_EQ(fusion.flops, 2048);
  EXPECT_EQ(fusion.bytes_read, 4096);
  const trace::OpEvent& ar = *stream0[1];
  EXPECT_EQ(ar.category, Category::kComm);
  EXPECT_EQ(ar.collective, Collective::kAllReduce);
  EXPECT_EQ(ar.kind, "all_reduce");
  EXPECT_EQ(ar.group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ar.bytes, 8 * 128 * 2);
  EXPECT_EQ(ar.dtype, "bf16");
  EXPECT_EQ(stream0[2]->category, Category::kOther);
  EXPECT_EQ(e.trace.process_names.at(1), "/device:TPU:1");
  EXPECT_EQ(e.trace.thread_names.at({1, 0}), "XLA Ops");
  EXPECT_EQ(e.stats.ops, 3);
  EXPECT_TRUE(e.stats.notes.empty());
}

TEST(XlaDeviceTraceTest, AsyncCollectiveIsInFlightFromStartToDone) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(Event(1'000'000, 500'000, "all-gather-start",
                             "%ags = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-gather-start(f32[4,8]{1,0} "
                             "%p), replica_groups=[1,2]<=[2], dimensions={0}"));
  ops.events.push_back(Event(2'000'000, 5'000'000, "fusion", "%fusion = f32[2]{0} fusion(%a)"));
  ops.events.push_back(Event(8'000'000, 3'000'000, "all-gather-done",
                             "%agd = f32[8,8]{1,0} all-gather-done((f32[4,8]{1,0}, f32[8,8]{1,0}) "
                             "%ags)"));
  Emitted e = Emit({Device(0, {ops}), Device(1, {})});
  auto stream0 = OnStream(e.trace, 0, 0);
  ASSERT_EQ(stream0.size(), 3u);
  EXPECT_EQ(stream0[0]->category, Category::kOther);
  EXPECT_EQ(stream0[0]->kind, "all-gather-start");
  EXPECT_EQ(stream0[2]->category, Category::kOther);
  EXPECT_EQ(stream0[2]->kind, "all-gather-done");
  auto flight = OnStream(e.trace, 0, 2);
  ASSERT_EQ(flight.size(), 1u);
  EXPECT_EQ(flight[0]->name, "ags");
  EXPECT_EQ(flight[0]->category, Category::kComm);
  EXPECT_EQ(flight[0]->collective, Collective::kAllGather);
  EXPECT_EQ(flight[0]->ts_ns, 1000);
  EXPECT_EQ(flight[0]->end_ns(), 11000);  // the end of -done
  EXPECT_EQ(flight[0]->group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(flight[0]->bytes, 4 * 8 * 4 * 2);  // the gathered output
  EXPECT_EQ(e.trace.thread_names.at({0, 2}), "XLA collectives in flight");
}

TEST(XlaDeviceTraceTest, UnpairedAsyncHalvesAreNoted) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(
      Event(0, 1000, "all-reduce-done", "%ard = f32[4]{0} all-reduce-done(f32[4]{0} %ars.0)"));
  ops.events.push_back(Event(5000, 1000, "all-reduce-start",
                             "%ars.1 = f32[4]{0} all-reduce-start(f32[4]{0} %p), "
                             "replica_groups={}"));
  Emitted e = Emit({Device(0, {ops})});
  EXPECT_EQ(OnStream(e.trace, 0, 2).size(), 0u);
  EXPECT_EQ(OnStream(e.trace, 0, 0).size(), 2u);
  EXPECT_EQ(e.stats.notes.size(), 2u);
  EXPECT_EQ(e.stats.notes.begin()->second, 1);
}

TEST(XlaDeviceTraceTest, CollectivePermuteSendsAndReceives) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(Event(0, 4000, "collective-permute",
                             "%cp = bf16[64]{0} collective-permute(bf16[64]{0} %x), "
                             "source_target_pairs={{0,1},{1,2},{2,0}}"));
  Emitted e = Emit({Device(1, {ops})});
  auto ops1 = OnStream(e.trace, 1, 0);
  ASSERT_EQ(ops1.size(), 2u);
  EXPECT_EQ(ops1[0]->collective, Collective::kSend);
  EXPECT_EQ(ops1[0]->peer, 2);
  EXPECT_EQ(ops1[1]->collective, Collective::kRecv);
  EXPECT_EQ(ops1[1]->peer, 0);
  for (const trace::OpEvent* op : ops1) {
    EXPECT_EQ(op->bytes, 128);
    EXPECT_EQ(op->kind, "collective_permute");
    EXPECT_EQ(op->dur_ns, 4);
  }
}

TEST(XlaDeviceTraceTest, UnknownSizeKeepsCommTimeOnly) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(Event(0, 1000, "all-reduce",
                             "%ar = zz[4]{0} all-reduce(zz[4]{0} %p), replica_groups={{0,1}}"));
  ops.events.push_back(Event(2000, 1000, "all-reduce.9"));  // no HLO text
  Emitted e = Emit({Device(0, {ops})});
  auto ops0 = OnStream(e.trace, 0, 0);
  ASSERT_EQ(ops0.size(), 2u);
  for (const trace::OpEvent* op : ops0) {
    EXPECT_EQ(op->category, Category::kComm);
    EXPECT_EQ(op->collective, Collective::kNone);
    EXPECT_EQ(op->kind, "all_reduce");
    EXPECT_EQ(op->bytes, 0);
    EXPECT_TRUE(op->group.empty());
  }
  ASSERT_EQ(e.stats.notes.size(), 2u);
  bool named = false;
  for (const auto& [what, n] : e.stats.notes) named |= what.find("'zz'") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(XlaDeviceTraceTest, EmptyReplicaGroupsSpanEveryDevice) {
  XlaLine ops{"XLA Ops", {}};
  ops.events.push_back(
      Event(0, 1000, "all-reduce", "%ar = f32[4]{0} all-reduce(f32[4]{0} %p), replica_groups={}"));
  Emitted e = Emit({Device(2, {ops}), Device(0, {}), Device(5, {})});
  auto ops2 = OnStream(e.trace, 2, 0);
  ASSERT_EQ(ops2.size(), 1u);
  EXPECT_EQ(ops2[0]->group, (std::vector<int32_t>{0, 2, 5}));
}

TEST(XlaDeviceTraceTest, StepsRoundingAndIgnoredLines) {
  XlaLine steps{"Steps", {}};
  steps.events.push_back(Event(1499, 1000, "7"));
  steps.events.push_back(Event(1500, 1000, "warmup"));
  XlaLine modules{"XLA Modules", {Event(0, 10, "jit_f(1)"), Event(10, 10, "jit_f(1)")}};
  XlaDevice d = Device(0, {steps, modules});
  d.lines[0].events[0].base_ns = 1'000'000'000'000'000'000;  // epoch times stay exact
  Emitted e = Emit({d});
  ASSERT_EQ(e.trace.spans.size(), 2u);
  // In start order: "warmup" (at 2 ns) before "7" (at 1e18 ns + 1).
  const trace::SpanEvent& warmup = e.trace.spans[0];
  const trace::SpanEvent& seven = e.trace.spans[1];
  EXPECT_EQ(warmup.step, 0);   // not a number: its index in start order
  EXPECT_EQ(warmup.ts_ns, 2);  // 1500 ps rounds up
  EXPECT_EQ(warmup.dur_ns, 1);
  EXPECT_EQ(seven.step, 7);
  EXPECT_EQ(seven.name, "step 7");
  EXPECT_EQ(seven.kind, trace::SpanKind::kStep);
  EXPECT_EQ(seven.phase, trace::Phase::kNone);
  EXPECT_EQ(seven.ts_ns, 1'000'000'000'000'000'001);     // 1499 ps rounds down
  EXPECT_EQ(seven.end_ns(), 1'000'000'000'000'000'002);  // 2499 ps
  EXPECT_EQ(e.stats.ignored.at("XLA line \"XLA Modules\""), 2);
  EXPECT_EQ(e.stats.spans, 2);
}

TEST(XlaDeviceTraceTest, AsyncLineAndDeviceMetadata) {
  XlaLine async{"Async XLA Ops", {}};
  async.events.push_back(Event(0, 9000, "async-copy",
                               "%copy-start = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(f32[4]{0} "
                               "%p)",
                               {{"hlo_category", "copy-start"}, {"bytes_accessed", "32"}}));
  async.events.push_back(
      Event(0, 9000, "all-reduce-start", "%ars = f32[4]{0} all-reduce-start(f32[4]{0} %p)"));
  XlaDevice d = Device(0, {async});
  d.stats = {{"peak_teraflops_per_second", "918"},
             {"peak_hbm_bw_gigabytes_per_second", "1638.5"},
             {"device_type_string", "TPU v6 Lite"}};
  Emitted e = Emit({d});
  auto ops1 = OnStream(e.trace, 0, 1);
  ASSERT_EQ(ops1.size(), 1u);
  EXPECT_EQ(ops1[0]->category, Category::kOther);
  EXPECT_EQ(ops1[0]->kind, "copy-start");
  EXPECT_EQ(ops1[0]->bytes_read, 0);  // counted once, on the XLA Ops line
  EXPECT_EQ(e.stats.ignored.size(), 1u);
  EXPECT_DOUBLE_EQ(e.trace.metadata["cluster"]["device"]["peak_flops"].get<double>(), 918e12);
  EXPECT_DOUBLE_EQ(e.trace.metadata["cluster"]["device"]["memory_bandwidth"].get<double>(),
                   1638.5e9);
  EXPECT_EQ(e.trace.metadata["cluster"]["device"]["name"], "TPU v6 Lite");
}

}  // namespace
}  // namespace shardscope::importers
