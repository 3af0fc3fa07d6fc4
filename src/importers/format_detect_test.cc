#include "importers/format_detect.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "importers/test_traces.h"
#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_writer.h"

namespace shardscope::importers {
namespace {

using testing::ScratchDir;
using trace::WriteFile;

const std::string kTestData = SharedTestData("");

TEST(FormatDetectTest, NamesRoundTrip) {
  for (TraceFormat f :
       {TraceFormat::kShardScope, TraceFormat::kKineto, TraceFormat::kXlaJson, TraceFormat::kXspace,
        TraceFormat::kNcclProfiler, TraceFormat::kNcclProfilerJsonl}) {
    auto parsed = ParseTraceFormat(TraceFormatName(f));
    ASSERT_TRUE(parsed.ok()) << TraceFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  auto bad = ParseTraceFormat("perfetto");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown trace format 'perfetto' (one of: shardscope, kineto, xla, xspace, "
            "nccl-profiler, nccl-profiler-jsonl)");
  EXPECT_EQ(TraceFormatName(TraceFormat::kXlaJson), "xla");  // the names JSON output carries
  EXPECT_EQ(TraceFormatName(TraceFormat::kNcclProfiler), "nccl-profiler");
}

TEST(FormatDetectTest, HeadsOfEachFormat) {
  auto detect = [](std::string_view head, const std::string& name = "t.json") {
    return DetectFormatOfHead(head, name);
  };
  // Ours, as the writer starts it, and any Chrome trace.
  EXPECT_EQ(*detect(R"({"displayTimeUnit":"ns","otherData":{"shardscope":{"version":"0.1"}},)"
                    R"("traceEvents":[)"),
            TraceFormat::kShardScope);
  EXPECT_EQ(*detect(R"({"traceEvents":[{"ph":"X","pid":0,"ts":1,"dur":2,"name":"a"}]})"),
            TraceFormat::kShardScope);
  EXPECT_EQ(*detect(R"([{"ph":"X","pid":0,"ts":1,"dur":2,"name":"a"})"), TraceFormat::kShardScope);
  // Kineto by its top-level keys, or by its categories alone.
  EXPECT_EQ(*detect("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ["), TraceFormat::kKineto);
  EXPECT_EQ(*detect(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm"})"),
            TraceFormat::kKineto);
  // JAX / XLA trace-viewer JSON.
  EXPECT_EQ(*detect(R"({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)"
                    R"({"pid":1,"name":"process_name","ph":"M","args":{"name":"/device:TPU:0"}})"),
            TraceFormat::kXlaJson);
  // NCCL profiler plugin: an array of b/e events, unquoted values and all.
  EXPECT_EQ(
      *detect("[\n{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"b\", \"id\": 0, "
              "\"args\": {\"Stream\": 0x262ca50}},\n"),
      TraceFormat::kNcclProfiler);
  // Its JSONL sibling.
  EXPECT_EQ(*detect("{\"type\":\"ProfilerLifecycle\",\"rank\":2}\n{\"type\":\"ncclProfileColl\"}\n",
                    "t.jsonl"),
            TraceFormat::kNcclProfilerJsonl);
  // XSpace: a protobuf whose first plane is named.
  std::string xspace("\x0a\xa7\xf4\x06\x08\x02\x12\x0d/device:TPU:0\x1a", 22);
  EXPECT_EQ(*detect(xspace, "t.xplane.pb"), TraceFormat::kXspace);
}

TEST(FormatDetectTest, UnknownAndEmptyAreClearErrors) {
  auto text = DetectFormatOfHead("hello, world", "notes.txt");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("notes.txt: unknown trace format"), std::string::npos);
  EXPECT_NE(text.status().message().find("tried: "), std::string::npos);
  EXPECT_NE(text.status().message().find("Kineto"), std::string::npos);
  auto json = DetectFormatOfHead(R"({"model": "llama"})", "config.json");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(
      json.status().message().find("config.json: unknown trace format: a JSON object without"),
      std::string::npos);
  auto lines = DetectFormatOfHead("{\"a\":1}\n{\"a\":2}\n", "log.jsonl");
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("JSON lines"), std::string::npos);
  auto empty = DetectFormatOfHead("  \n", "e.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("e.json: empty file"), std::string::npos);
  std::string junk("\x01\x02\x03\x00\x05", 5);
  EXPECT_FALSE(DetectFormatOfHead(junk, "j.bin").ok());
}

TEST(FormatDetectTest, FilesOnDiskGzipToo) {
  ScratchDir dir;
  trace::Trace t;
  t.ops.push_back({});
  ASSERT_TRUE(trace::WriteTrace(t, dir.File("ours.json.gz")).ok());
  auto ours = DetectFormat(dir.File("ours.json.gz"));
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  EXPECT_EQ(*ours, TraceFormat::kShardScope);
  EXPECT_EQ(DetectFormat(dir.File("missing.json")).status().code(), StatusCode::kNotFound);
  WriteFile(dir.File("empty.json"), "");
  EXPECT_EQ(DetectFormat(dir.File("empty.json")).status().code(), StatusCode::kInvalidArgument);
}

TEST(FormatDetectTest, RealFiles) {
  SHARDSCOPE_NEED_SHARED_DATA(kTestData);
  struct Case {
    const char* file;
    TraceFormat format;
  };
  for (const Case& c : {
           Case{"kineto/nccl_data.json.gz", TraceFormat::kKineto},
           Case{"kineto/rank0.json.gz", TraceFormat::kKineto},
           Case{"kineto/resnet_act_checkpoint.json.gz", TraceFormat::kKineto},
           Case{"kineto/graph_execution.json.gz", TraceFormat::kKineto},
           Case{"kineto/sglang_Qwen3-8B_decode.json.gz", TraceFormat::kKineto},
           Case{"kineto/param_dlrm_8rank/worker3_step_12.1694128201557.pt.trace.json",
                TraceFormat::kKineto},
           Case{"xla/tpu_inference_2.xplane.pb", TraceFormat::kXspace},
           Case{"nccl_profiler/"
                "nccl_example_plugin_point_to_point_1737594_12715772615376301750_1.json",
                TraceFormat::kNcclProfiler},
           Case{"nccl_profiler/minimal_plugin_allreduce_4rank_a.jsonl",
                TraceFormat::kNcclProfilerJsonl},
           Case{"nccl_profiler/minimal_plugin_allreduce_4rank_b.jsonl",
                TraceFormat::kNcclProfilerJsonl},
       }) {
    auto f = DetectFormat(kTestData + "/" + c.file);
    ASSERT_TRUE(f.ok()) << c.file << ": " << f.status().ToString();
    EXPECT_EQ(*f, c.format) << c.file << " detected as " << TraceFormatName(*f);
  }
}

}  // namespace
}  // namespace shardscope::importers
