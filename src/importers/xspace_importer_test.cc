#include "importers/xspace_importer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using trace::Category;
using trace::Collective;

const std::string kTestData = SharedTestData("");
const std::string kXplane = kTestData + "/xla/tpu_inference_2.xplane.pb";
const std::string kExpected = RealTraceGolden("xla_tpu_inference_2_expected.json");

// A minimal protobuf encoder for synthetic XSpaces (field numbers of xplane.proto).
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Int(int field, uint64_t v) { return Varint(field << 3) + Varint(v); }
std::string Len(int field, const std::string& payload) {
  return Varint((field << 3) | 2) + Varint(payload.size()) + payload;
}
std::string Double(int field, double d) {
  std::string out = Varint((field << 3) | 1);
  char bytes[8];
  std::memcpy(bytes, &d, 8);
  return out + std::string(bytes, 8);
}
std::string StatMeta(int64_t id, const std::string& name) {
  return Len(5, Int(1, id) + Len(2, Int(1, id) + Len(2, name)));
}
std::string EventMeta(int64_t id, const std::string& name, const std::string& display,
                      const std::string& stats = "") {
  return Len(4, Int(1, id) + Len(2, Int(1, id) + Len(2, name) + Len(4, display) + stats));
}

// Two TPUs and a host: TPU:0 has one all-reduce (line at 1000 ns, event at +2500 ps for
// 10000 ps) with int, string, ref and double stats; TPU:1 has two steps.
std::string SyntheticXspace() {
  std::string stat_meta = StatMeta(3, "flops") + StatMeta(4, "hlo_category") +
                          StatMeta(6, "peak_teraflops_per_second") + StatMeta(7, "kind_ref") +
                          StatMeta(8, "bytes_accessed");
  std::string event = Int(1, 1) + Int(2, 2500) + Int(3, 10000) + Len(4, Int(1, 3) + Int(4, 77)) +
                      Len(4, Int(1, 7) + Int(7, 4)) + Len(4, Int(1, 8) + Int(3, 640));
  std::string line = Int(1, 3) + Len(2, "XLA Ops") + Int(3, 1000) + Len(4, event);
  std::string tpu0 =
      Int(1, 0) + Len(2, "/device:TPU:0") + Len(3, line) +
      EventMeta(1, "%all-reduce.1 = f32[16]{0} all-reduce(f32[16]{0} %p), replica_groups={{0,1}}",
                "all-reduce.1", Len(5, Int(1, 4) + Len(5, "all-reduce"))) +
      stat_meta + Len(6, Int(1, 6) + Double(2, 100.5));
  std::string steps = Len(2, "Steps") + Len(4, Int(1, 2) + Int(2, 0) + Int(3, 5000)) +
                      Len(4, Int(1, 2) + Int(2, 5000) + Int(3, 5000));
  std::string tpu1 = Len(2, "/device:TPU:1") + Len(3, steps) + EventMeta(2, "41", "");
  std::string host =
      Len(2, "/host:CPU") +
      Len(3, Len(2, "main") + Len(4, Int(1, 9) + Int(3, 1)) + Len(4, Int(1, 9) + Int(3, 1))) +
      EventMeta(9, "PjRtExecute", "");
  return Len(1, tpu0) + Len(1, tpu1) + Len(1, host) + Len(4, "hostname");
}

StatusOr<trace::ReadStats> ImportBytes(const std::string& bytes, trace::Trace* t) {
  testing::ScratchDir dir;
  std::string path = dir.File("x.xplane.pb");
  trace::WriteFile(path, bytes);
  trace::TraceBuilder builder(t);
  return ImportXspace(path, &builder);
}

