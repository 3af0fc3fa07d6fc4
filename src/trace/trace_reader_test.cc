#include "trace/trace_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_writer.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

StatusOr<ReadStats> ReadString(const std::string& text, Trace* trace, size_t chunk = 1 << 20,
                               bool batch = true) {
  auto source = MemoryByteSource(text, "mem.json");
  TraceBuilder builder(trace);
  ReadOptions options;
  options.chunk_bytes = chunk;
  options.batch_events = batch;
  return ReadTraceFrom(source.get(), "mem.json", &builder, options);
}

constexpr char kGood[] =
    R"({"otherData":{"k":1},"traceEvents":[
{"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0"}},
{"ph":"X","pid":0,"tid":1,"ts":1.5,"dur":2,"name":"a\"b","cat":"comm","args":{"collective":"all_reduce","group":[0,1],"bytes":8}},
{"ph":"C","pid":0,"ts":3,"name":"memory","args":{"weights":10,"kv_cache":2.5}}
],"displayTimeUnit":"ns"})";

TEST(TraceReaderTest, ReadsObjectForm) {
  Trace t;
  auto stats = ReadString(kGood, &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->events, 3);
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].name, "a\"b");
  EXPECT_EQ(t.ops[0].ts_ns, 1500);
  EXPECT_EQ(t.ops[0].dur_ns, 2000);
  EXPECT_EQ(t.ops[0].collective, Collective::kAllReduce);
  EXPECT_EQ(t.ops[0].group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(t.process_names[0], "rank 0");
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.counters[0].values[1].second, 2.5);
  EXPECT_EQ(t.metadata["k"], 1);
}

TEST(TraceReaderTest, EveryChunkSizeGivesTheSameTrace) {
  Trace whole;
  ASSERT_TRUE(ReadString(kGood, &whole).ok());
  for (size_t chunk : {64, 65, 100, 128, 333}) {
    Trace t;
    auto stats = ReadString(kGood, &t, chunk);
    ASSERT_TRUE(stats.ok()) << chunk << ": " << stats.status().ToString();
    EXPECT_EQ(t, whole) << chunk;
  }
}

TEST(TraceReaderTest, ReadsArrayFormWithOrWithoutClosingBracket) {
  for (const char* text : {R"([{"ph":"X","pid":1,"ts":0,"dur":1,"name":"k"}])",
                           "[{\"ph\":\"X\",\"pid\":1,\"ts\":0,\"dur\":1,\"name\":\"k\"},\n"}) {
    Trace t;
    auto stats = ReadString(text, &t);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_TRUE(stats->array_form);
    ASSERT_EQ(t.ops.size(), 1u);
    EXPECT_EQ(t.ops[0].rank, 1);
    EXPECT_EQ(t.ops[0].category, Category::kOther);  // no cat, no collective
  }
}

TEST(TraceReaderTest, MalformedEventsAreCountedAndSkipped) {
  Trace t;
  auto stats = ReadString(R"({"traceEvents":[
    {"ph":"X","pid":0,"ts":0,"dur":1,"name":"ok"},
    {"ph":"X","pid":0,"dur":1},
    {"ph":"X","pid":0,"ts":"zero","dur":1},
    {"ph":"X","ts":0,"dur":1},
    {"ph":"X","pid":0,"ts":0},
    {"ph":"X","pid":0,"ts":0,"dur":-1},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"group":[0,"x"]}},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"group":[0,1],"bytes_per_peer":[1]}},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"experts":[0,1],"expert_tokens":[1]}},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"experts":[0],"expert_tokens":[-1]}},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"request":{"prompt_tokens":3}}},
    {"ph":"X","pid":0,"ts":0,"dur":1,"args":{"request":{"id":1,"first_token_us":"x"}}},
    {"pid":0,"ts":0},
    {"ph":"X","pid":0,"ts":0,"dur":1,"name":tru},
    [1,2],
    7,
    {"ph":"i","pid":0,"ts":0,"name":"instant"},
    {"args":{"collective":"send","peer":1},"ph":"X","pid":0,"ts":0,"dur":1,"name":"late-ph"}
  ]})",
                          &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->events, 18);
  EXPECT_EQ(stats->ops, 2);
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[1].name, "late-ph");
  EXPECT_EQ(t.ops[1].collective, Collective::kSend);  // args before ph still read
  EXPECT_EQ(t.ops[1].category, Category::kComm);
  EXPECT_EQ(stats->skipped.at("missing ts"), 1);
  EXPECT_EQ(stats->skipped.at("ts or dur is not a number"), 1);
  EXPECT_EQ(stats->skipped.at("missing pid"), 1);
  EXPECT_EQ(stats->skipped.at("X event without dur"), 1);
  EXPECT_EQ(stats->skipped.at("negative dur"), 1);
  EXPECT_EQ(stats->skipped.at("bad value of args.group"), 1);
  EXPECT_EQ(stats->skipped.at("bytes_per_peer length differs from the group size"), 1);
  EXPECT_EQ(stats->skipped.at("expert_tokens length differs from experts"), 1);
  EXPECT_EQ(stats->skipped.at("bad value of args.expert_tokens"), 1);
  EXPECT_EQ(stats->skipped.at("bad value of args.request"), 2);  // no id; a time not a number
  EXPECT_EQ(stats->skipped.at("missing ph"), 1);
  EXPECT_EQ(stats->skipped.at("event is not a JSON object"), 2);
  EXPECT_EQ(stats->ignored.at("ph 'i'"), 1);
  EXPECT_EQ(stats->skipped_total(), 15);
  EXPECT_NE(stats->Summary().find("skipped 15 malformed"), std::string::npos) << stats->Summary();
}

