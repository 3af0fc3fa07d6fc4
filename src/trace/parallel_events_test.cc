#include "trace/parallel_events.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "testing/scratch_dir.h"
#include "trace/event_log.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

struct Outcome {
  Trace trace;
  StatusOr<ReadStats> stats = ReadStats();
};

Outcome Sequential(const std::string& text) {
  Outcome out;
  TraceBuilder builder(&out.trace);
  auto source = MemoryByteSource(text, "mem.json");
  ReadOptions options;
  options.threads = 1;
  out.stats = ReadTraceFrom(source.get(), "mem.json", &builder, options);
  return out;
}

Outcome Parallel(const std::string& text, int threads, size_t range_bytes, size_t chunk = 1 << 20) {
  Outcome out;
  TraceBuilder builder(&out.trace);
  auto input = MemoryRandomAccess(text);
  ReadOptions options;
  options.threads = threads;
  options.range_bytes = range_bytes;
  options.chunk_bytes = chunk;
  out.stats = ReadTraceParallel(*input, "mem.json", &builder, options);
  return out;
}

// Same events in the same order, same counts, reasons, examples and errors.
void ExpectSame(const Outcome& a, const Outcome& b, const std::string& where) {
  ASSERT_EQ(a.stats.ok(), b.stats.ok())
      << where << ": " << a.stats.status().ToString() << " vs " << b.stats.status().ToString();
  EXPECT_EQ(a.trace, b.trace) << where;
  if (!a.stats.ok()) {
    EXPECT_EQ(a.stats.status().ToString(), b.stats.status().ToString()) << where;
    return;
  }
  const ReadStats& x = *a.stats;
  const ReadStats& y = *b.stats;
  EXPECT_EQ(x.bytes, y.bytes) << where;
  EXPECT_EQ(x.events, y.events) << where;
  EXPECT_EQ(x.ops, y.ops) << where;
  EXPECT_EQ(x.spans, y.spans) << where;
  EXPECT_EQ(x.counters, y.counters) << where;
  EXPECT_EQ(x.names, y.names) << where;
  EXPECT_EQ(x.skipped, y.skipped) << where;
  EXPECT_EQ(x.ignored, y.ignored) << where;
  EXPECT_EQ(x.examples, y.examples) << where;
  EXPECT_EQ(x.array_form, y.array_form) << where;
  EXPECT_EQ(x.unclosed_array, y.unclosed_array) << where;
}

TEST(ParallelEventsTest, GuessesAnEventStartAfterABraceAndAComma) {
  std::string text = R"([{"a":1},{"b":2} ,
  {"c":3}])";
  auto input = MemoryRandomAccess(text);
  EXPECT_EQ(*GuessEventStart(*input, 0, 100), static_cast<int64_t>(text.find("{\"b\"")));
  EXPECT_EQ(*GuessEventStart(*input, text.find("{\"b\"") + 1, 100),
            static_cast<int64_t>(text.find("{\"c\"")));
  // Nothing in the range, or the boundary lies past its end.
  EXPECT_EQ(*GuessEventStart(*input, text.find("{\"c\"") + 1, 100), -1);
  EXPECT_EQ(*GuessEventStart(*input, 0, static_cast<int64_t>(text.find("{\"b\""))), -1);
}

// Events whose strings hold "},{" (plain and with escaped quotes), nested
// objects in lists, bad events and ignored ones, so that many guessed part
// starts fall inside strings or inside an event, and must be found wrong.
const std::vector<std::string>& Kinds() {
  static const std::vector<std::string> kinds = {
      R"({"ph":"X","pid":1,"tid":0,"ts":1.5,"dur":2,"name":"k","cat":"compute","args":{"flops":10,"phase":"decode","step":3}})",
      R"({"ph":"X","pid":0,"tid":1,"ts":3,"dur":1,"name":"ar","cat":"comm","args":{"collective":"all_reduce","dim":"tp","group":[0,1],"bytes":8}})",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"x},{y","cat":"compute"})",
      R"({"ph":"X","pid":2,"ts":5,"dur":1,"name":"q\"},{\"ph\":\"X\",\"pid\":9,\"ts\":1,\"dur\":1}"})",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"n","args":{"list":[{"a":1},{"b":"},{"}]}})",
      R"({"ph":"X","pid":3,"ts":7,"dur":2,"name":"}, {\"","cat":"comm","args":{"collective":"send","peer":1,"bytes":4}})",
      R"({"ph":"X","pid":0,"ts":0,"dur":-1})",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":tru})",
      R"({"ph":"i","pid":0,"ts":0,"name":"instant"})",
      R"({"ph":"C","pid":0,"ts":4,"name":"memory","args":{"weights":1,"kv":2.5}})",
      R"({"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0 · },{gpu"}})",
      R"({"ph":"X","pid":0,"tid":1000,"ts":0,"dur":9,"name":"step 0","cat":"step","args":{"step":0}})",
      R"({"args":{"collective":"recv","peer":1},"ph":"X","pid":1,"ts":0,"dur":1})",
      "[1,{\"x\":2},{}]",
  };
  return kinds;
}

std::string RandomTrace(uint32_t* seed, int events, int form) {
  auto next = [seed] {
    *seed = *seed * 1103515245 + 12345;
    return (*seed >> 16) & 0x7fff;
  };
  std::string text;
  switch (form) {
    case 0:
      text = R"({"otherData":{"k":"},{"},"traceEvents":[)";
      break;
    case 1:
      text = "[";
      break;
    default:
      text = R"({"traceEvents":[)";
      break;
  }
  for (int i = 0; i < events; ++i) {
    if (i > 0) text += next() % 3 == 0 ? ",\n  " : ",";
    text += Kinds()[next() % 3 == 0 ? next() % Kinds().size() : next() % 6];
  }
  switch (form) {
    case 0:
      text += "]}";
      break;
    case 1:
      text += next() % 2 ? "]" : "";  // the closing ']' is optional in array form
      break;
    default:
      text += R"(],"metadata":{"after":[{"a":1},{"b":2}]},"displayTimeUnit":"ns"})";
      break;
  }
  return text;
}

