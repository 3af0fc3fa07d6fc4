#include "importers/xla_json_importer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "importers/test_traces.h"
#include "importers/xspace_importer.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using trace::Category;
using trace::Collective;

const std::string kXplane = SharedTestData("xla/tpu_inference_2.xplane.pb");

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

// Picoseconds as trace-viewer microseconds with six decimals (exact).
std::string Micros(int64_t ps) { return fmt::format("{}.{:06}", ps / 1000000, ps % 1000000); }

// Writes devices as xprof's trace viewer exports them: one pid per device named by a
// process_name event, one tid per line named by thread_name, X events named by the display
// name with the HLO text in args.long_name and every stat as a string arg, then "{}".
std::string ToTraceViewerJson(const std::vector<XlaDevice>& devices) {
  std::string out = R"({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)";
  for (size_t d = 0; d < devices.size(); ++d) {
    const int pid = 1001 + static_cast<int>(d);
    out += fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}},)", pid,
                       Quote(devices[d].name));
    out += fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}},)", pid, d);
    for (size_t l = 0; l < devices[d].lines.size(); ++l) {
      const XlaLine& line = devices[d].lines[l];
      out += fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}},)", pid,
          l + 1, Quote(line.name));
      for (const XlaEvent& e : line.events) {
        std::string args;
        if (!e.long_name.empty()) args += "\"long_name\":" + Quote(e.long_name);
        for (const auto& [k, v] : e.stats) {
          args += fmt::format("{}{}:{}", args.empty() ? "" : ",", Quote(k), Quote(v));
        }
        out += fmt::format(
            R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"args":{{{}}}}},)", pid,
            l + 1, Micros(e.base_ns * 1000 + e.offset_ps), Micros(e.duration_ps), Quote(e.name),
            args);
      }
    }
  }
  return out + "{}]}";
}

void WriteGzip(const std::string& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, content.data(), static_cast<unsigned>(content.size())),
            static_cast<int>(content.size()));
  gzclose(f);
}

StatusOr<trace::ReadStats> ImportText(const std::string& json, trace::Trace* t) {
  testing::ScratchDir dir;
  std::string path = dir.File("t.trace.json");
  trace::WriteFile(path, json);
  trace::TraceBuilder builder(t);
  return ImportXlaJson(path, &builder);
}

TEST(XlaJsonImporterTest, MicrosToNsAndPs) {
  int64_t ns = 0, ps = 0;
  ASSERT_TRUE(ParseMicrosToNsPs("12.3456789", &ns, &ps));  // the 7th decimal rounds the ps
  EXPECT_EQ(ns, 12345);
  EXPECT_EQ(ps, 679);
  ASSERT_TRUE(ParseMicrosToNsPs("7495498.089000", &ns, &ps));
  EXPECT_EQ(ns, 7495498089);
  EXPECT_EQ(ps, 0);
  ASSERT_TRUE(ParseMicrosToNsPs("5", &ns, &ps));
  EXPECT_EQ(ns, 5000);
  ASSERT_TRUE(ParseMicrosToNsPs("-0.0005", &ns, &ps));  // −0.5 ns = −1 ns + 500 ps
  EXPECT_EQ(ns, -1);
  EXPECT_EQ(ps, 500);
  ASSERT_TRUE(ParseMicrosToNsPs("1.5e3", &ns, &ps));
  EXPECT_EQ(ns, 1500000);
  EXPECT_EQ(ps, 0);
  ASSERT_TRUE(ParseMicrosToNsPs("1741722099081044.120", &ns, &ps));  // epoch µs
  EXPECT_EQ(ns, 1741722099081044120);
  EXPECT_FALSE(ParseMicrosToNsPs("abc", &ns, &ps));
  EXPECT_FALSE(ParseMicrosToNsPs("1.", &ns, &ps));
  EXPECT_FALSE(ParseMicrosToNsPs("", &ns, &ps));
}

