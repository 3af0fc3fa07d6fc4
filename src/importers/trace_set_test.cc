#include "importers/trace_set.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "importers/test_traces.h"
#include "trace/test_util.h"
#include "trace/trace_writer.h"

namespace shardscope::importers {
namespace {

using trace::ScratchDir;
using trace::WriteFile;

TEST(TraceSetTest, MissingRankIsReportedAndTheRestAnalysed) {
  ScratchDir dir;
  std::vector<std::string> paths;
  for (int r : {0, 1, 3}) {
    paths.push_back(dir.File(fmt::format("rank{}.json", r)));
    WriteFile(paths.back(), KinetoRankTrace(r, 4));
  }
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto set = ImportTraceSet(paths, {}, &builder);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->ranks, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(set->world_size, 4);
  EXPECT_EQ(set->missing_ranks, std::vector<int32_t>{2});
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_NE(set->warnings[0].find("no trace for rank 2 (1 of 4 ranks missing)"), std::string::npos)
      << set->warnings[0];
  EXPECT_EQ(t.metadata["trace_set"]["missing_ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(t.metadata["world_size"], 4);
  EXPECT_EQ(t.ops.size(), 6u);
  EXPECT_EQ(set->stats.ops, 6);
}

TEST(TraceSetTest, DuplicateRankAndDisagreeingWorldSizesAreErrors) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("c.json"), KinetoRankTrace(1, 4));
  trace::Trace t;
  trace::TraceBuilder builder(&t);
  auto dup = ImportTraceSet({dir.File("a.json"), dir.File("b.json")}, {}, &builder);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find(dir.File("a.json") + " and " + dir.File("b.json") +
                                        ": both are rank 0"),
            std::string::npos)
      << dup.status().message();
  EXPECT_TRUE(t.ops.empty());  // found before any file was read in full
  auto world = ImportTraceSet({dir.File("a.json"), dir.File("c.json")}, {}, &builder);
  ASSERT_FALSE(world.ok());
  EXPECT_NE(world.status().message().find("world size 4, but " + dir.File("a.json") + " says 2"),
            std::string::npos)
      << world.status().message();
}

TEST(TraceSetTest, ClocksAsRecordedOrAlignedOnTheFirstCollectiveEnd) {
  ScratchDir dir;
  WriteFile(dir.File("r0.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("r1.json"), KinetoRankTrace(1, 2, /*shift_us=*/5000));
  std::vector<std::string> paths = {dir.File("r0.json"), dir.File("r1.json")};
  trace::Trace recorded;
  trace::TraceBuilder recorded_builder(&recorded);
  auto as_recorded = ImportTraceSet(paths, {}, &recorded_builder);
  ASSERT_TRUE(as_recorded.ok()) << as_recorded.status().ToString();
  ASSERT_TRUE(as_recorded->collective_end_spread_ns.has_value());
  EXPECT_EQ(*as_recorded->collective_end_spread_ns, 5'000'000);
  EXPECT_TRUE(as_recorded->clock_shift_ns.empty());
  ASSERT_EQ(as_recorded->warnings.size(), 1u);
  EXPECT_NE(as_recorded->warnings[0].find("differs by 5000.0 us"), std::string::npos)
      << as_recorded->warnings[0];
  TraceSetOptions options;
  options.alignment = ClockAlignment::kFirstCollectiveEnd;
  trace::Trace aligned;
  trace::TraceBuilder aligned_builder(&aligned);
  auto al = ImportTraceSet(paths, options, &aligned_builder);
  ASSERT_TRUE(al.ok()) << al.status().ToString();
  EXPECT_EQ(al->clock_shift_ns.at(0), 0);
  EXPECT_EQ(al->clock_shift_ns.at(1), -5'000'000);
  EXPECT_TRUE(al->warnings.empty());
  ASSERT_EQ(aligned.ops.size(), 4u);
  for (const trace::OpEvent& op : aligned.ops) {
    if (op.rank == 1 && op.name == "gemm") {
      EXPECT_EQ(op.ts_ns, 1'000'100'000);
    }
    if (op.is_comm()) {
      EXPECT_EQ(op.end_ns(), 1'000'300'000);
    }
  }
  for (const trace::SpanEvent& s : aligned.spans) EXPECT_EQ(s.ts_ns, 1'000'050'000);
  EXPECT_EQ(aligned.metadata["trace_set"]["clock_shift_ns"]["1"], -5'000'000);
}

TEST(TraceSetTest, GroupingKeepsStoreTracesApartAndJoinsOneWorld) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRankTrace(0, 2));
  WriteFile(dir.File("b.json"), KinetoRankTrace(1, 2));
  WriteFile(dir.File("single.json"), KinetoRankTrace(0, 1));
  WriteFile(dir.File("other_world.json"), KinetoRankTrace(0, 4));
  trace::Trace ours;
  ours.ops.push_back({});
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours.json")).ok());
  ASSERT_TRUE(trace::WriteTrace(ours, dir.File("ours2.json")).ok());
  auto runs =
      GroupTraceFiles({dir.File("a.json"), dir.File("ours.json"), dir.File("single.json"),
                       dir.File("b.json"), dir.File("other_world.json"), dir.File("ours2.json")},
                      std::nullopt);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  std::vector<std::vector<std::string>> want = {{dir.File("a.json"), dir.File("b.json")},
                                                {dir.File("ours.json")},
                                                {dir.File("single.json")},
                                                {dir.File("other_world.json")},
                                                {dir.File("ours2.json")}};
  EXPECT_EQ(*runs, want);
}

}  // namespace
}  // namespace shardscope::importers
