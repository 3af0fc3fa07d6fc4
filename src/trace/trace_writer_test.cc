#include "trace/trace_writer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

// A trace that uses every field, odd strings and extreme numbers.
Trace RichTrace() {
  Trace t;
  t.metadata = {{"experiment", {{"name", "tp2"}}}, {"units", {{"time", "ns"}}}};
  t.process_names[0] = "rank 0 · node 0 · gpu 0";
  t.process_names[1] = "rank 1 \"quoted\" \\ back\nslash";
  t.thread_names[{0, 0}] = "compute";
  t.thread_names[{0, 1}] = "comm tp";
  OpEvent a;
  a.rank = 0;
  a.stream = 0;
  a.name = "L0.qkv_proj";
  a.category = Category::kCompute;
  a.ts_ns = 1;
  a.dur_ns = 999;
  a.kind = "qkv_proj";
  a.phase = Phase::kPrefill;
  a.layer = 0;
  a.micro_batch = 2;
  a.flops = 9'000'000'000'000'000'000;
  a.bytes_read = 123456789012345;
  a.bytes_written = 7;
  a.dtype = "bf16";
  t.ops.push_back(a);
  OpEvent x;
  x.rank = 3;
  x.name = "L1.expert_gemm.gate_up";
  x.kind = "expert_gemm";
  x.ts_ns = 11;
  x.dur_ns = 12;
  x.layer = 1;
  x.experts = {4, 5, 6, 7};
  x.expert_tokens = {0, 9'007'199'254'740'993, 3, 1};
  t.ops.push_back(x);
  OpEvent c;
  c.rank = 1;
  c.stream = 1;
  c.name = "all_to_all.ep";
  c.category = Category::kComm;
  c.ts_ns = 9'007'199'254'740'993'123;  // beyond double precision: must stay exact
  c.dur_ns = 0;
  c.kind = "all_to_all";
  c.phase = Phase::kDecode;
  c.step = 3;
  c.sp_step = 1;
  c.collective = Collective::kAllToAll;
  c.dim = Dim::kEp;
  c.group = {0, 1, 2};
  c.bytes = 600;
  c.bytes_per_peer = {100, 200, 300};
  c.seq = 17;
  t.ops.push_back(c);
  OpEvent s;
  s.rank = 1;
  s.stream = 2;
  s.name = "send";
  s.category = Category::kComm;
  s.ts_ns = -5;
  s.dur_ns = 1'000'001;
  s.collective = Collective::kSend;
  s.dim = Dim::kPp;
  s.peer = 0;
  s.root = 3;
  s.bytes = 1;
  t.ops.push_back(s);
  OpEvent o;
  o.rank = 2;
  o.name = "memcpy";
  o.category = Category::kOther;
  o.ts_ns = 10;
  o.dur_ns = 10;
  t.ops.push_back(o);
  t.spans.push_back({0, SpanKind::kPhase, Phase::kPrefill, -1, "prefill", 0, 5000});
  t.spans.push_back({0, SpanKind::kStep, Phase::kDecode, 4, "step 4", 5000, 77});
  t.counters.push_back({0, "memory", 12, {{"weights", 1.5e10}, {"kv_cache", 0.1}, {"x", -3}}});
  return t;
}

TEST(TraceWriterTest, WriteThenReadIsExact) {
  ScratchDir dir;
  for (const char* name : {"t.json", "t.json.gz"}) {
    Trace in = RichTrace();
    std::string path = dir.File(name);
    ASSERT_TRUE(WriteTrace(in, path).ok());
    ReadStats stats;
    StatusOr<Trace> out = ReadTraceFile(path, &stats);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(stats.skipped_total(), 0) << stats.Summary();
    EXPECT_EQ(stats.ops, 5);
    EXPECT_EQ(stats.spans, 2);
    EXPECT_EQ(stats.counters, 1);
    EXPECT_EQ(out->ops, in.ops) << name;
    EXPECT_EQ(out->spans, in.spans) << name;
    EXPECT_EQ(out->counters, in.counters) << name;
    EXPECT_EQ(out->process_names, in.process_names);
    EXPECT_EQ(out->thread_names, in.thread_names);
    EXPECT_EQ(out->metadata, in.metadata);
  }
}

// A simulated comm op's choices (args algorithm, protocol, all_to_all) are
// written only when set, and read back as they were.
TEST(TraceWriterTest, CommChoiceArgsRoundTrip) {
  ScratchDir dir;
  Trace in;
  OpEvent ar;
  ar.rank = 0;
  ar.stream = 1;
  ar.name = "allreduce.tp.L0";
  ar.category = Category::kComm;
  ar.dur_ns = 5;
  ar.collective = Collective::kAllReduce;
  ar.group = {0, 1};
  ar.bytes = 1024;
  ar.algorithm = "nvls_tree";
  ar.protocol = "simple";
  in.ops.push_back(ar);
  OpEvent a2a = ar;
  a2a.name = "all_to_all.ep";
  a2a.collective = Collective::kAllToAll;
  a2a.algorithm = "hierarchical";
  a2a.protocol.clear();
  a2a.all_to_all = "hierarchical";
  in.ops.push_back(a2a);
  OpEvent plain = ar;  // a measured trace's op: none of the three
  plain.algorithm.clear();
  plain.protocol.clear();
  in.ops.push_back(plain);
  const std::string path = dir.File("t.json");
  ASSERT_TRUE(WriteTrace(in, path).ok());
  const std::string text = ReadWholeFile(path);
  EXPECT_NE(text.find(R"("algorithm":"nvls_tree","protocol":"simple")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("algorithm":"hierarchical","all_to_all":"hierarchical")"),
            std::string::npos);
  EXPECT_EQ(text.find(R"("protocol":"")"), std::string::npos);
  ReadStats stats;
  StatusOr<Trace> out = ReadTraceFile(path, &stats);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(stats.skipped_total(), 0) << stats.Summary();
  EXPECT_EQ(out->ops, in.ops);
}

TEST(TraceWriterTest, GzipOutputIsCompressed) {
  ScratchDir dir;
  ASSERT_TRUE(WriteTrace(RichTrace(), dir.File("t.json.gz")).ok());
  std::string bytes = ReadWholeFile(dir.File("t.json.gz"));
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
}

TEST(TraceWriterTest, TimestampsAreMicrosecondsWithThreeDecimals) {
  std::string s;
  AppendMicros(1500, &s);
  EXPECT_EQ(s, "1.500");
  s.clear();
  AppendMicros(-1, &s);
  EXPECT_EQ(s, "-0.001");
  s.clear();
  AppendMicros(0, &s);
  EXPECT_EQ(s, "0.000");
}

TEST(TraceWriterTest, NothingUnderFinalNameUntilClose) {
  ScratchDir dir;
  std::string path = dir.File("t.json");
  {
    auto w = TraceWriter::Open(path, nlohmann::json::object());
    ASSERT_TRUE(w.ok());
    (*w)->AddOp(RichTrace().ops[0]);
    EXPECT_FALSE(std::filesystem::exists(path));
    // Destroyed without Close(): as after a crash, nothing appears and the temp file goes.
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(TraceWriterTest, NoOverwriteWhenAsked) {
  ScratchDir dir;
  std::string path = dir.File("t.json");
  WriteFile(path, "keep me");
  TraceWriterOptions options;
  options.overwrite = false;
  Status s = WriteTrace(RichTrace(), path, options);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(ReadWholeFile(path), "keep me");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(TraceWriterTest, BadEventIsStickyError) {
  ScratchDir dir;
  auto w = TraceWriter::Open(dir.File("t.json"), nlohmann::json::object());
  ASSERT_TRUE(w.ok());
  OpEvent op;
  op.dur_ns = -1;
  (*w)->AddOp(op);
  EXPECT_FALSE((*w)->status().ok());
  (*w)->AddOp(RichTrace().ops[0]);  // dropped
  EXPECT_EQ((*w)->Close().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir.File("t.json")));
}

TEST(TraceWriterTest, UnwritableDirectoryIsAnError) {
  auto w = TraceWriter::Open("/nonexistent-dir/x/t.json", nlohmann::json::object());
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kIoError);
}

// zlib's own inflate of a whole gzip file (the reference reader): the text, and
// whether the file is one gzip member that ends exactly at the end of the file.
struct Inflated {
  std::string text;
  bool one_member = false;
  bool ok = false;
};
Inflated Gunzip(const std::string& bytes) {
  Inflated r;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return r;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    r.text.append(buf, sizeof(buf) - zs.avail_out);
  }
  r.ok = rc == Z_STREAM_END;
  r.one_member = r.ok && zs.avail_in == 0;
  inflateEnd(&zs);
  return r;
}

// Many events (several 4 MiB blocks): every field, escapes, large arrays.
Trace BigTrace() {
  Trace t = RichTrace();
  const Trace rich = RichTrace();
  for (int i = 0; i < 12000; ++i) {
    for (OpEvent op : rich.ops) {
      op.ts_ns += i * 1'000'003LL;
      op.rank = i % 64;
      t.ops.push_back(std::move(op));
    }
  }
  OpEvent wide;  // one event larger than a block
  wide.name = std::string(300000, 'w') + "\x01\"";
  wide.category = Category::kComm;
  wide.group.assign(200000, 7);
  wide.bytes_per_peer.assign(200000, 9'000'000'000'000'000'000);
  t.ops.push_back(wide);
  return t;
}

TEST(TraceWriterTest, RequestSpansKeepTheirArgs) {
  ScratchDir dir;
  Trace in;
  OpEvent q;  // a served request's span
  q.rank = 1;
  q.stream = 9;
  q.name = "request 7 (100 → 20 tokens)";
  q.category = Category::kOther;
  q.kind = "request";
  q.ts_ns = 1'000;
  q.dur_ns = 90'001;
  q.request = {7, 100, 20, 2'001, 30'002, 31'003, 2, true, 88'004};
  in.ops.push_back(q);
  q.request = {8, 1, 1, 1'000, 5'000, -1, 0, false};  // no KV transfer, not warm-up
  in.ops.push_back(q);
  q.request = {9, 64, 3, 0, 4'000, -1, 0, false, 9'000, true};  // decode-only
  in.ops.push_back(q);
  ASSERT_TRUE(WriteTrace(in, dir.File("t.json")).ok());
  ReadStats stats;
  StatusOr<Trace> out = ReadTraceFile(dir.File("t.json"), &stats);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(stats.skipped_total(), 0) << stats.Summary();
  EXPECT_EQ(out->ops, in.ops);
}

TEST(TraceWriterTest, PlainOutputIsByteIdenticalToTheGolden) {
  // tests/data/trace_writer/rich.json: RichTrace() as written by the writer
  // before issue 17 made it fast (fmt into a std::string, 1 MiB flushes).
  ScratchDir dir;
  Trace t = RichTrace();
  t.metadata = nlohmann::json::object();
  ASSERT_TRUE(WriteTrace(t, dir.File("t.json")).ok());
  const std::string golden =
      std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/trace_writer/rich.json";
  if (std::getenv("SHARDSCOPE_UPDATE_GOLDEN")) {
    WriteFile(golden, ReadWholeFile(dir.File("t.json")));
  }
  EXPECT_EQ(ReadWholeFile(dir.File("t.json")), ReadWholeFile(golden));
}

TEST(TraceWriterTest, GzipIsOneMemberThatInflatesToThePlainBytes) {
  ScratchDir dir;
  const Trace t = BigTrace();
  ASSERT_TRUE(WriteTrace(t, dir.File("t.json")).ok());
  for (int threads : {1, 3}) {
    TraceWriterOptions options;
    options.gzip_threads = threads;
    ASSERT_TRUE(WriteTrace(t, dir.File("t.json.gz"), options).ok());
    const std::string plain = ReadWholeFile(dir.File("t.json"));
    const std::string gz = ReadWholeFile(dir.File("t.json.gz"));
    EXPECT_GT(plain.size(), size_t{8} << 20);  // several blocks
    EXPECT_LT(gz.size(), plain.size() / 4);
    Inflated in = Gunzip(gz);
    ASSERT_TRUE(in.ok) << threads;
    EXPECT_TRUE(in.one_member) << threads;
    EXPECT_TRUE(in.text == plain) << threads;  // not EXPECT_EQ: 30 MB in a failure message
    // And our reader reads it back as the events written.
    ReadStats stats;
    StatusOr<Trace> back = ReadTraceFile(dir.File("t.json.gz"), &stats);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(stats.skipped_total(), 0) << stats.Summary();
    ASSERT_EQ(back->ops.size(), t.ops.size());
    for (size_t i = 0; i < t.ops.size(); ++i) {
      ASSERT_TRUE(back->ops[i] == t.ops[i]) << i << " " << back->ops[i].name.substr(0, 40);
    }
  }
}

TEST(TraceWriterTest, BytesWrittenCountsTheJsonText) {
  ScratchDir dir;
  auto w = TraceWriter::Open(dir.File("t.json.gz"), nlohmann::json::object());
  ASSERT_TRUE(w.ok());
  (*w)->AddAll(BigTrace());
  const int64_t before_close = (*w)->bytes_written();
  ASSERT_TRUE((*w)->Close().ok());
  // Close adds the closing "\n]}\n".
  EXPECT_EQ(before_close + 4,
            static_cast<int64_t>(Gunzip(ReadWholeFile(dir.File("t.json.gz"))).text.size()));
}

}  // namespace
}  // namespace shardscope::trace