// Runs of plain events are parsed as one document; an event that fails there is
// parsed again alone. Whatever the mix and the chunk size, the outcome (events,
// counts, reasons, examples with their offsets) equals parsing each event alone.
TEST(TraceReaderTest, BatchedParsingEqualsParsingEachEvent) {
  const std::vector<std::string> kinds = {
      R"({"ph":"X","pid":1,"tid":0,"ts":1.5,"dur":2,"name":"k","cat":"compute","args":{"flops":10}})",
      R"({"ph":"X","pid":0,"tid":1,"ts":3,"dur":1,"name":"ar","cat":"comm","args":{"collective":"all_reduce","group":[0,1],"bytes":8}})",
      R"({"ph":"X","pid":0,"ts":0,"dur":-1})",                           // negative dur
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"args":{"group":[0,"x"]}})",   // bad args.group
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":tru})",                 // invalid JSON
      R"({"ph":"X" "pid":0})",                                           // missing comma
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"args":{"phase":"warmup"}})",  // ignored value, kept
      R"({"ph":"i","pid":0,"ts":0,"name":"instant"})",                   // ignored ph
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"esc\"aped"})",         // backslash: alone
      R"({"args":{"collective":"send","peer":1},"ph":"X","pid":0,"ts":0,"dur":1})",  // args first
      R"({"ph":"C","pid":0,"ts":4,"name":"memory","args":{"weights":1,"kv":2.5}})",
      R"({"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0 · gpu"}})",
      R"({"ph":"M","pid":0,"name":"other_meta","args":{}})",
      R"({"ph":"X","pid":0,"tid":1000,"ts":0,"dur":9,"name":"step 0","cat":"step","args":{"step":0}})",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"\u00e9"})",
      "[1,2]",
      "7",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"bad utf8 )"
      "\xff"
      R"("})",
  };
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) & 0x7fff;
  };
  for (int round = 0; round < 20; ++round) {
    std::string text = R"({"traceEvents":[)";
    int n = 50 + static_cast<int>(next() % 100);
    for (int i = 0; i < n; ++i) {
      if (i > 0) text += next() % 3 == 0 ? ",\n  " : ",";
      // Mostly good events, so batches form between the bad ones.
      text += kinds[next() % 4 == 0 ? next() % kinds.size() : next() % 2];
    }
    text += "]}";
    for (size_t chunk : {64, 200, 1000, 1 << 20}) {
      Trace alone, batched;
      auto a = ReadString(text, &alone, chunk, /*batch=*/false);
      auto b = ReadString(text, &batched, chunk, /*batch=*/true);
      ASSERT_EQ(a.ok(), b.ok()) << round << " " << chunk;
      if (!a.ok()) {
        EXPECT_EQ(a.status().ToString(), b.status().ToString());
        continue;
      }
      EXPECT_EQ(alone, batched) << round << " " << chunk;
      EXPECT_EQ(a->events, b->events);
      EXPECT_EQ(a->ops, b->ops);
      EXPECT_EQ(a->spans, b->spans);
      EXPECT_EQ(a->counters, b->counters);
      EXPECT_EQ(a->names, b->names);
      EXPECT_EQ(a->skipped, b->skipped) << round << " " << chunk;
      EXPECT_EQ(a->ignored, b->ignored) << round << " " << chunk;
      EXPECT_EQ(a->examples, b->examples) << round << " " << chunk;
      EXPECT_EQ(a->events, n);
    }
  }
}