TEST(XlaJsonImporterTest, SyntheticTraceViewerFile) {
  const std::string json = R"({"displayTimeUnit":"ns","traceEvents":[
{"ph":"M","pid":7,"name":"process_name","args":{"name":"/device:TPU:2"}},
{"ph":"M","pid":"8","name":"process_name","args":{"name":"/host:CPU"}},
{"ph":"M","pid":7,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},
{"ph":"M","pid":7,"tid":5,"name":"thread_name","args":{"name":"Steps"}},
{"ph":"X","pid":7,"tid":3,"ts":10.0005,"dur":2,"name":"fusion.1","args":{"long_name":"%fusion.1 = f32[8]{0} fusion(f32[8]{0} %p), kind=kLoop","flops":1024,"bytes_accessed":"64","hlo_category":"loop fusion"}},
{"ph":"X","pid":7,"tid":3,"ts":13,"dur":4.25,"name":"all-gather","args":{"long_name":"%all-gather = f32[16]{0} all-gather(f32[4]{0} %q), replica_groups={{0,2,4,6}}, dimensions={0}"}},
{"ph":"X","pid":7,"tid":5,"ts":10,"dur":20,"name":"3"},
{"ph":"X","pid":7,"tid":9,"ts":10,"dur":20,"name":"unnamed thread"},
{"ph":"X","pid":8,"tid":1,"ts":10,"dur":20,"name":"host work"},
{"ph":"X","pid":7,"tid":3,"ts":"late","dur":1,"name":"bad ts"},
{"ph":"X","pid":7,"tid":3,"ts":1,"name":"no dur"},
{"ph":"X","pid":7,"tid":3,"ts":1,"dur":-1,"name":"negative"},
{"ph":"i","pid":7,"tid":3,"ts":1,"name":"instant"},
42,
{}]})";
  trace::Trace t;
  auto stats = ImportText(json, &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(t.ops.size(), 2u);
  const trace::OpEvent& fusion = t.ops[0];
  EXPECT_EQ(fusion.rank, 2);
  EXPECT_EQ(fusion.ts_ns, 10001);  // 10.0005 µs = 10000 ns + 500 ps: halves up
  EXPECT_EQ(fusion.dur_ns, 2000);
  EXPECT_EQ(fusion.flops, 1024);  // a number arg
  EXPECT_EQ(fusion.bytes_read, 64);
  EXPECT_EQ(fusion.category, Category::kCompute);
  const trace::OpEvent& ag = t.ops[1];
  EXPECT_EQ(ag.collective, Collective::kAllGather);
  EXPECT_EQ(ag.group, (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_EQ(ag.bytes, 4 * 4 * 4);
  EXPECT_EQ(ag.dur_ns, 4250);
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.spans[0].step, 3);
  EXPECT_EQ(t.process_names.at(2), "/device:TPU:2");
  EXPECT_EQ(stats->skipped.at("X event without a numeric ts"), 1);
  EXPECT_EQ(stats->skipped.at("X event without a numeric dur"), 1);
  EXPECT_EQ(stats->skipped.at("X event with a negative dur"), 1);
  EXPECT_EQ(stats->skipped.at("event is not a JSON object"), 1);
  EXPECT_EQ(stats->ignored.at("ph \"i\""), 1);
  EXPECT_EQ(stats->ignored.at("XLA process \"/host:CPU\""), 1);
  EXPECT_EQ(stats->ignored.at("XLA line \"tid 9\""), 1);
  EXPECT_EQ(stats->events, 14);  // every element but the trailing {}
}

// Ids follow trace/json_value.h as in every other format: integral numbers,
// also written as strings, are integers; fractions are not.
TEST(XlaJsonImporterTest, IdsAreIntegersByTheSharedRule) {
  const std::string json = R"({"traceEvents":[
{"ph":"M","pid":7.0,"name":"process_name","args":{"name":"/device:TPU:0"}},
{"ph":"M","pid":7,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},
{"ph":"X","pid":"7","tid":3e0,"ts":1,"dur":2,"name":"fusion.1"},
{"ph":"X","pid":7,"tid":"3.0","ts":4,"dur":2,"name":"fusion.2"},
{"ph":"X","pid":7.5,"tid":3,"ts":7,"dur":2,"name":"fractional pid"}]})";
  trace::Trace t;
  auto stats = ImportText(json, &t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].name, "fusion.1");
  EXPECT_EQ(t.ops[1].stream, t.ops[0].stream);  // the same line
  EXPECT_EQ(stats->skipped.at("X event without an integer pid/tid"), 1);
}

