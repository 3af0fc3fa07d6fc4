#include "trace/event_log.h"

#include <gtest/gtest.h>

#include "trace/trace.h"

namespace shardscope::trace {
namespace {

// Every field of every kind of event comes back as it went in, in order.
TEST(EventLogTest, ReplaysEveryEventAsRecorded) {
  Trace direct;
  TraceBuilder to_direct(&direct);
  EventLog log;
  auto both = [&](auto&& deliver) {
    deliver(&to_direct);
    deliver(&log);
  };
  both([](TraceSink* s) { s->OnProcessName(3, "rank 3 · gpu 3"); });
  both([](TraceSink* s) { s->OnThreadName(3, 1, "comm tp"); });
  OpEvent op;
  op.rank = 3;
  op.stream = 1;
  op.name = "a name longer than the small-string buffer";
  op.category = Category::kComm;
  op.ts_ns = -5;
  op.dur_ns = 1234567890123;
  op.kind = "all_to_all";
  op.phase = Phase::kPrefill;
  op.step = 7;
  op.layer = 61;
  op.micro_batch = 2;
  op.sp_step = 1;
  op.flops = 1LL << 50;
  op.bytes_read = 11;
  op.bytes_written = 12;
  op.collective = Collective::kAllToAll;
  op.dim = Dim::kEp;
  op.group = {3, 4, 5};
  op.peer = 9;
  op.root = 4;
  op.seq = 99;
  op.bytes = 300;
  op.bytes_per_peer = {100, 0, 200};
  op.algorithm = "nvls_tree";
  op.protocol = "simple";
  op.all_to_all = "nccl";
  op.dtype = "bf16";
  op.experts = {8, 9};
  op.expert_tokens = {5, 6};
  both([&](TraceSink* s) { s->OnOp(op); });
  OpEvent request;  // a request span, then a bare op: fields must not leak from the one before
  request.name = "request 1";
  request.request.id = 1;
  request.request.prompt_tokens = 100;
  request.request.first_token_ns = 77;
  request.request.last_token_ns = 91;
  request.request.warmup = true;
  both([&](TraceSink* s) { s->OnOp(request); });
  both([](TraceSink* s) { s->OnOp(OpEvent()); });
  SpanEvent span{3, SpanKind::kStep, Phase::kDecode, 4, "step 4", 10, 20};
  both([&](TraceSink* s) { s->OnSpan(span); });
  CounterEvent counter{3, "memory", 15, {{"weights", 1.5}, {"kv_cache", 2e9}}};
  both([&](TraceSink* s) { s->OnCounter(counter); });
  both([](TraceSink* s) { s->OnCounter(CounterEvent{1, "empty", 0, {}}); });

  Trace replayed;
  TraceBuilder to_replayed(&replayed);
  log.Replay(&to_replayed);
  EXPECT_EQ(replayed, direct);
  ASSERT_EQ(replayed.ops.size(), 3u);
  EXPECT_EQ(replayed.ops[2], OpEvent());
  EXPECT_GT(log.size(), 0u);
  log.Clear();
  EXPECT_EQ(log.size(), 0u);
}

}  // namespace
}  // namespace shardscope::trace
