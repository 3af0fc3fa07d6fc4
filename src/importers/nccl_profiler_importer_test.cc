#include "importers/nccl_profiler_importer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using trace::Collective;

const std::string kDir = SharedTestData("nccl_profiler");
const std::string kExample =
    kDir + "/nccl_example_plugin_point_to_point_1737594_12715772615376301750_1.json";
const std::string kExpected = RealTraceGolden("nccl_profiler_expected.json");

struct Imported {
  StatusOr<trace::ReadStats> stats = Status(StatusCode::kInternal, "not run");
  trace::Trace trace;
};

Imported ImportText(const std::string& text, bool jsonl) {
  testing::ScratchDir dir;
  std::string path = dir.File(jsonl ? "t.jsonl" : "t.json");
  trace::WriteFile(path, text);
  Imported out;
  trace::TraceBuilder builder(&out.trace);
  out.stats = jsonl ? ImportNcclProfilerJsonl(path, &builder) : ImportNcclProfiler(path, &builder);
  return out;
}

std::vector<const trace::OpEvent*> OpsOf(const trace::Trace& t, int32_t rank) {
  std::vector<const trace::OpEvent*> ops;
  for (const trace::OpEvent& op : t.ops) {
    if (op.rank == rank) ops.push_back(&op);
  }
  return ops;
}

TEST(NcclProfilerImporterTest, QuotesBareValues) {
  EXPECT_EQ(QuoteBareJsonValues(R"j({"a": 0x1f, "b": ncclFloat32,"c": (nil)})j"),
            R"j({"a": "0x1f", "b": "ncclFloat32","c": "(nil)"})j");
  // JSON values stay as they are, also inside strings that look like bare values.
  const std::string valid =
      R"({"s": "x: 0x1, y", "q": "a\":b", "n": -1.5e3, "z": 0, "t": true, "f": false, "u": null, "o": {"k": [1, 2]}})";
  EXPECT_EQ(QuoteBareJsonValues(valid), valid);
  EXPECT_EQ(QuoteBareJsonValues("{\"a\": abc }\n"), "{\"a\": \"abc\" }\n");
  EXPECT_EQ(QuoteBareJsonValues(R"({"a": 012})"), R"({"a": "012"})");  // not a JSON number
  EXPECT_EQ(QuoteBareJsonValues(R"({"a": x"y})"), R"({"a": "x\"y"})");
  EXPECT_EQ(QuoteBareJsonValues(""), "");
}

TEST(NcclProfilerImporterTest, DatatypeSizes) {
  EXPECT_EQ(NcclDatatypeSize("ncclFloat32"), 4);
  EXPECT_EQ(NcclDatatypeSize("ncclBfloat16"), 2);
  EXPECT_EQ(NcclDatatypeSize("ncclInt8"), 1);
  EXPECT_EQ(NcclDatatypeSize("ncclUint64"), 8);
  EXPECT_EQ(NcclDatatypeSize("ncclFloat8e4m3"), 1);
  EXPECT_FALSE(NcclDatatypeSize("ncclFloat128").has_value());
}

