#include "analysis/analyzer.h"

#include <gtest/gtest.h>

#include "trace/test_util.h"
#include "trace/trace_writer.h"

namespace shardscope::analysis {
namespace {

using trace::ScratchDir;
using trace::WriteFile;

TEST(AnalyzerTest, BadFilesAreClearErrors) {
  ScratchDir dir;
  WriteFile(dir.File("empty.json"), "");
  WriteFile(dir.File("text.json"), "not json at all");
  WriteFile(dir.File("cut.json"), R"({"traceEvents":[{"ph":"X","pid":0,"ts":1,"du)");
  auto empty = AnalyzeTraceFile(dir.File("empty.json"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty.json: empty file"), std::string::npos);
  auto text = AnalyzeTraceFile(dir.File("text.json"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  auto cut = AnalyzeTraceFile(dir.File("cut.json"));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cut.status().message().find("truncated at byte 44: the event starting at byte 16"),
            std::string::npos)
      << cut.status().message();
  EXPECT_EQ(AnalyzeTraceFile(dir.File("missing.json")).status().code(), StatusCode::kNotFound);
}

TEST(AnalyzerTest, StoreSidecarMetadataIsUsed) {
  ScratchDir dir;
  trace::Trace t;
  trace::OpEvent op;
  op.dur_ns = 1000;
  op.phase = trace::Phase::kPrefill;
  t.ops.push_back(op);
  std::string path = dir.File("trace_20261121T000000.000000.trace");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  WriteFile(dir.File("metadata_20261121T000000.000000.json"),
            R"({"workload":{"batch_size":2,"sequence_length":500}})");
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE(r->metrics.Find("tps"), nullptr);
  ASSERT_TRUE(r->metrics.Find("tps")->value.has_value());
  EXPECT_DOUBLE_EQ(*r->metrics.Find("tps")->value, 1000 / 1e-6);
}

TEST(AnalyzerTest, EmptyTraceHasNoWallTime) {
  RunData data;
  MetricSet m = ComputeMetrics(&data);
  ASSERT_NE(m.Find("wall_time"), nullptr);
  EXPECT_FALSE(m.Find("wall_time")->value.has_value());
}

TEST(AnalyzerTest, FindTraceFilesWalksDirectoriesAndSkipsMetadata) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.File("m/s/batch_1_seq_2"));
  WriteFile(dir.File("m/s/batch_1_seq_2/trace_1.trace"), "{}");
  WriteFile(dir.File("m/s/batch_1_seq_2/metadata_1.json"), "{}");
  auto files = FindTraceFiles({dir.path()});
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_NE((*files)[0].find("trace_1.trace"), std::string::npos);
  EXPECT_EQ(FindTraceFiles({dir.File("nope")}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace shardscope::analysis