TEST(XspaceImporterTest, SyntheticFieldsAndTimes) {
  trace::Trace t;
  auto stats = ImportBytes(SyntheticXspace(), &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(t.ops.size(), 1u);
  const trace::OpEvent& ar = t.ops[0];
  EXPECT_EQ(ar.rank, 0);
  EXPECT_EQ(ar.name, "all-reduce.1");
  EXPECT_EQ(ar.ts_ns, 1003);  // 1000 ns + 2500 ps, halves up
  EXPECT_EQ(ar.dur_ns, 10);   // ends at 1000 ns + 12500 ps → 1013
  EXPECT_EQ(ar.flops, 77);    // the event's stat
  EXPECT_EQ(ar.bytes_read, 640);
  EXPECT_EQ(ar.category, Category::kComm);
  EXPECT_EQ(ar.collective, Collective::kAllReduce);
  EXPECT_EQ(ar.group, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ar.bytes, 64);
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(t.spans[1].rank, 1);
  EXPECT_EQ(t.spans[1].step, 41);
  EXPECT_EQ(t.spans[1].ts_ns, 5);
  EXPECT_EQ(t.process_names.at(0), "/device:TPU:0");
  EXPECT_DOUBLE_EQ(t.metadata["cluster"]["device"]["peak_flops"].get<double>(), 100.5e12);
  EXPECT_EQ(stats->events, 5);  // 1 op + 2 steps + 2 host events
  EXPECT_EQ(stats->ignored.at("XLA plane \"/host:CPU\""), 2);
  EXPECT_EQ(stats->ops, 1);
  EXPECT_EQ(stats->spans, 2);
}

TEST(XspaceImporterTest, RefStatsResolveToNames) {
  trace::ReadStats stats;
  std::string data = SyntheticXspace();
  auto decoded = DecodeXspace(data, "x", &stats);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const XlaEvent& e = (*decoded)[0].lines[0].events[0];
  EXPECT_EQ(e.name, "all-reduce.1");
  EXPECT_EQ(e.long_name.substr(0, 14), "%all-reduce.1 ");
  ASSERT_NE(FindXlaStat(e.stats, "kind_ref"), nullptr);
  EXPECT_EQ(*FindXlaStat(e.stats, "kind_ref"), "hlo_category");
  EXPECT_EQ(*FindXlaStat(e.stats, "hlo_category"), "all-reduce");  // from the metadata
  EXPECT_EQ(*FindXlaStat((*decoded)[0].stats, "peak_teraflops_per_second"), "100.5");
}

TEST(XspaceImporterTest, TruncatedAtEveryByteIsAnErrorNotACrash) {
  std::string data = SyntheticXspace();
  int errors = 0;
  for (size_t n = 1; n < data.size(); ++n) {
    trace::ReadStats stats;
    auto r = DecodeXspace(std::string_view(data).substr(0, n), "cut", &stats);
    if (!r.ok()) {
      ++errors;
      EXPECT_TRUE(r.status().code() == StatusCode::kDataLoss ||
                  r.status().code() == StatusCode::kInvalidArgument)
          << r.status().ToString();
    }
  }
  EXPECT_GT(errors, static_cast<int>(data.size()) - 5);  // only plane boundaries can parse
  trace::ReadStats stats;
  auto cut = DecodeXspace(std::string_view(data).substr(0, 40), "cut.xplane.pb", &stats);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cut.status().message().find("cut.xplane.pb: truncated or corrupt XSpace protobuf at "
                                        "byte"),
            std::string::npos)
      << cut.status().message();
  EXPECT_NE(cut.status().message().find("XPlane of"), std::string::npos);
}

TEST(XspaceImporterTest, GarbageAndOtherFormatsAreClearErrors) {
  trace::ReadStats stats;
  auto json = DecodeXspace(R"({"traceEvents":[]})", "t.json", &stats);
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("not an XSpace?"), std::string::npos)
      << json.status().message();
  auto empty = DecodeXspace("", "e.pb", &stats);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("e.pb: empty file"), std::string::npos);
  // Wrong wire type for a known field: XPlane.name as a varint.
  auto wrong = DecodeXspace(Len(1, Int(2, 5)), "w.pb", &stats);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("XPlane.name has wire type 0, expected 2"),
            std::string::npos)
      << wrong.status().message();
  auto host_only = DecodeXspace(Len(1, Len(2, "/host:CPU")), "h.pb", &stats);
  ASSERT_FALSE(host_only.ok());
  EXPECT_EQ(host_only.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host_only.status().message().find("no /device:TPU:N"), std::string::npos);
  // Pseudo-random bytes: errors or (rarely) empty decodes, never a crash.
  uint64_t x = 88172645463325252ull;
  for (int round = 0; round < 200; ++round) {
    std::string bytes;
    for (int i = 0; i < 64; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      bytes.push_back(static_cast<char>(x));
    }
    trace::ReadStats s;
    (void)DecodeXspace(bytes, "random", &s);
  }
  auto missing = ImportXspace("/nonexistent/x.xplane.pb", nullptr);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(XspaceImporterTest, UnknownMetadataIsSkippedAndCounted) {
  std::string line = Len(2, "XLA Ops") + Len(4, Int(1, 99) + Int(3, 10));
  trace::Trace t;
  auto stats = ImportBytes(Len(1, Len(2, "/device:TPU:0") + Len(3, line)), &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(t.ops.size(), 0u);
  EXPECT_EQ(stats->skipped.at("XEvent whose metadata_id has no XEventMetadata"), 1);
}

// Golden values from tests/data/real_traces/xla_tpu_inference_2_expected.py (an independent
// decoder).
class RealXplaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SHARDSCOPE_NEED_SHARED_DATA(kXplane);
    std::ifstream in(kExpected);
    ASSERT_TRUE(in.good()) << kExpected;
    expected_ = nlohmann::json::parse(in);
  }
  nlohmann::json expected_;
};