// Two ranks of one communicator: an AllGather whose channels carry GPU clocks, a Send whose
// channel has no stop clock (so the b/e times), and malformed events.
TEST(NcclProfilerImporterTest, ExamplePluginSynthetic) {
  const std::string text = R"([
{"name": "AllGather", "cat": "COLL", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 100.000, "args": {"SeqNum": 4, "CommHash": 77, "Rank": 0, "Count": 256, "Datatype": ncclBfloat16, "Algorithm": RING, "Protocol": LL, "nChannels": 2}},
{"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 101.0, "args": {"Channel": 0, "StartGpuClk": 5000, "StopGpuClk": 9000}},
{"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 0.000000},
{"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 101.5, "args": {"Channel": 1, "StartGpuClk": 4000, "StopGpuClk": 8500}},
{"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 0.000000},
{"name": "AllGather", "cat": "COLL", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 102.000},
{"name": "Send", "cat": "P2P", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 200.0, "args": {"CommHash": 77, "Rank": 1, "Peer": 0, "Count": 10, "Datatype": "ncclInt32", "nChannels": 1}},
{"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 201, "args": {"Channel": 0, "StartGpuClk": 1, "StopGpuClk": 0}},
{"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 0},
{"name": "Send", "cat": "P2P", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 203.5},
{"name": "Send", "cat": "P2P", "ph": "b", "id": 1, "pid": 9, "tid": 1, "ts": 300.0, "args": {"CommHash": 77, "Rank": 1, "Peer": 0, "Count": 10, "Datatype": ncclFloat128, "nChannels": 1}},
{"name": "Send", "cat": "P2P", "ph": "e", "id": 1, "pid": 9, "tid": 1, "ts": 301.0},
{"name": "Recv", "cat": "P2P", "ph": "e", "id": 5, "pid": 9, "tid": 1, "ts": 1.0},
{"name": "Recv", "cat": "P2P", "ph": "b", "id": 6, "pid": 9, "tid": 1, "ts": 1.0, "args": {"CommHash": 77, "Rank": 0, "Peer": 1, "Count": 10, "Datatype": "ncclInt32"}},
{"name": "Idle", "cat": "PROXY", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 1.0},
{"name": "Idle", "cat": "PROXY", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 2.0},
7,
{}])";
  Imported r = ImportText(text, false);
  ASSERT_TRUE(r.stats.ok()) << r.stats.status().ToString();
  ASSERT_EQ(r.trace.ops.size(), 3u);
  const trace::OpEvent& ag = r.trace.ops[0];
  EXPECT_EQ(ag.rank, 0);
  EXPECT_EQ(ag.collective, Collective::kAllGather);
  EXPECT_EQ(ag.kind, "all_gather");
  EXPECT_EQ(ag.ts_ns, 100000);
  EXPECT_EQ(ag.dur_ns, 9000 - 4000);  // the channels' GPU clocks, not the 2 µs host span
  EXPECT_EQ(ag.group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ag.bytes, 256 * 2 * 2);  // per-rank count × bf16 × 2 ranks
  EXPECT_EQ(ag.seq, 4);
  EXPECT_EQ(ag.dtype, "bf16");
  const trace::OpEvent& send = r.trace.ops[1];
  EXPECT_EQ(send.rank, 1);
  EXPECT_EQ(send.collective, Collective::kSend);
  EXPECT_EQ(send.peer, 0);
  EXPECT_EQ(send.bytes, 40);
  EXPECT_EQ(send.dur_ns, 3500);  // no valid stop clock: e − b
  const trace::OpEvent& unknown = r.trace.ops[2];
  EXPECT_EQ(unknown.collective, Collective::kNone);
  EXPECT_EQ(unknown.category, trace::Category::kComm);
  EXPECT_EQ(unknown.bytes, 0);
  EXPECT_EQ(r.stats->notes.at("unknown NCCL datatype \"ncclFloat128\": Send kept as comm time "
                              "only"),
            1);
  EXPECT_EQ(r.stats->skipped.at("P2P 'e' event without its 'b'"), 1);
  EXPECT_EQ(r.stats->skipped.at("'b' event without its 'e'"), 1);
  EXPECT_EQ(r.stats->ignored.at("PROXY events"), 1);
  EXPECT_EQ(r.trace.process_names.at(1), "rank 1");
  EXPECT_EQ(r.stats->skipped.at("event is not a JSON object"), 1);
  EXPECT_EQ(r.stats->events, 17);
}

// Integers follow trace/json_value.h as in every other format: an integral
// count written as 1.0e1 is 10.
TEST(NcclProfilerImporterTest, IntegersAreReadByTheSharedRule) {
  const std::string text = R"([
{"name": "Send", "cat": "P2P", "ph": "b", "id": 0, "pid": 9, "tid": 1, "ts": 200.0, "args": {"CommHash": 77, "Rank": 1.0, "Peer": 0, "Count": 1.0e1, "Datatype": ncclInt32}},
{"name": "Send", "cat": "P2P", "ph": "e", "id": 0, "pid": 9, "tid": 1, "ts": 203.5}])";
  Imported r = ImportText(text, false);
  ASSERT_TRUE(r.stats.ok()) << r.stats.status().ToString();
  ASSERT_EQ(r.trace.ops.size(), 1u);
  EXPECT_EQ(r.trace.ops[0].rank, 1);
  EXPECT_EQ(r.trace.ops[0].bytes, 40);
}

TEST(NcclProfilerImporterTest, ExamplePluginBadFiles) {
  Imported cut =
      ImportText(R"([{"name": "Send", "cat": "P2P", "ph": "b", "id": 0, "ts": 1.0, "ar)", false);
  ASSERT_FALSE(cut.stats.ok());
  EXPECT_EQ(cut.stats.status().code(), StatusCode::kDataLoss) << cut.stats.status().ToString();
  EXPECT_NE(cut.stats.status().message().find("truncated"), std::string::npos);
  Imported object = ImportText(R"({"traceEvents": []})", false);
  ASSERT_FALSE(object.stats.ok());
  EXPECT_EQ(object.stats.status().code(), StatusCode::kInvalidArgument);
  Imported empty = ImportText("", false);
  ASSERT_FALSE(empty.stats.ok());
  EXPECT_NE(empty.stats.status().message().find("empty file"), std::string::npos);
  Imported no_rank = ImportText(
      R"([{"name": "Send", "cat": "P2P", "ph": "b", "id": 0, "ts": 1.0, "args": {"Count": 1}},
{"name": "Send", "cat": "P2P", "ph": "e", "id": 0, "ts": 2.0}, {}])",
      false);
  ASSERT_TRUE(no_rank.stats.ok());
  EXPECT_EQ(no_rank.stats->skipped.at("COLL/P2P event without an integer Rank"), 1);
}

