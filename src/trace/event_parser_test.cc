#include "trace/event_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/trace.h"

namespace shardscope::trace {
namespace {

// What one parser made of one event: the sink's view and the counts.
struct Outcome {
  Trace trace;
  ReadStats stats;
};

// `json` parsed alone (simdjson) or as a batch of one (the fast path first).
Outcome ParseOne(const std::string& json, bool batch) {
  Outcome out;
  TraceBuilder builder(&out.trace);
  auto parser = MakeEventParser(&builder, &out.stats);
  // One writable byte before the event, simdjson's padding after it.
  std::string buf = " " + json + std::string(64, ' ');
  char* first = buf.data() + 1;
  const size_t capacity = buf.size() - 1;
  if (batch) {
    RawEvent e{std::string_view(first, json.size()), 7};
    parser->ParseBatch(std::span<const RawEvent>(&e, 1), first, capacity);
  } else {
    parser->Parse(std::string_view(first, json.size()), capacity, 7);
  }
  return out;
}

void ExpectSameOutcome(const std::string& json) {
  Outcome alone = ParseOne(json, false);
  Outcome batched = ParseOne(json, true);
  EXPECT_EQ(alone.trace, batched.trace) << json;
  EXPECT_EQ(alone.stats.events, batched.stats.events) << json;
  EXPECT_EQ(alone.stats.ops, batched.stats.ops) << json;
  EXPECT_EQ(alone.stats.spans, batched.stats.spans) << json;
  EXPECT_EQ(alone.stats.counters, batched.stats.counters) << json;
  EXPECT_EQ(alone.stats.names, batched.stats.names) << json;
  EXPECT_EQ(alone.stats.skipped, batched.stats.skipped) << json;
  EXPECT_EQ(alone.stats.ignored, batched.stats.ignored) << json;
  EXPECT_EQ(alone.stats.examples, batched.stats.examples) << json;
}

// Events as the writer emits them, and the kinds of JSON around them the fast
// path must read as simdjson does or leave to it.
const std::vector<std::string>& Events() {
  static const std::vector<std::string> events = {
      R"({"ph":"X","pid":0,"tid":0,"ts":294.000,"dur":9.956,"name":"L4.ffn_down","cat":"compute","args":{"kind":"ffn_down","phase":"decode","step":0,"layer":4,"flops":234881024,"bytes_read":29360128,"bytes_written":32768,"dtype":"bf16"}})",
      R"({"ph":"X","pid":0,"tid":1,"ts":304.000,"dur":6.000,"name":"allreduce.tp.L4","cat":"comm","args":{"kind":"all_reduce","phase":"decode","step":0,"layer":4,"collective":"all_reduce","dim":"tp","group":[0,1,2,3,4,5,6,7],"bytes":114688,"dtype":"bf16"}})",
      R"({"ph":"X","pid":3,"tid":2,"ts":5,"dur":1,"name":"a2a","cat":"comm","args":{"collective":"all_to_all","dim":"ep","group":[3,4],"bytes_per_peer":[10,20],"seq":4,"micro_batch":1,"sp_step":2}})",
      R"({"ph":"X","pid":3,"tid":2,"ts":5,"dur":1,"name":"a2a","cat":"comm","args":{"collective":"all_to_all","group":[3,4],"bytes_per_peer":7}})",
      R"({"ph":"X","pid":1,"tid":2,"ts":5,"dur":1,"name":"send","cat":"comm","args":{"collective":"send","dim":"pp","peer":2,"bytes":64}})",
      R"({"ph":"X","pid":1,"tid":0,"ts":5,"dur":1,"name":"moe","args":{"experts":[0,5],"expert_tokens":[3,0],"root":1}})",
      R"({"ph":"X","pid":0,"tid":1000,"ts":0.000,"dur":496.000,"name":"step 0","cat":"step","args":{"phase":"decode","step":0}})",
      R"({"ph":"X","pid":0,"tid":1000,"ts":0,"dur":4,"name":"prefill","cat":"phase","args":{}})",
      R"({"ph":"C","pid":0,"tid":0,"ts":496.000,"name":"memory","args":{"weights":40000000000,"kv_cache":0.25}})",
      R"({"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"rank 0"}})",
      R"({"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"comm tp","x":[1,{"y":null}]}})",
      R"({"ph":"B","pid":0,"ts":1,"name":"begin","args":{"a":[true,false,-1.5e3]}})",
      R"({ "ph" : "X" , "pid" : 1 , "ts" : 1 , "dur" : 2 , "args" : { "flops" : 3 , "group" : [ 1 , 2 ] } })",
      R"({"ph":"X","pid":1,"ts":1,"dur":2,"args":{"flops":1e3,"bytes":"8","layer":2.0}})",
      R"({"ph":"X","pid":007,"tid":-0,"ts":01.5,"dur":2,"args":{"step":99999999999}})",
      R"({"ph":"X","pid":1,"ts":1.2345,"dur":1e1,"name":"","cat":"other","extra":{"n":[]}})",
      R"({"ph":"X","pid":1,"ts":1,"dur":2,"args":{"group":[1,2],"group":[3]},"args":{"kind":"k"}})",
      R"({"ph":"X","pid":1,"ts":1,"dur":2,"args":{"phase":"warmup","dim":"zz","collective":"nope"}})",
      R"({"ph":"X","pid":1,"ts":1,"dur":2,"args":{"request":{"id":3,"prompt_tokens":4}}})",
      R"({"ph":"C","pid":0,"ts":1,"name":"memory","args":{"a":-0,"b":1e400,"c":0.1,"d":12345678901234567890}})",
      R"({"args":{"flops":1},"ph":"X","pid":0,"ts":0,"dur":1})",
      R"({"ph":"X","pid":0,"ts":0,"dur":1,"name":"caf\u00e9"})",
      "{\"ph\":\"X\",\"pid\":0,\"ts\":0,\"dur\":1,\"name\":\"caf\xc3\xa9\"}",
      "{\"ph\":\"X\",\"pid\":0,\"ts\":0,\"dur\":1,\"name\":\"tab\there\"}",
      "{\"ph\":\"X\",\n\"pid\":0,\r\n\"ts\":0,\t\"dur\":1}",
  };
  return events;
}

TEST(EventParserTest, FastPathEqualsSimdjsonOnWriterAndOddEvents) {
  for (const std::string& e : Events()) ExpectSameOutcome(e);
}

// Random edits of those events (bytes replaced, inserted, dropped: digits,
// punctuation, quotes, spaces, letters, non-ASCII) must read the same both ways.
TEST(EventParserTest, FastPathEqualsSimdjsonOnMutatedEvents) {
  const std::string alphabet = "0123456789-+.eE\",:{}[] \t\nxaX\xc3\xff";
  uint32_t seed = 2026;
  auto next = [&seed] {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) & 0x7fff;
  };
  for (int round = 0; round < 20000; ++round) {
    std::string e = Events()[next() % Events().size()];
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < edits && !e.empty(); ++k) {
      const size_t at = next() % e.size();
      const char c = alphabet[next() % alphabet.size()];
      switch (next() % 3) {
        case 0:
          e[at] = c;
          break;
        case 1:
          e.insert(e.begin() + static_cast<ptrdiff_t>(at), c);
          break;
        default:
          e.erase(at, 1);
          break;
      }
    }
    ExpectSameOutcome(e);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace shardscope::trace