TEST(TraceReaderTest, TruncatedFileNamesTheByteOffset) {
  std::string text = kGood;
  std::string cut = text.substr(0, 150);  // inside the X event
  Trace t;
  auto stats = ReadString(cut, &t);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(stats.status().message().find("truncated at byte 150"), std::string::npos)
      << stats.status().message();
  EXPECT_NE(stats.status().message().find("mem.json"), std::string::npos);
  // Cut between events: still truncated (the object form needs its end).
  auto stats2 = ReadString(text.substr(0, text.find("\n{\"ph\":\"C\"")), &t);
  ASSERT_FALSE(stats2.ok());
  EXPECT_EQ(stats2.status().code(), StatusCode::kDataLoss);
}

TEST(TraceReaderTest, EmptyAndNonJsonFilesAreClearErrors) {
  Trace t;
  auto empty = ReadString("", &t);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty file"), std::string::npos);
  auto blank = ReadString("  \n ", &t);
  ASSERT_FALSE(blank.ok());
  EXPECT_NE(blank.status().message().find("empty file"), std::string::npos);
  auto text = ReadString("hello world", &t);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("not a JSON trace"), std::string::npos);
  auto no_events = ReadString(R"({"foo": [1, 2]})", &t);
  ASSERT_FALSE(no_events.ok());
  EXPECT_NE(no_events.status().message().find("traceEvents"), std::string::npos);
  auto garbage_between = ReadString(R"({"traceEvents":[{"ph":"X"} x ]})", &t);
  ASSERT_FALSE(garbage_between.ok());
  EXPECT_NE(garbage_between.status().message().find("at byte 27"), std::string::npos)
      << garbage_between.status().message();
}

TEST(TraceReaderTest, MissingFileIsNotFound) {
  Trace t;
  TraceBuilder builder(&t);
  auto stats = ReadTrace("/nonexistent/trace.json", &builder);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kNotFound);
}

TEST(TraceReaderTest, TruncatedGzipIsDataLoss) {
  ScratchDir dir;
  Trace in;
  for (int i = 0; i < 2000; ++i) {
    OpEvent op;
    op.name = "op" + std::to_string(i * 7919 % 1000);
    op.ts_ns = i * 1000;
    op.dur_ns = 500 + i % 13;
    in.ops.push_back(op);
  }
  ASSERT_TRUE(WriteTrace(in, dir.File("t.json.gz")).ok());
  std::string bytes = ReadWholeFile(dir.File("t.json.gz"));
  WriteFile(dir.File("cut.json.gz"), bytes.substr(0, bytes.size() / 2));
  Trace t;
  TraceBuilder builder(&t);
  auto stats = ReadTrace(dir.File("cut.json.gz"), &builder);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(stats.status().message().find("gzip data truncated"), std::string::npos)
      << stats.status().message();
}

TEST(TraceReaderTest, MicrosecondsParseExactly) {
  int64_t ns = 0;
  EXPECT_TRUE(ParseMicrosToNs("12.345", &ns));
  EXPECT_EQ(ns, 12345);
  EXPECT_TRUE(ParseMicrosToNs("-0.001", &ns));
  EXPECT_EQ(ns, -1);
  EXPECT_TRUE(ParseMicrosToNs("7", &ns));
  EXPECT_EQ(ns, 7000);
  EXPECT_TRUE(ParseMicrosToNs("1.5e3", &ns));
  EXPECT_EQ(ns, 1500000);
  EXPECT_TRUE(ParseMicrosToNs("0.0004", &ns));  // rounds to the nearest ns
  EXPECT_EQ(ns, 0);
  EXPECT_TRUE(ParseMicrosToNs("9223372036854775.807", &ns));
  EXPECT_EQ(ns, INT64_MAX);
  EXPECT_FALSE(ParseMicrosToNs("9223372036854775.808", &ns));
  EXPECT_FALSE(ParseMicrosToNs("\"1\"", &ns));
  EXPECT_FALSE(ParseMicrosToNs("nan", &ns));
  EXPECT_FALSE(ParseMicrosToNs("", &ns));
}

}  // namespace
}  // namespace shardscope::trace