// Two communicators in one process: the world (4 ranks) and a pair made of world ranks 3
// and 1 (pair ranks 0 and 1), told apart by GPU ids. Pair ranks map to world ranks.
TEST(NcclProfilerImporterTest, JsonlMapsCommunicatorRanksToGlobalRanks) {
  std::string text;
  for (int r = 0; r < 4; ++r) {
    text += fmt::format(
        R"({{"type":"ProfilerLifecycle","func":"ProfilerInit","gpuUuid":"gpu{}","commId":100,"rank":{},"start":{{"ts":1.0}},"stop":{{"ts":1.0}},"details":{{"nranks":4}}}})"
        "\n",
        r, r);
  }
  text +=
      R"({"type":"ProfilerLifecycle","func":"ProfilerInit","gpuUuid":"gpu3","commId":18446744073709551615,"rank":0,"details":{"nranks":2}})"
      "\n";
  text +=
      R"({"type":"ProfilerLifecycle","func":"ProfilerInit","gpuUuid":"gpu1","commId":18446744073709551615,"rank":1,"details":{"nranks":2}})"
      "\n";
  text +=
      R"({"recordType":"event","type":"ncclProfileP2p","commId":18446744073709551615,"rank":0,"start":{"ts":10.000},"stop":{"ts":12.500},"eventAddr":"0xa","parentObj":"0xb","details":{"func":"Send","peer":1,"count":8,"dtype":"ncclFloat16"}})"
      "\n";
  text +=
      R"({"recordType":"event","type":"ncclProfileColl","commId":18446744073709551615,"rank":1,"start":{"ts":20.000},"stop":{"ts":21.000},"eventAddr":"0xc","parentObj":"0xd","details":{"func":"ReduceScatter","seq":3,"count":16,"root":0,"dtype":"ncclFloat32"}})"
      "\n";
  text +=
      R"({"recordType":"event","type":"ncclProfileColl","commId":100,"rank":2,"start":{"ts":30.000},"stop":{"ts":31.000},"details":{"func":"Broadcast","seq":0,"count":4,"root":3,"dtype":"ncclWeird"}})"
      "\n";
  text += R"({"recordType":"event","type":"ncclProfileColl","commId":100,"ra)";  // truncated
  Imported r = ImportText(text, true);
  ASSERT_TRUE(r.stats.ok()) << r.stats.status().ToString();
  ASSERT_EQ(r.trace.ops.size(), 3u);
  const trace::OpEvent& send = r.trace.ops[0];
  EXPECT_EQ(send.rank, 3);  // pair rank 0 is gpu3, world rank 3
  EXPECT_EQ(send.peer, 1);  // pair rank 1 is gpu1
  EXPECT_EQ(send.collective, Collective::kSend);
  EXPECT_EQ(send.bytes, 16);
  EXPECT_EQ(send.ts_ns, 10000);
  EXPECT_EQ(send.dur_ns, 2500);  // no kernel, no channels: the record's start → stop
  const trace::OpEvent& rs = r.trace.ops[1];
  EXPECT_EQ(rs.rank, 1);
  EXPECT_EQ(rs.group, (std::vector<int32_t>{3, 1}));  // in communicator rank order
  EXPECT_EQ(rs.bytes, 16 * 4 * 2);                    // per-rank count × fp32 × 2 ranks
  EXPECT_EQ(rs.seq, 3);
  const trace::OpEvent& bc = r.trace.ops[2];
  EXPECT_EQ(bc.collective, Collective::kNone);  // unknown dtype: time only
  EXPECT_EQ(r.stats->notes.size(), 1u);
  EXPECT_EQ(r.stats->skipped.at("line that is not a JSON object (truncated?)"), 1);
  ASSERT_FALSE(r.stats->examples.empty());
  EXPECT_EQ(r.stats->examples[0].substr(0, 8), "line 10:");

  Imported none = ImportText("{\"a\":1}\n", true);
  ASSERT_FALSE(none.stats.ok());
  EXPECT_NE(none.stats.status().message().find("no NCCL profiler record"), std::string::npos);
}

class RealNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kDir);
    std::ifstream in(kExpected);
    ASSERT_TRUE(in.good()) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(RealNcclTest, ExamplePluginPointToPoint) {
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto stats = ImportNcclProfiler(kExample, &builder);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  const nlohmann::json& want = expected_["example"];
  EXPECT_EQ(stats->events, want["events"].get<int64_t>());
  EXPECT_TRUE(stats->skipped.empty());
  EXPECT_TRUE(stats->notes.empty());
  for (const auto& [rank_text, w] : want["ranks"].items()) {
    SCOPED_TRACE("rank " + rank_text);
    auto ops = OpsOf(t, std::stoi(rank_text));
    ASSERT_EQ(ops.size(), w["ops"].get<size_t>());
    std::map<std::string, int64_t> sent;
    for (size_t i = 0; i < ops.size(); ++i) {
      EXPECT_EQ(ops[i]->dur_ns, w["dur_ns"][i].get<int64_t>());
      if (ops[i]->collective == Collective::kSend)
        sent[std::to_string(ops[i]->peer)] += ops[i]->bytes;
    }
    EXPECT_EQ(sent, (w["send_bytes_to"].get<std::map<std::string, int64_t>>()));
  }
}

TEST_F(RealNcclTest, MinimalPluginJsonl) {
  for (const char* name :
       {"minimal_plugin_allreduce_4rank_a.jsonl", "minimal_plugin_allreduce_4rank_b.jsonl"}) {
    SCOPED_TRACE(name);
    const nlohmann::json& want = expected_[name];
    trace::Trace t;
    trace::TraceBuilder builder(&t);
    auto stats = ImportNcclProfilerJsonl(kDir + "/" + name, &builder);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_TRUE(stats->skipped.empty());
    EXPECT_TRUE(stats->notes.empty());
    const int64_t n = want["nranks"].get<int64_t>();
    for (const auto& [rank_text, w] : want["ranks"].items()) {
      SCOPED_TRACE("rank " + rank_text);
      auto ops = OpsOf(t, std::stoi(rank_text));
      ASSERT_EQ(ops.size(), w["ops"].get<size_t>());
      for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i]->collective, Collective::kAllReduce);
        EXPECT_EQ(ops[i]->ts_ns, w["ts_ns"][i].get<int64_t>());
        EXPECT_EQ(ops[i]->dur_ns, w["dur_ns"][i].get<int64_t>());
        EXPECT_EQ(ops[i]->bytes, w["bytes"][i].get<int64_t>());
        EXPECT_EQ(ops[i]->seq, w["seq"][i].get<int64_t>());
        EXPECT_EQ(static_cast<int64_t>(ops[i]->group.size()), n);
      }
    }
  }
}

}  // namespace
}  // namespace shardscope::importers
