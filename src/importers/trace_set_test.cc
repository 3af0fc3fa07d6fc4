#include "importers/trace_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/analyzer.h"
#include "trace/test_util.h"
#include "trace/trace_writer.h"

namespace shardscope::importers {
namespace {

using trace::ScratchDir;
using trace::WriteFile;

const std::string kDlrm =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/../shared/testdata/kineto/param_dlrm_8rank";
const std::string kExpected =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/src/importers/testdata/kineto_expected.json";

// One rank of a Kineto run: a 50 us kernel at 100 us, then an all-reduce over
// every rank that starts at 200 + 10 × rank us and ends at 300 us, all shifted
// by `shift_us` (a skewed clock); ProfilerStep#1 spans 50–400 us.
std::string KinetoRank(int rank, int world, int64_t shift_us = 0) {
  std::string ranks;
  for (int r = 0; r < world; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  int64_t t0 = 1'000'000 + shift_us;
  return fmt::format(
      R"({{"schemaVersion": 1, "distributedInfo": {{"rank": {0}, "world_size": {1}}},
"traceEvents": [
{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": {2}, "dur": 350}},
{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": {0}, "tid": 7, "ts": {3}, "dur": 50}},
{{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": {0}, "tid": 20, "ts": {4}, "dur": {5},
  "args": {{"Collective name": "allreduce", "In msg nelems": 1024, "Group size": {1}, "dtype": "Float", "Process Group Ranks": "[{6}]"}}}}
]}})",
      rank, world, t0 + 50, t0 + 100, t0 + 200 + 10 * rank, 100 - 10 * rank, ranks);
}

TEST(TraceSetTest, MissingRankIsReportedAndTheRestAnalysed) {
  ScratchDir dir;
  std::vector<std::string> paths;
  for (int r : {0, 1, 3}) {
    paths.push_back(dir.File(fmt::format("rank{}.json", r)));
    WriteFile(paths.back(), KinetoRank(r, 4));
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
  // The analyzer: metrics over three ranks, rank 2 named as missing.
  auto r = analysis::AnalyzeTraceSet(paths);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->metrics.Find("ranks")->value, 3);
  EXPECT_EQ(*r->metrics.Find("missing_ranks")->value, 1);
  const analysis::Metric* missing = r->metrics.Find("busy_time[rank 2]");
  ASSERT_NE(missing, nullptr);
  EXPECT_FALSE(missing->value.has_value());
  EXPECT_NE(missing->unavailable.find("no trace file for rank 2"), std::string::npos);
  // Waits at collectives with rank 2 cannot be known: not available rather than 0.
  EXPECT_FALSE(r->metrics.Find("sync_wait.max")->value.has_value());
  EXPECT_FALSE(r->metrics.Find("sync_wait[rank 0]")->value.has_value());
  // Rank 3: the kernel (50 us) and the all-reduce from 230 to 300 us.
  EXPECT_NEAR(*r->metrics.Find("busy_time[rank 3]")->value, 120e-6, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("comm_time[rank 3]")->value, 70e-6, 1e-15);
  EXPECT_EQ(r->trace_path, dir.path() + " (3 files)");
  EXPECT_EQ(r->warnings, set->warnings);
}

TEST(TraceSetTest, DuplicateRankAndDisagreeingWorldSizesAreErrors) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRank(0, 2));
  WriteFile(dir.File("b.json"), KinetoRank(0, 2));
  WriteFile(dir.File("c.json"), KinetoRank(1, 4));
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
  WriteFile(dir.File("r0.json"), KinetoRank(0, 2));
  WriteFile(dir.File("r1.json"), KinetoRank(1, 2, /*shift_us=*/5000));
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
    if (op.rank == 1 && op.name == "gemm") EXPECT_EQ(op.ts_ns, 1'000'100'000);
    if (op.is_comm()) EXPECT_EQ(op.end_ns(), 1'000'300'000);
  }
  for (const trace::SpanEvent& s : aligned.spans) EXPECT_EQ(s.ts_ns, 1'000'050'000);
  EXPECT_EQ(aligned.metadata["trace_set"]["clock_shift_ns"]["1"], -5'000'000);
  // The analyzer's sync wait follows: rank 0 arrives 10 us before rank 1 once aligned.
  analysis::AnalyzeOptions aopt;
  aopt.alignment = ClockAlignment::kFirstCollectiveEnd;
  auto r = analysis::AnalyzeTraceSet(paths, aopt);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(*r->metrics.Find("sync_wait[rank 0]")->value, 10e-6, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("clock_spread")->value, 5e-3, 1e-15);
}

TEST(TraceSetTest, GroupingKeepsStoreTracesApartAndJoinsOneWorld) {
  ScratchDir dir;
  WriteFile(dir.File("a.json"), KinetoRank(0, 2));
  WriteFile(dir.File("b.json"), KinetoRank(1, 2));
  WriteFile(dir.File("single.json"), KinetoRank(0, 1));
  WriteFile(dir.File("other_world.json"), KinetoRank(0, 4));
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
  // The whole directory through the analyzer: five runs (the two-rank set is one).
  auto results = analysis::AnalyzePaths({dir.path()});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(results->size(), 5u);
}

TEST(TraceSetTest, DlrmEightRankSet) {
  if (!std::filesystem::exists(kDlrm)) {
    GTEST_SKIP() << "no Kineto test data at " << kDlrm << " (../shared is absent)";
  }
  std::ifstream in(kExpected);
  ASSERT_TRUE(in) << kExpected;
  nlohmann::json want = nlohmann::json::parse(in)["sets"]["param_dlrm_8rank"];
  auto files = analysis::FindTraceFiles({kDlrm});
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 8u);
  auto runs = GroupTraceFiles(*files, std::nullopt);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);  // one world of 8
  auto r = analysis::AnalyzeTraceSet((*runs)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(*r->metrics.Find("ranks")->value, 8);
  EXPECT_EQ(*r->metrics.Find("missing_ranks")->value, 0);
  EXPECT_NEAR(*r->metrics.Find("clock_spread")->value,
              want["collective_end_spread_ns"].get<int64_t>() * 1e-9, 1e-15);
  EXPECT_NEAR(*r->metrics.Find("busy_time.max")->value, want["busy_ns_max"].get<int64_t>() * 1e-9,
              1e-12);
  EXPECT_NEAR(*r->metrics.Find("comm_time.mean")->value * 8,
              want["comm_ns_sum"].get<int64_t>() * 1e-9, 1e-12);
  EXPECT_EQ(r->format, "kineto");
}

}  // namespace
}  // namespace shardscope::importers