TEST_F(RealXplaneTest, MatchesIndependentDecoder) {
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto stats = ImportXspace(kXplane, &builder);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->events, expected_["total_xevents"].get<int64_t>());
  EXPECT_EQ(stats->ignored.size(), expected_["ignored_events"].size());
  for (const auto& [key, n] : expected_["ignored_events"].items()) {
    EXPECT_EQ(stats->ignored[key], n.get<int64_t>()) << key;
  }
  EXPECT_TRUE(stats->skipped.empty());
  EXPECT_TRUE(stats->notes.empty());
  ASSERT_EQ(expected_["devices"].size(), 4u);
  for (const auto& [rank_text, dev] : expected_["devices"].items()) {
    const int32_t rank = std::stoi(rank_text);
    SCOPED_TRACE("TPU " + rank_text);
    EXPECT_EQ(t.process_names.at(rank), "/device:TPU:" + rank_text);
    int64_t xla_ops = 0, compute = 0, other = 0, all_reduce = 0, ar_ns = 0, ar_bytes = 0;
    int64_t flops = 0, accessed = 0, async = 0;
    for (const trace::OpEvent& op : t.ops) {
      if (op.rank != rank) continue;
      if (op.stream == 1) ++async;
      if (op.stream != 0) continue;
      ++xla_ops;
      flops += op.flops;
      accessed += op.bytes_read;
      compute += op.category == Category::kCompute;
      other += op.category == Category::kOther;
      if (op.collective == Collective::kAllReduce) {
        EXPECT_EQ(op.group, dev["all_reduce_groups"][all_reduce].get<std::vector<int32_t>>());
        ++all_reduce;
        ar_ns += op.dur_ns;
        ar_bytes += op.bytes;
      }
    }
    EXPECT_EQ(xla_ops, dev["xla_ops"].get<int64_t>());
    EXPECT_EQ(compute, dev["compute_ops"].get<int64_t>());
    EXPECT_EQ(other, dev["other_ops"].get<int64_t>());
    EXPECT_EQ(all_reduce, dev["all_reduce_ops"].get<int64_t>());
    EXPECT_EQ(ar_ns, dev["all_reduce_total_ns"].get<int64_t>());
    EXPECT_EQ(ar_bytes, dev["all_reduce_bytes_total"].get<int64_t>());
    EXPECT_EQ(flops, dev["flops_total"].get<int64_t>());
    EXPECT_EQ(accessed, dev["bytes_accessed_total"].get<int64_t>());
    EXPECT_EQ(async, dev["async_ops"].get<int64_t>());
    int64_t steps = 0;
    for (const trace::SpanEvent& s : t.spans) steps += s.rank == rank;
    EXPECT_EQ(steps, dev["steps"].get<int64_t>());
  }
}

TEST_F(RealXplaneTest, TruncatedRealFileIsDataLoss) {
  std::string data = trace::ReadWholeFile(kXplane);
  trace::ReadStats stats;
  auto r =
      DecodeXspace(std::string_view(data).substr(0, data.size() / 2), "half.xplane.pb", &stats);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
}

}  // namespace
}  // namespace shardscope::importers