TEST(XlaJsonImporterTest, BadFilesAreClearErrors) {
  trace::Trace t;
  auto cut =
      ImportText(R"({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"na)", &t);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss) << cut.status().ToString();
  EXPECT_NE(cut.status().message().find("t.trace.json: truncated JSON"), std::string::npos)
      << cut.status().message();
  // Cut between events: the array never closes.
  auto cut_array = ImportText(R"({"traceEvents":[{"ph":"X","pid":1,"ts":1,"dur":2},)", &t);
  ASSERT_FALSE(cut_array.ok());
  EXPECT_EQ(cut_array.status().code(), StatusCode::kDataLoss) << cut_array.status().ToString();
  EXPECT_NE(cut_array.status().message().find("truncated JSON"), std::string::npos);
  auto text = ImportText("hello", &t);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  auto no_events = ImportText(R"({"displayTimeUnit":"ns"})", &t);
  ASSERT_FALSE(no_events.ok());
  EXPECT_NE(no_events.status().message().find("no \"traceEvents\""), std::string::npos);
  auto no_device = ImportText(
      R"([{"ph":"M","pid":1,"name":"process_name","args":{"name":"/host:CPU"}},{}])", &t);
  ASSERT_FALSE(no_device.ok());
  EXPECT_NE(no_device.status().message().find("no process named /device:TPU:N"), std::string::npos);
  auto empty = ImportText("", &t);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty file"), std::string::npos);
}

// The real XSpace written as xprof's trace-viewer JSON (gzipped) imports to the same ops,
// spans and names as the XSpace itself.
TEST(XlaJsonImporterTest, RealXplaneAsTraceViewerJsonMatchesXspace) {
  SHARDSCOPE_NEED_SHARED_DATA(kXplane);
  if (!XspaceImporterBuilt()) GTEST_SKIP() << "built without protobuf";
  trace::ReadStats decode_stats;
  std::string data = trace::ReadWholeFile(kXplane);
  auto devices = DecodeXspace(data, kXplane, &decode_stats);
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  testing::ScratchDir dir;
  std::string path = dir.File("tpu.trace.json.gz");
  WriteGzip(path, ToTraceViewerJson(*devices));

  trace::Trace from_xspace, from_json;
  trace::TraceBuilder xb(&from_xspace), jb(&from_json);
  auto xs = ImportXspace(kXplane, &xb);
  auto js = ImportXlaJson(path, &jb);
  ASSERT_TRUE(xs.ok()) << xs.status().ToString();
  ASSERT_TRUE(js.ok()) << js.status().ToString();
  EXPECT_TRUE(js->skipped.empty());
  EXPECT_EQ(js->ops, xs->ops);
  ASSERT_EQ(from_json.ops.size(), from_xspace.ops.size());
  for (size_t i = 0; i < from_json.ops.size(); ++i) {
    ASSERT_EQ(from_json.ops[i], from_xspace.ops[i]) << "op " << i << ": " << from_json.ops[i].name;
  }
  EXPECT_EQ(from_json.spans, from_xspace.spans);
  EXPECT_EQ(from_json.process_names, from_xspace.process_names);
  EXPECT_EQ(from_json.thread_names, from_xspace.thread_names);
  EXPECT_EQ(js->ignored.at("XLA line \"XLA Modules\""), 414);  // as in the XSpace
}

}  // namespace
}  // namespace shardscope::importers