TEST(ParallelEventsTest, EqualsTheSequentialReaderWhereverTheFileIsCut) {
  uint32_t seed = 777;
  for (int round = 0; round < 12; ++round) {
    std::string text = RandomTrace(&seed, 100 + 37 * round, round % 3);
    Outcome expected = Sequential(text);
    ASSERT_TRUE(expected.stats.ok()) << expected.stats.status().ToString();
    for (size_t range : {64, 97, 250, 1000, 4096}) {
      for (int threads : {2, 3}) {
        ExpectSame(expected, Parallel(text, threads, range),
                   fmt::format("round {} range {} threads {}", round, range, threads));
      }
    }
    ExpectSame(expected, Parallel(text, 2, 150, /*chunk=*/64),
               fmt::format("round {} chunk 64", round));
  }
}

TEST(ParallelEventsTest, ErrorsAndTheEventsBeforeThemEqualTheSequentialReader) {
  uint32_t seed = 99;
  std::string text = RandomTrace(&seed, 300, 0);
  for (size_t cut : {text.size() / 3, text.size() / 2 + 7, text.size() - 1}) {
    std::string part = text.substr(0, cut);
    Outcome expected = Sequential(part);
    ASSERT_FALSE(expected.stats.ok());
    for (size_t range : {64, 300}) {
      ExpectSame(expected, Parallel(part, 2, range), fmt::format("cut {} range {}", cut, range));
    }
  }
  // Garbage between events.
  std::string bad = text;
  bad.insert(bad.find(",{", bad.size() / 2), " x");
  ExpectSame(Sequential(bad), Parallel(bad, 2, 128), "garbage");
}

// A string much longer than the parts, full of "},{": every guess inside it is
// wrong, and a part that starts there must not read to the end of the file.
TEST(ParallelEventsTest, LongStringsFullOfBoundariesAreReadOnce) {
  std::string name;
  for (int i = 0; i < 2000; ++i) name += R"(},{\"ph\":\"X\"},{)";
  std::string text = R"({"traceEvents":[)";
  for (int i = 0; i < 20; ++i) {
    if (i > 0) text += ",";
    text += fmt::format(R"({{"ph":"X","pid":{},"ts":{},"dur":1,"name":"{}"}})", i % 4, i,
                        i % 5 == 0 ? name : "k");
  }
  text += "]}";
  ExpectSame(Sequential(text), Parallel(text, 2, 1000), "long strings");

  // The wrong guesses were found wrong: their parts were read by the part before.
  class Output final : public RangeOutput {
   public:
    void Deliver() override {}
  };
  class Parser final : public PartParser {
   public:
    Parser() : parser_(MakeEventParser(&log_, &stats_)) {}
    EventParser* parser() override { return parser_.get(); }
    ReadStats* stats() override { return &stats_; }
    std::unique_ptr<RangeOutput> Take() override {
      stats_ = ReadStats();
      return std::make_unique<Output>();
    }

   private:
    EventLog log_;
    ReadStats stats_;
    std::unique_ptr<EventParser> parser_;
  };
  auto input = MemoryRandomAccess(text);
  ReadOptions options;
  options.threads = 2;
  options.range_bytes = 1000;
  ReadStats stats;
  auto scan = ParseEventsParallel(*input, "mem.json", options, {},
                                  [] { return std::make_unique<Parser>(); }, &stats, {});
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  EXPECT_EQ(stats.ops, 20);
  EXPECT_EQ(scan->ranges, static_cast<int>((text.size() + 999) / 1000));
  EXPECT_GT(scan->ranges_rejoined, 0);
}

TEST(ParallelEventsTest, ReadTraceGivesTheSameEventsWithOneThreadOrSeveral) {
  ScratchDir dir;
  std::string path = dir.File("trace.json");
  {
    auto w = TraceWriter::Open(path, {{"workload", {{"batch_size", 2}}}});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 5000; ++i) {
      OpEvent op;
      op.rank = i % 4;
      op.name = fmt::format("op \"{}\" }},{{", i);
      op.ts_ns = i * 1000;
      op.dur_ns = 500 + i % 7;
      op.kind = "ffn";
      op.phase = Phase::kDecode;
      op.step = i / 100;
      if (i % 3 == 0) {
        op.category = Category::kComm;
        op.collective = Collective::kAllReduce;
        op.group = {0, 1, 2, 3};
        op.bytes = 1024 + i;
      }
      (*w)->AddOp(op);
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto read = [&](int threads) {
    Outcome out;
    TraceBuilder builder(&out.trace);
    ReadOptions options;
    options.threads = threads;
    options.range_bytes = 16 << 10;
    out.stats = ReadTrace(path, &builder, options);
    return out;
  };
  Outcome one = read(1);
  ASSERT_TRUE(one.stats.ok()) << one.stats.status().ToString();
  EXPECT_EQ(one.trace.ops.size(), 5000u);
  EXPECT_EQ(one.trace.metadata["workload"]["batch_size"], 2);
  ExpectSame(one, read(2), "2 threads");
  ExpectSame(one, read(4), "4 threads");
}

}  // namespace
}  // namespace shardscope::trace
